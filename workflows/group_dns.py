"""How the tasks of one group reach each other by name, as OSMO does it (NVIDIA/OSMO src/utils/job/task.py:
`TaskGroupSpec.parse`, `TaskGroup.get_kb_specs`, `TaskGroup.convert_to_pod_spec`; kb_objects.py:
`K8sObjectFactory.create_headless_service`; src/lib/utils/common.py: `get_group_subdomain_name`):

* `{{host:<task>}}` in a task's command, args or environment becomes
  `<task uuid>.osmo-<group uuid>.<namespace>.svc.cluster.local` when `<task>` is in the same group
  (`WF_TASK_UUID` and `WF_GROUP_UUID` of that task and group; the namespace is the backend's). OSMO builds the
  token map per group, so a task of another group is left as written (`workflows.spec` warns).
* In a group of two or more tasks every pod gets `spec.hostname` = its task's uuid and `spec.subdomain` =
  `osmo-<group uuid>` (a DNS-1035 label: the uuid may start with a digit), and the pods carry the label
  `pool-portal/group` = the group's uuid. One headless Service `osmo-<group uuid>` (`clusterIP: None`,
  selecting that label) is written in the namespace before the pods (`workflows.lifecycle.create`) and deleted
  when the workflow ends (`workflows.lifecycle.settle`), the path the credential Secrets take. Cluster DNS
  then answers the name with the pod's IP while both exist. A single-task group gets none of this (as in
  OSMO): its own `{{host:…}}` is substituted but does not resolve.

Pure Python: no Django; `manifest` and `decorate` build dicts.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from pools.engine.resolve import group_uuid, task_uuid

GROUP_LABEL = "pool-portal/group"
DNS_SUFFIX = "svc.cluster.local"


def subdomain(workflow_uuid: str, group_name: str) -> str:
    return f"osmo-{group_uuid(workflow_uuid, group_name)}"


def host_name(workflow_uuid: str, group_name: str, task_name: str, namespace: str) -> str:
    """What `{{host:<task_name>}}` becomes in a task of `group_name`."""
    return f"{task_uuid(workflow_uuid, task_name)}.{subdomain(workflow_uuid, group_name)}.{namespace}.{DNS_SUFFIX}"


def networked_groups(group_names: Iterable[str]) -> set[str]:
    """The groups (named once per task) with two or more tasks: those whose pods get names and a Service."""
    return {name for name, count in Counter(group_names).items() if count > 1}


def decorate(pod: dict, workflow_uuid: str, group_name: str, task_name: str) -> dict:
    """Give a pod of a group of two or more tasks its hostname, subdomain and group label (in place). A value
    the platform's pod template set is kept, as OSMO applies the template over its own pod."""
    spec = pod.setdefault("spec", {})
    spec.setdefault("hostname", task_uuid(workflow_uuid, task_name))
    spec.setdefault("subdomain", subdomain(workflow_uuid, group_name))
    labels = pod.setdefault("metadata", {}).setdefault("labels", {})
    labels[GROUP_LABEL] = group_uuid(workflow_uuid, group_name)
    return pod


def manifest(workflow_uuid: str, group_name: str, labels: dict[str, str]) -> dict:
    """The headless Service through which the group's pods' names resolve."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": subdomain(workflow_uuid, group_name), "labels": dict(labels)},
        "spec": {"clusterIP": "None", "selector": {GROUP_LABEL: group_uuid(workflow_uuid, group_name)}},
    }
