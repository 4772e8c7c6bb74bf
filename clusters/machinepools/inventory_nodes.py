"""The inventory's live count of a machine pool's nodes: the backend's nodes labelled
`node.kubernetes.io/machinepool=<name>`, and how many of them are ready and schedulable. The watcher keeps the
inventory within seconds of the cluster, while a pool's `nodes_now` is what the provider answered at the
last reconcile; pages show both (pools/admin/machine_pools.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count, Q
from django.db.models.fields.json import KT

from clusters.machinepools.spec import MACHINEPOOL_LABEL
from clusters.models import Node


@dataclass(frozen=True)
class NodeCount:
    total: int = 0
    ready: int = 0  # ready and not cordoned

    def __str__(self) -> str:
        return f"{self.total} ({self.ready} ready)"


def node_counts(pools) -> dict[tuple[int, str], NodeCount]:
    """(backend id, machine pool name) -> its nodes in the inventory, for `pools` (MachinePool rows), in one
    query whatever their number; a pool with no node is absent (NodeCount() is its count)."""
    names = {pool.name for pool in pools}
    if not names:
        return {}
    rows = (
        # the key lookup's `__in`, not an `__in` on the KT annotation: SQLite reads that one's values as JSON
        Node.objects.filter(backend_id__in={pool.backend_id for pool in pools})
        .filter(**{f"labels__{MACHINEPOOL_LABEL}__in": sorted(names)})
        .annotate(machine_pool=KT(f"labels__{MACHINEPOOL_LABEL}"))
        .values("backend_id", "machine_pool")
        .annotate(total=Count("pk"), ready=Count("pk", filter=Q(ready=True, unschedulable=False)))
        .values_list("backend_id", "machine_pool", "total", "ready")
    )
    return {(backend_id, name): NodeCount(total, ready) for backend_id, name, total, ready in rows}
