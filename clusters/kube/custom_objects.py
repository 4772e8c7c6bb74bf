"""Custom objects (the schedulers' queues and flavors) through the official client's CustomObjectsApi.

`resource` is anything with `group`, `version`, `plural`, `namespaced` (`clusters.schedulers.CustomResource`);
the namespace of a namespaced object is its `metadata.namespace`.

* `apply`: create, or replace what is there (the server's current resourceVersion, read first, guards the
  replace; a conflict re-reads and tries again). A status subresource is left alone. A missing namespace is
  created once, as for pods;
* `get` (None when absent), `list_objects` (by label selector, one namespace or all), `delete` (404 is
  success: returns whether something was there), `read_status` (the object's `status`, {} before the
  controller wrote one; None when the object is absent).

Every failure is a `KubeError` (`clusters.kube.errors`): `transient` for network errors, 429 and 5xx.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from clusters.kube.connection import KubeClient
from clusters.kube.errors import KubeError
from clusters.kube.pods import ensure_namespace

REPLACE_ATTEMPTS = 3


class Resource(Protocol):
    group: str
    version: str
    plural: str
    namespaced: bool


@dataclass
class Applied:
    obj: dict  # as the server answered
    created: bool


def _where(resource: Resource, name: str, namespace: str | None) -> str:
    return f"{resource.plural}.{resource.group} {namespace + '/' if namespace else ''}{name}"


def _namespace(resource: Resource, namespace: str | None) -> str | None:
    if resource.namespaced and not namespace:
        raise KubeError(f"{resource.plural}.{resource.group} are namespaced: give a namespace", field="namespace")
    return namespace if resource.namespaced else None


def _call(
    kube: KubeClient, resource: Resource, verb: str, namespace: str | None, *args: Any, suffix: str = ""
) -> tuple[Any, tuple]:
    """CustomObjectsApi's `<verb>_namespaced_custom_object<suffix>` or `<verb>_cluster_custom_object<suffix>`,
    with its positional arguments."""
    api = kube.custom
    if resource.namespaced:
        method = getattr(api, f"{verb}_namespaced_custom_object{suffix}")
        return method, (resource.group, resource.version, namespace, resource.plural, *args)
    return getattr(api, f"{verb}_cluster_custom_object{suffix}"), (
        resource.group,
        resource.version,
        resource.plural,
        *args,
    )


def apply(kube: KubeClient, resource: Resource, obj: dict) -> Applied:
    meta = obj.get("metadata") or {}
    name, namespace = meta.get("name", ""), _namespace(resource, meta.get("namespace"))
    where = _where(resource, name, namespace)
    for attempt in (1, 2):
        method, args = _call(kube, resource, "create", namespace, obj)
        try:
            return Applied(kube.json(f"creating {where}", method, *args), True)
        except KubeError as error:
            if error.k8s_status == 404 and namespace and attempt == 1:  # the namespace is missing
                ensure_namespace(kube, namespace)
                continue
            if error.k8s_status != 409:
                raise
            break
    for _ in range(REPLACE_ATTEMPTS):
        current = get(kube, resource, name, namespace)
        if current is None:  # deleted since: create it again
            method, args = _call(kube, resource, "create", namespace, obj)
            return Applied(kube.json(f"creating {where}", method, *args), True)
        body = {**obj, "metadata": {**meta, "resourceVersion": current["metadata"]["resourceVersion"]}}
        method, args = _call(kube, resource, "replace", namespace, name, body)
        try:
            return Applied(kube.json(f"replacing {where}", method, *args), False)
        except KubeError as error:
            if error.k8s_status != 409:
                raise
    raise KubeError(f"replacing {where}: it kept changing under us ({REPLACE_ATTEMPTS} conflicts)", transient=True)


def get(kube: KubeClient, resource: Resource, name: str, namespace: str | None = None) -> dict | None:
    namespace = _namespace(resource, namespace)
    method, args = _call(kube, resource, "get", namespace, name)
    try:
        return kube.json(f"reading {_where(resource, name, namespace)}", method, *args)
    except KubeError as error:
        if error.k8s_status == 404:
            return None
        raise


def list_objects(
    kube: KubeClient, resource: Resource, namespace: str | None = None, label_selector: str = ""
) -> list[dict]:
    """Every object (of `namespace`, or of all namespaces when None), matching `label_selector`."""
    api = kube.custom
    doing = f"listing {resource.plural}.{resource.group}"
    if resource.namespaced and namespace:
        method, args = api.list_namespaced_custom_object, (resource.group, resource.version, namespace, resource.plural)
    elif resource.namespaced:
        method, args = api.list_custom_object_for_all_namespaces, (resource.group, resource.version, resource.plural)
    else:
        method, args = api.list_cluster_custom_object, (resource.group, resource.version, resource.plural)
    items: list[dict] = []
    token = None
    while True:
        page = kube.json(doing, method, *args, label_selector=label_selector, limit=500, _continue=token)
        items.extend(page.get("items") or [])
        token = (page.get("metadata") or {}).get("continue")
        if not token:
            return items


def delete(kube: KubeClient, resource: Resource, name: str, namespace: str | None = None) -> bool:
    namespace = _namespace(resource, namespace)
    method, args = _call(kube, resource, "delete", namespace, name)
    try:
        kube.json(f"deleting {_where(resource, name, namespace)}", method, *args)
    except KubeError as error:
        if error.k8s_status == 404:
            return False
        raise
    return True


def read_status(kube: KubeClient, resource: Resource, name: str, namespace: str | None = None) -> dict | None:
    namespace = _namespace(resource, namespace)
    method, args = _call(kube, resource, "get", namespace, name, suffix="_status")
    try:
        obj = kube.json(f"reading the status of {_where(resource, name, namespace)}", method, *args)
    except KubeError as error:
        if error.k8s_status == 404:
            return None
        raise
    return obj.get("status") or {}
