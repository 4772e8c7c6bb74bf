"""Reading a node (`read_node`: the workflows' spot-interruption check) and labelling nodes, the one write the
portal makes to nodes, for the quota schedulers it delegates to (KAI's `kai.scheduler/node-pool` shard label,
Kueue flavors' `pool-portal/node-pool`; quotas.services.delegation).

`patch_node_labels` sends a JSON merge patch of `metadata.labels` only: a value sets the label, None removes
it, labels not named stay as they are. Failures are `KubeError`s (transient for network errors, 429, 5xx).
"""

from __future__ import annotations

from clusters.kube.connection import KubeClient
from clusters.kube.errors import KubeError


def patch_node_labels(kube: KubeClient, name: str, labels: dict[str, str | None]) -> dict:
    """Set (or, with None, remove) `labels` on node `name`; returns the node as the server answered."""
    body = {"metadata": {"labels": dict(labels)}}
    return kube.json(f"labelling node {name}", kube.core.patch_node, name, body)


def read_node(kube: KubeClient, name: str) -> dict | None:
    """Node `name` as the server has it; None when there is no such node (404)."""
    try:
        return kube.json(f"reading node {name}", kube.core.read_node, name)
    except KubeError as error:
        if error.k8s_status == 404:
            return None
        raise
