"""'Test connection': can the portal reach the cluster, which version is it, may it do its job?

The portal needs: list + watch nodes and pods (all namespaces) for the inventory, and get, create
and delete pods in the backend's workload namespace for workflows. Permissions are asked with
SelfSubjectAccessReview when the server offers it; otherwise (an emulator, an old or locked-down
server) each verb is probed: reads for real (limit=1), writes with `dryRun=All` on a probe name,
cleaned up if the server ignored dryRun.
"""

from __future__ import annotations

import contextlib
import uuid
from dataclasses import dataclass, field

from kubernetes import client

from clusters.kube.connection import KubeClient
from clusters.kube.errors import KubeError, from_exception

PROBE_LABEL = "pool-portal/probe"
CLUSTER_CHECKS = (("list", "nodes"), ("watch", "nodes"), ("list", "pods"), ("watch", "pods"))
NAMESPACE_CHECKS = (("get", "pods"), ("create", "pods"), ("delete", "pods"))


@dataclass
class Check:
    verb: str
    resource: str
    namespace: str  # "" = all namespaces / cluster scope
    allowed: bool | None  # None: could not tell
    detail: str = ""

    @property
    def scope(self) -> str:
        if self.namespace:
            return f"in namespace {self.namespace}"
        return "(all namespaces)" if self.resource == "pods" else "(cluster)"

    def as_dict(self) -> dict:
        return {
            "verb": self.verb,
            "resource": self.resource,
            "namespace": self.namespace,
            "allowed": self.allowed,
            "detail": self.detail,
        }


@dataclass
class ConnectionReport:
    backend: str
    host: str
    version: str = ""
    platform: str = ""
    method: str = ""  # how permissions were checked
    checks: list[Check] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(check.allowed for check in self.checks)

    def as_dict(self) -> dict:
        return {
            "backend": self.backend,
            "host": self.host,
            "version": self.version,
            "platform": self.platform,
            "method": self.method,
            "ok": self.ok,
            "checks": [c.as_dict() for c in self.checks],
            "warnings": list(self.warnings),
        }

    def lines(self) -> list[str]:
        lines = [
            f"backend {self.backend}: connected to {self.host}, Kubernetes {self.version} ({self.platform})",
            f"permissions ({self.method}):",
        ]
        for check in self.checks:
            mark = {True: "yes", False: "NO", None: "?"}[check.allowed]
            detail = f"  {check.detail}" if check.detail else ""
            lines.append(f"  {mark:<3} {check.verb} {check.resource} {check.scope}{detail}")
        lines += [f"warning: {warning}" for warning in self.warnings]
        missing = [f"{c.verb} {c.resource}" for c in self.checks if c.allowed is False]
        lines.append(
            "result: everything the portal needs is allowed"
            if self.ok
            else f"result: missing permissions: {', '.join(missing)}"
            if missing
            else "result: some permissions could not be checked"
        )
        return lines


def test_connection(kube: KubeClient, namespace: str, backend: str = "") -> ConnectionReport:
    """Raises KubeError (one line) when the server cannot be reached at all."""
    info = kube.version()
    report = ConnectionReport(
        backend or kube.name, kube.host, str(info.get("gitVersion", "?")), str(info.get("platform", ""))
    )
    wanted = [(verb, resource, "") for verb, resource in CLUSTER_CHECKS]
    wanted += [(verb, resource, namespace) for verb, resource in NAMESPACE_CHECKS]
    checks = _access_reviews(kube, wanted)
    if checks is not None:
        report.method, report.checks = "SelfSubjectAccessReview", checks
    else:
        report.method = "probes (the server has no SelfSubjectAccessReview)"
        report.checks = [_probe(kube, verb, resource, ns) for verb, resource, ns in wanted]
    _check_namespace(kube, namespace, report)
    return report


