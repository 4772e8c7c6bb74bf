"""A workflow's use of its submitter's credentials (docs/credentials.md), as OSMO's service does it
(NVIDIA/OSMO src/utils/job/task.py: `TaskGroup.get_kb_specs`, `_get_registry_creds`, `TaskSpec.to_pod_container`):

* REGISTRY: each task's image registry host (`docker.io` when the image names none) is matched against the
  submitter's REGISTRY credentials (their `registry`); the matches become one `kubernetes.io/dockerconfigjson`
  Secret `<workflow id>-registry` (auth = base64 of `username:auth`) that every pod names in `imagePullSecrets`.
* GENERIC and DATA, named by a task's `credentials:`: `{name: /dir}` mounts every key of the credential as a
  file of that directory; `{name: {ENV: key}}` sets ENV from that key. Their values go into one Opaque Secret
  `<workflow id>-credentials`, keys `<credential>.<key>`, which the pods reference.

At submission (`plan`) a missing credential, a key it does not have, or a REGISTRY credential named in
`credentials:` is refused with the field, the value and why; using credentials needs `credentials:Read` on
the submitter's own `credentials/<user>` (`access.policy`). What the pods need is recorded on the workflow
(`Workflow.credential_secrets`: names only); the Secrets are written with the values just before the pods are
created (`manifests`, `workflows.lifecycle.create`) and deleted when the workflow ends (`workflows.lifecycle.settle`).
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field

from access import actions, policy
from access.models import Credential, CredentialType
from access.services.credentials import image_registry, secret_values
from pools.engine import k8s_name
from portal.json_paths import iter_leaves, join_key
from workflows.errors import InvalidSpec

REGISTRY_KIND, GENERIC_KIND = "registry", "generic"
VOLUME_PREFIX = "credential-"


class MissingCredential(InvalidSpec):
    code = "credential_missing"


@dataclass
class CredentialUse:
    """What a workflow's pods need: registry host → credential name; the credentials its tasks name."""

    registries: dict[str, str] = field(default_factory=dict)
    named: dict[str, list[str]] = field(default_factory=dict)  # credential → its keys at submission

    def secrets(self, workflow_id: str) -> list[dict]:
        """`Workflow.credential_secrets`: each Secret's name, kind and the credentials it is built from."""
        out = []
        if self.registries:
            out.append({"name": f"{workflow_id}-registry", "kind": REGISTRY_KIND, "registries": self.registries})
        if self.named:
            out.append({"name": f"{workflow_id}-credentials", "kind": GENERIC_KIND, "credentials": self.named})
        return out


def plan(who, spec) -> CredentialUse:
    """Check every task's `credentials:` against the submitter's credentials and match images to registries."""
    principal = policy.principal(who)
    tasks = spec.tasks()
    mine = {
        c.name: c for c in Credential.objects.filter(user=principal.user).only("name", "cred_type", "profile", "keys")
    }
    use = CredentialUse()
    if any(task.credentials for task in tasks):
        policy.require(
            principal,
            actions.CREDENTIALS_READ,
            actions.credentials(principal.user.get_username()),
            field=join_key(next(t for t in tasks if t.credentials).path, "credentials"),
        )
    for task in tasks:
        for name, mapping in task.credentials.items():
            _check(mine.get(name), name, mapping, join_key(join_key(task.path, "credentials"), name))
            use.named[name] = list(mine[name].keys)
    by_host = {c.profile: c.name for c in mine.values() if c.cred_type == CredentialType.REGISTRY}
    for task in tasks:
        host = image_registry(task.image)
        if host in by_host:
            use.registries[host] = by_host[host]
    return use


def _check(credential: Credential | None, name: str, mapping, where: str) -> None:
    if credential is None:
        raise MissingCredential(
            f"you have no credential {name}: create it first (osmo credential set {name} --type GENERIC "
            "--payload key=value)",
            field=where,
            value=name,
        )
    if credential.cred_type == CredentialType.REGISTRY:
        raise MissingCredential(
            f"{name} is a REGISTRY credential: it is used as the image pull secret of images of "
            f"{credential.profile}, never given to a task",
            field=where,
            value=name,
        )
    if isinstance(mapping, dict):
        for env, key in mapping.items():
            if key not in credential.keys:
                raise MissingCredential(
                    f"credential {name} has no key {key}; it has {', '.join(credential.keys)}",
                    field=join_key(where, env),
                    value=key,
                )


