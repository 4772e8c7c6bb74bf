"""The confinement invariant (docs/quotas.md, "Confinement"), for any scenario test on kubesim to call after
each step: every pod of the portal that the cluster bound to a node is bound to a node of the node pool its
task is charged to, as the portal's own membership (`NodePoolMember`) says."""

from __future__ import annotations

from clusters.models import Backend, Node
from kubesim import EmulatorServer
from quotas.models import NodePoolMember
from quotas.services import node_labels
from workflows.models import Task


def bound_pods(server: EmulatorServer, namespace: str) -> dict[str, str]:
    """pod name → the node kubesim bound it to, for the portal's pods there (labelled with a workflow)."""
    pods = server.emulator.list("pods", namespace, label_selector="pool-portal/workflow")
    return {pod["metadata"]["name"]: pod["spec"]["nodeName"] for pod in pods if (pod.get("spec") or {}).get("nodeName")}


def assert_no_pod_outside_its_node_pool(server: EmulatorServer, namespace: str) -> int:
    """Fail, naming the pod, its node and both node pools, on a pod bound outside its node pool; returns how
    many bound pods were checked (callers assert the scenario placed some)."""
    bound = bound_pods(server, namespace)
    rows = Task.objects.filter(pod_name__in=bound).values_list("pod_name", "node_pool", "workflow__node_pool")
    charged = {pod: own or lead for pod, own, lead in rows}  # each task's own node pool (the lead's before #30.8)
    node_pool_of = dict(
        NodePoolMember.objects.filter(node__name__in=set(bound.values())).values_list("node__name", "node_pool__name")
    )
    escaped = [
        f"pod {pod} on node {node} (node pool {node_pool_of.get(node)}), charged to node pool {charged[pod]}"
        for pod, node in sorted(bound.items())
        if pod in charged and node_pool_of.get(node) != charged[pod]
    ]
    assert not escaped, escaped
    return sum(pod in charged for pod in bound)


def label_rows_as_the_portal_does(backend_id: int) -> None:
    """For tests whose nodes live only in the inventory (no cluster to patch): write onto the node rows the
    node-pool labels `quotas.services.node_labels` would patch on the cluster and the inventory read back."""
    backend = Backend.objects.get(pk=backend_id)
    stale = node_labels.stale_labels(backend)
    for node in Node.objects.filter(backend=backend, name__in=stale):
        labels = {**(node.labels or {}), **stale[node.name]}
        node.labels = {key: value for key, value in labels.items() if value is not None}
        node.save(update_fields=["labels"])
