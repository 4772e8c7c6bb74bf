"""Node pools with their totals, for lists (the admin's, the fair-share pages): per resource, the capacity of
the node pool's usable nodes and the sum of its departments' deserved quotas, annotated in one query.

A node pool is over-committed on a resource when its departments' deserved sum exceeds what its nodes hold:
the guarantees cannot all be honoured at once (Run:ai shows the same warning).
"""

from __future__ import annotations

from django.db.models import BigIntegerField, Count, OuterRef, QuerySet, Subquery, Sum
from django.db.models.functions import Coalesce

from quotas.models import RESOURCES, NodePool, NodePoolMember, Quota


def _sum(rows: QuerySet, column: str) -> Coalesce:
    summed = rows.values("node_pool").annotate(total=Sum(column)).values("total")
    return Coalesce(Subquery(summed, output_field=BigIntegerField()), 0)


def with_totals(node_pools: QuerySet[NodePool] | None = None) -> QuerySet[NodePool]:
    """Annotates `capacity_<r>`, `deserved_<r>` (r in gpu, cpu, memory) and `node_count`: one query."""
    node_pools = NodePool.objects.all() if node_pools is None else node_pools
    usable = NodePoolMember.objects.filter(node_pool=OuterRef("pk"), node__ready=True, node__unschedulable=False)
    annotations = {"node_count": _count(NodePoolMember.objects.filter(node_pool=OuterRef("pk")))}
    for resource in RESOURCES:
        annotations[f"capacity_{resource}"] = _sum(usable, f"node__{resource}_allocatable")
        departments = Quota.objects.filter(node_pool=OuterRef("pk"), department__isnull=False, resource=resource)
        annotations[f"deserved_{resource}"] = _sum(departments, "deserved")
    return node_pools.annotate(**annotations)


def _count(rows: QuerySet) -> Coalesce:
    counted = rows.values("node_pool").annotate(n=Count("pk")).values("n")
    return Coalesce(Subquery(counted, output_field=BigIntegerField()), 0)


def overcommitted(node_pool: NodePool) -> list[str]:
    """The resources whose deserved sum exceeds capacity (a node pool from `with_totals`)."""
    return [r for r in RESOURCES if getattr(node_pool, f"deserved_{r}") > getattr(node_pool, f"capacity_{r}")]
