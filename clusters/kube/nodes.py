"""Labelling nodes: the one write the portal makes to nodes, for the quota schedulers it delegates to
(KAI's `kai.scheduler/node-pool` shard label, Kueue flavors' `pool-portal/node-pool`; quotas.services.delegation).

`patch_node_labels` sends a JSON merge patch of `metadata.labels` only: a value sets the label, None removes
it, labels not named stay as they are. Failures are `KubeError`s (transient for network errors, 429, 5xx).
"""

from __future__ import annotations

from clusters.kube.connection import KubeClient


def patch_node_labels(kube: KubeClient, name: str, labels: dict[str, str | None]) -> dict:
    """Set (or, with None, remove) `labels` on node `name`; returns the node as the server answered."""
    body = {"metadata": {"labels": dict(labels)}}
    return kube.json(f"labelling node {name}", kube.core.patch_node, name, body)
