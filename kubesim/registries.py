"""Image pull secrets as an API server and a kubelet treat them.

* The API server refuses (422 Invalid, its words) a Secret of type ``kubernetes.io/dockerconfigjson``
  without a ``.dockerconfigjson`` key or whose value is not base64 of a JSON object, and any Secret with a
  data key outside ``[-._a-zA-Z0-9]+`` (k8s.io/kubernetes pkg/apis/core/validation ValidateSecret).
* The kubelet pulls an image of a private registry (``PRIVATE_REGISTRIES``, by default ``nvcr.io``; kubesim's
  ``--private-registry``) only with an ``imagePullSecrets`` entry naming a dockerconfigjson Secret of the pod's
  namespace whose ``auths`` hold that registry; otherwise the container waits ``ErrImagePull`` then
  ``ImagePullBackOff``, and the kubelet tries again (a Secret created later lets the pod start). As on NGC,
  the public catalog (``PUBLIC_REPOSITORIES``: ``nvcr.io/nvidia/…``) is pulled anonymously; an organization's
  images (``nvcr.io/<org>/…``) are not.
"""

from __future__ import annotations

import base64
import binascii
import json
import re

from .resources import ApiError

DOCKER_CONFIG_JSON = "kubernetes.io/dockerconfigjson"
DOCKER_CONFIG_KEY = ".dockerconfigjson"
PRIVATE_REGISTRIES = ("nvcr.io",)
PUBLIC_REPOSITORIES = ("nvcr.io/nvidia/",)  # NGC's public catalog: anonymous pulls work
_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")
_DOCKER_HUB = "docker.io"


def validate_secret(obj: dict) -> None:
    name = (obj.get("metadata") or {}).get("name", "")
    problems = []
    data = obj.get("data") or {}
    if not isinstance(data, dict):
        problems.append("data: Invalid value: must be an object")
        data = {}
    for key in data:
        if not _KEY.match(str(key)):
            problems.append(
                f'data[{key}]: Invalid value: "{key}": a valid config key must consist of alphanumeric '
                "characters, '-', '_' or '.'"
            )
    if obj.get("type") == DOCKER_CONFIG_JSON:
        problems.extend(_docker_config_problems(data))
    if problems:
        raise ApiError(422, f'Secret "{name}" is invalid: ' + ", ".join(problems), "Invalid")


def _docker_config_problems(data: dict) -> list[str]:
    if DOCKER_CONFIG_KEY not in data:
        return [f"data[{DOCKER_CONFIG_KEY}]: Required value"]
    try:
        document = json.loads(base64.b64decode(str(data[DOCKER_CONFIG_KEY]), validate=True))
    except (binascii.Error, ValueError):
        return [f'data[{DOCKER_CONFIG_KEY}]: Invalid value: "<secret contents redacted>": not base64 of JSON']
    if not isinstance(document, dict):
        return [f'data[{DOCKER_CONFIG_KEY}]: Invalid value: "<secret contents redacted>": not a JSON object']
    return []


def registry_of(image: str) -> str:
    """The registry host of an image reference, as the container runtime reads it (docker.io by default)."""
    first, slash, _ = image.partition("/")
    if slash and ("." in first or ":" in first or first == "localhost"):
        return first
    return _DOCKER_HUB


def pull_refusal(
    pod: dict, secrets: dict, private: tuple[str, ...], public: tuple[str, ...] = PUBLIC_REPOSITORIES
) -> str:
    """Why the kubelet cannot pull one of the pod's images ("" when it can). `secrets`: (namespace, name) → Secret."""
    namespace = pod["metadata"].get("namespace", "")
    spec = pod.get("spec") or {}
    names = [ref.get("name", "") for ref in spec.get("imagePullSecrets") or () if isinstance(ref, dict)]
    for container in (spec.get("initContainers") or []) + (spec.get("containers") or []):
        image = str(container.get("image", ""))
        host = registry_of(image)
        if image.startswith(public):
            continue
        if host in private and not any(host in _auths(secrets.get((namespace, name))) for name in names):
            return (
                f'Failed to pull image "{image}": unauthorized: authentication required '
                f"(no imagePullSecrets entry holds credentials for {host})"
            )
    return ""


def _auths(secret: dict | None) -> dict:
    if not secret or secret.get("type") != DOCKER_CONFIG_JSON:
        return {}
    try:
        document = json.loads(base64.b64decode(str((secret.get("data") or {}).get(DOCKER_CONFIG_KEY, ""))))
    except (binascii.Error, ValueError):
        return {}
    auths = document.get("auths") if isinstance(document, dict) else None
    return auths if isinstance(auths, dict) else {}
