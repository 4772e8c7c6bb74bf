"""Resource types the emulator serves, Status bodies, and API discovery documents."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]

REASONS = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    409: "Conflict",
    410: "Expired",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


@dataclasses.dataclass(frozen=True)
class ResourceType:
    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    singular: str = ""
    short_names: tuple[str, ...] = ()
    subresources: tuple[str, ...] = ("status",)

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def key(self) -> tuple[str, str]:
        return (self.group, self.plural)

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"


def _rt(
    group: str,
    plural: str,
    kind: str,
    namespaced: bool,
    short: tuple[str, ...] = (),
    sub: tuple[str, ...] = ("status",),
    version: str = "v1",
) -> ResourceType:
    return ResourceType(group, version, plural, kind, namespaced, kind.lower(), short, sub)


BUILTIN_RESOURCES: tuple[ResourceType, ...] = (
    _rt("", "namespaces", "Namespace", False, ("ns",), ("status", "finalize")),
    _rt("", "nodes", "Node", False, ("no",)),
    _rt("", "pods", "Pod", True, ("po",), ("status", "binding", "log", "eviction")),
    _rt("", "configmaps", "ConfigMap", True, ("cm",), ()),
    _rt("", "secrets", "Secret", True, (), ()),
    _rt("", "services", "Service", True, ("svc",)),
    _rt("", "serviceaccounts", "ServiceAccount", True, ("sa",), ()),
    _rt("", "events", "Event", True, ("ev",), ()),
    _rt("", "resourcequotas", "ResourceQuota", True, ("quota",)),
    _rt("", "limitranges", "LimitRange", True, ("limits",), ()),
    _rt("", "persistentvolumeclaims", "PersistentVolumeClaim", True, ("pvc",)),
    _rt("apps", "deployments", "Deployment", True, ("deploy",)),
    _rt("batch", "jobs", "Job", True),
    _rt("scheduling.k8s.io", "priorityclasses", "PriorityClass", False, ("pc",), ()),
    _rt("policy", "poddisruptionbudgets", "PodDisruptionBudget", True, ("pdb",)),
)


class ApiError(Exception):
    """An error answered as a Kubernetes ``Status`` body."""

    def __init__(
        self,
        code: int,
        message: str,
        reason: str | None = None,
        details: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.reason = reason or REASONS.get(code, "Unknown")
        self.details = details
        self.headers = headers or {}

    def status(self) -> dict[str, Any]:
        return status_body(self.code, self.message, self.reason, self.details)


def status_body(
    code: int, message: str = "", reason: str | None = None, details: dict[str, Any] | None = None
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success" if code < 400 else "Failure",
        "message": message,
        "reason": reason or REASONS.get(code, ""),
        "code": code,
    }
    if code < 400:
        body.pop("reason")
        body.pop("message")
    if details:
        body["details"] = details
    return body


def not_found(rt: ResourceType, name: str) -> ApiError:
    kind_plural = f"{rt.plural}.{rt.group}" if rt.group else rt.plural
    return ApiError(
        404, f'{kind_plural} "{name}" not found', "NotFound", {"name": name, "group": rt.group, "kind": rt.plural}
    )


def version_info(git_version: str) -> dict[str, str]:
    major, minor = git_version.lstrip("v").split(".")[:2]
    return {
        "major": major,
        "minor": minor,
        "emulationMajor": major,
        "emulationMinor": minor,
        "minCompatibilityMajor": major,
        "minCompatibilityMinor": str(max(int(minor) - 1, 0)),
        "gitVersion": git_version,
        "gitCommit": "0" * 40,
        "gitTreeState": "clean",
        "buildDate": "2025-04-23T00:00:00Z",
        "goVersion": "go1.24.2",
        "compiler": "gc",
        "platform": "linux/amd64",
    }


def resource_list(group: str, version: str, types: Iterable[ResourceType]) -> dict[str, Any]:
    resources = []
    for rt in sorted(types, key=lambda r: r.plural):
        resources.append(
            {
                "name": rt.plural,
                "singularName": rt.singular,
                "namespaced": rt.namespaced,
                "kind": rt.kind,
                "verbs": list(VERBS),
                "shortNames": list(rt.short_names),
                "storageVersionHash": "",
            }
        )
        for sub in rt.subresources:
            kind, verbs = rt.kind, ["get", "patch", "update"]
            if sub == "binding":
                kind, verbs = "Binding", ["create"]
            elif sub == "log":
                kind, verbs = "Pod", ["get"]
            elif sub == "eviction":
                kind, verbs = "Eviction", ["create"]
            elif sub == "finalize":
                verbs = ["update"]
            resources.append(
                {
                    "name": f"{rt.plural}/{sub}",
                    "singularName": "",
                    "namespaced": rt.namespaced,
                    "kind": kind,
                    "verbs": verbs,
                }
            )
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group}/{version}" if group else version,
        "resources": resources,
    }


def api_group(group: str, versions: list[str]) -> dict[str, Any]:
    gvs = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
    return {"kind": "APIGroup", "apiVersion": "v1", "name": group, "versions": gvs, "preferredVersion": gvs[0]}


def group_versions(types: Iterable[ResourceType]) -> dict[str, list[str]]:
    """Non-core groups with their versions, in registration order."""
    out: dict[str, list[str]] = {}
    for rt in types:
        if rt.group and rt.version not in out.setdefault(rt.group, []):
            out[rt.group].append(rt.version)
    return out