def decorate(pod: dict, task, secrets: list[dict]) -> dict:
    """Add the pull secret, and the task's credentials as env vars and mounted files, to its pod (in place)."""
    spec = pod.setdefault("spec", {})
    for secret in secrets:
        if secret["kind"] == REGISTRY_KIND:
            pulls = spec.setdefault("imagePullSecrets", [])
            if {"name": secret["name"]} not in pulls:
                pulls.append({"name": secret["name"]})
    generic = next((s for s in secrets if s["kind"] == GENERIC_KIND), None)
    if not task.credentials or generic is None:
        return pod
    container = _user_container(spec, task.name)
    for name, mapping in task.credentials.items():
        if isinstance(mapping, dict):
            env = container.setdefault("env", [])
            for variable, key in mapping.items():
                ref = {"name": generic["name"], "key": f"{name}.{key}"}
                env.append({"name": variable, "valueFrom": {"secretKeyRef": ref}})
            continue
        volume = f"{VOLUME_PREFIX}{name.lower().replace('_', '-')}"[:63]
        items = [{"key": f"{name}.{key}", "path": key} for key in generic["credentials"][name]]
        spec.setdefault("volumes", []).append(
            {"name": volume, "secret": {"secretName": generic["name"], "items": items}}
        )
        container.setdefault("volumeMounts", []).append({"name": volume, "mountPath": mapping, "readOnly": True})
    return pod


ORIGIN = {"source": "added by the portal: your credentials (docs/credentials.md)"}


def provenance(pod: dict, secrets: list[dict]) -> dict[str, dict]:
    """Provenance entries (pod path → origin) for what `decorate` added, for the previews."""
    names = {secret["name"] for secret in secrets}
    spec = pod.get("spec") or {}
    prefixes = [
        f"spec.imagePullSecrets[{i}]"
        for i, ref in enumerate(spec.get("imagePullSecrets") or ())
        if ref.get("name") in names
    ]
    volumes = set()
    for i, volume in enumerate(spec.get("volumes") or ()):
        if (volume.get("secret") or {}).get("secretName") in names:
            prefixes.append(f"spec.volumes[{i}]")
            volumes.add(volume.get("name"))
    for c, container in enumerate(spec.get("containers") or ()):
        for e, env in enumerate(container.get("env") or ()):
            if ((env.get("valueFrom") or {}).get("secretKeyRef") or {}).get("name") in names:
                prefixes.append(f"spec.containers[{c}].env[{e}]")
        for m, mount in enumerate(container.get("volumeMounts") or ()):
            if mount.get("name") in volumes:
                prefixes.append(f"spec.containers[{c}].volumeMounts[{m}]")
    return {
        path: dict(ORIGIN)
        for path, _, _ in iter_leaves(pod)
        if any(path == prefix or path.startswith(prefix + ".") for prefix in prefixes)
    }


def _user_container(spec: dict, task_name: str) -> dict:
    """The task's own container (named after the task, as the engine names it), not the template's osmo-ctrl."""
    containers = spec.get("containers") or [{}]
    return next((c for c in containers if c.get("name") == k8s_name(task_name)), containers[0])


def manifests(workflow, labels: dict[str, str]) -> list[dict]:
    """The Secrets of `workflow.credential_secrets`, with the submitter's current values. Raises MissingCredential
    when one was deleted since the submission."""
    wanted = workflow.credential_secrets or []
    if not wanted:
        return []
    mine = {c.name: c for c in Credential.objects.filter(user_id=workflow.submitted_by_id)}
    out = []
    for secret in wanted:
        meta = {"name": secret["name"], "labels": dict(labels)}
        if secret["kind"] == REGISTRY_KIND:
            auths = {}
            for host, name in secret["registries"].items():
                values = secret_values(_still(mine, name))
                token = f"{values.get('username', '')}:{values['auth']}".encode()
                auths[host] = {"auth": base64.b64encode(token).decode()}
            config = base64.b64encode(json.dumps({"auths": auths}).encode()).decode()
            out.append(_secret(meta, "kubernetes.io/dockerconfigjson", {".dockerconfigjson": config}))
            continue
        data = {}
        for name in secret["credentials"]:
            for key, value in secret_values(_still(mine, name)).items():
                data[f"{name}.{key}"] = base64.b64encode(value.encode()).decode()
        out.append(_secret(meta, "Opaque", data))
    return out


def _still(mine: dict, name: str) -> Credential:
    credential = mine.get(name)
    if credential is None:
        raise MissingCredential(
            f"credential {name} was deleted after the workflow was submitted", field="credentials", value=name
        )
    return credential


def _secret(metadata: dict, kind: str, data: dict) -> dict:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": metadata, "type": kind, "data": data}
