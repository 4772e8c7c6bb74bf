"""The headless Services through which the pods of a workflow's group reach each other by name: written before
the pods, with the same ownership labels, and deleted when the workflow ends (workflows.group_dns).

* `apply_service`: POST the manifest; a missing namespace is created and the POST repeated; `409 AlreadyExists`
  (an earlier attempt wrote it) is success: the Service's selector never changes.
* `delete_service`: 404 is success (already gone); returns whether a Service was there.

Every failure is a `KubeError` (`transient` for network errors, 429 and 5xx).
"""

from __future__ import annotations

from clusters.kube.connection import KubeClient
from clusters.kube.errors import KubeError
from clusters.kube.pods import post_namespaced

_COLLECTION = "/api/v1/namespaces/{namespace}/services"
_OBJECT = "/api/v1/namespaces/{namespace}/services/{name}"


def apply_service(kube: KubeClient, namespace: str, manifest: dict) -> bool:
    """Write the Service; whether it was created now (False: it was there already)."""
    doing = f"writing service {namespace}/{manifest['metadata']['name']}"
    return post_namespaced(kube, doing, _COLLECTION, namespace, manifest) is not None


def delete_service(kube: KubeClient, namespace: str, name: str) -> bool:
    doing = f"deleting service {namespace}/{name}"
    try:
        kube.raw(doing, "DELETE", _OBJECT, {"namespace": namespace, "name": name})
    except KubeError as error:
        if error.k8s_status == 404:
            return False
        raise
    return True
