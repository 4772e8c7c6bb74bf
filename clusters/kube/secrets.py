"""The Secrets a workflow's pods use (image pull secrets, credentials as env vars and files): written before the
pods, with the same ownership labels, and deleted when the workflow ends (workflows.credentials).

* `apply_secret`: POST the manifest; a missing namespace is created and the POST repeated; `409 AlreadyExists`
  (an earlier attempt wrote it) is answered by a PUT of the manifest, so the Secret holds the current values.
* `delete_secret`: 404 is success (already gone); returns whether a Secret was there.

Values are never logged: errors name the Secret only. Every failure is a `KubeError` (`transient` for network
errors, 429 and 5xx).
"""

from __future__ import annotations

import json

from clusters.kube.connection import KubeClient
from clusters.kube.errors import KubeError
from clusters.kube.pods import post_namespaced

_COLLECTION = "/api/v1/namespaces/{namespace}/secrets"
_OBJECT = "/api/v1/namespaces/{namespace}/secrets/{name}"


def apply_secret(kube: KubeClient, namespace: str, manifest: dict) -> dict:
    name = manifest["metadata"]["name"]
    doing = f"writing secret {namespace}/{name}"
    created = post_namespaced(kube, doing, _COLLECTION, namespace, manifest)
    if created is not None:
        return json.loads(created)
    params = {"namespace": namespace, "name": name}
    return json.loads(kube.raw(doing, "PUT", _OBJECT, params, body=manifest))


def delete_secret(kube: KubeClient, namespace: str, name: str) -> bool:
    try:
        kube.json(f"deleting secret {namespace}/{name}", kube.core.delete_namespaced_secret, name, namespace)
    except KubeError as error:
        if error.k8s_status == 404:
            return False
        raise
    return True