def _access_reviews(kube: KubeClient, wanted: list[tuple[str, str, str]]) -> list[Check] | None:
    api = client.AuthorizationV1Api(kube.api)
    checks = []
    for verb, resource, namespace in wanted:
        body = {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": {"verb": verb, "resource": resource, "group": "", "namespace": namespace}},
        }
        try:
            answer = kube.json("asking for permissions", api.create_self_subject_access_review, body)
        except KubeError as error:
            if error.k8s_status in (404, 405) and not checks:
                return None  # not offered: probe instead
            raise
        status = answer.get("status") or {}
        detail = status.get("reason") or status.get("evaluationError") or ""
        checks.append(Check(verb, resource, namespace, bool(status.get("allowed")), detail))
    return checks


def _probe(kube: KubeClient, verb: str, resource: str, namespace: str) -> Check:
    core = kube.core
    probe_name = f"pool-portal-probe-{uuid.uuid4().hex[:8]}"
    try:
        if verb == "list":
            method = core.list_node if resource == "nodes" else core.list_pod_for_all_namespaces
            kube.json(f"list {resource}", method, limit=1)
        elif verb == "watch":
            _probe_watch(kube, resource)
        elif verb == "get":
            return _expect_not_found(kube, verb, resource, namespace, core.read_namespaced_pod, probe_name, namespace)
        elif verb == "delete":
            return _expect_not_found(
                kube, verb, resource, namespace, core.delete_namespaced_pod, probe_name, namespace, dry_run="All"
            )
        elif verb == "create":
            _probe_create(kube, namespace, probe_name)
    except KubeError as error:
        return _denied_or_unknown(verb, resource, namespace, error)
    return Check(verb, resource, namespace, True)


def _probe_watch(kube: KubeClient, resource: str) -> None:
    method = kube.core.list_node if resource == "nodes" else kube.core.list_pod_for_all_namespaces
    response = kube.stream(
        f"watch {resource}", method, watch=True, timeout_seconds=1, limit=1, _request_timeout=(kube.timeout[0], 5)
    )
    with contextlib.suppress(Exception):
        response.shutdown()
        response.close()


def _probe_create(kube: KubeClient, namespace: str, name: str) -> None:
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {PROBE_LABEL: "true"}},
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {"name": "probe", "image": "registry.k8s.io/pause:3.10", "resources": {"requests": {"cpu": "1m"}}}
            ],
        },
    }
    try:
        kube.json("create pods", kube.core.create_namespaced_pod, namespace, body, dry_run="All")
    except KubeError as error:
        if error.k8s_status == 422:  # authorized; admission refused the probe body
            return
        raise
    # A server that ignores dryRun (an emulator) really created it: remove it again.
    with contextlib.suppress(KubeError):
        kube.json("cleaning up the probe pod", kube.core.delete_namespaced_pod, name, namespace)


def _expect_not_found(kube: KubeClient, verb: str, resource: str, namespace: str, method, *args, **kwargs) -> Check:
    try:
        kube.json(f"{verb} {resource}", method, *args, **kwargs)
    except KubeError as error:
        if error.k8s_status == 404:  # authorized; the probe object does not exist
            return Check(verb, resource, namespace, True)
        return _denied_or_unknown(verb, resource, namespace, error)
    return Check(verb, resource, namespace, True)


def _denied_or_unknown(verb: str, resource: str, namespace: str, error: KubeError) -> Check:
    if error.k8s_status in (401, 403):
        return Check(verb, resource, namespace, False, f"HTTP {error.k8s_status}")
    return Check(verb, resource, namespace, None, str(error))


def _check_namespace(kube: KubeClient, namespace: str, report: ConnectionReport) -> None:
    try:
        kube.json("reading the workload namespace", kube.core.read_namespace, namespace)
    except KubeError as error:
        if error.k8s_status == 404:
            report.warnings.append(f"the workload namespace {namespace} does not exist")
        elif error.k8s_status not in (401, 403):
            report.warnings.append(str(from_exception(error, "reading the workload namespace")))


def server_version(kube: KubeClient) -> str:
    """The server's version, the cheapest call that proves it answers (readiness). Raises KubeError."""
    return str(kube.version().get("gitVersion", "?"))
