"""Reading the memberships `pools.services.membership` stores: a node's classification (SHARED, RESERVED,
UNUSED: OSMO §6.2) and the filters the capacity views use. Apart from the module that computes them, which
imports the placement engine and the compiler: a listing (`pool list`, the capacity pages) reads rows only.
"""

from __future__ import annotations

from django.db.models import Count, Q, QuerySet

from clusters.models import Node
from pools.models import ResourceType


def resource_type(pool_count: int) -> str:
    if pool_count > 1:
        return ResourceType.SHARED
    return ResourceType.RESERVED if pool_count == 1 else ResourceType.UNUSED


def with_pool_count(nodes: QuerySet[Node]) -> QuerySet[Node]:
    """Annotate `pool_count` (distinct pools a node serves): the SHARED/RESERVED/UNUSED classification."""
    return nodes.annotate(pool_count=Count("memberships__pool", distinct=True))


def filter_resource_type(nodes: QuerySet[Node], kind: str) -> QuerySet[Node]:
    nodes = with_pool_count(nodes)
    return {
        ResourceType.SHARED: nodes.filter(pool_count__gt=1),
        ResourceType.RESERVED: nodes.filter(pool_count=1),
        ResourceType.UNUSED: nodes.filter(pool_count=0),
    }.get(kind, nodes)


def membership_filter(pools: list[str] | None = None, platforms: list[str] | None = None) -> Q:
    query = Q()
    if pools:
        query &= Q(pool__name__in=pools)
    if platforms:
        query &= Q(platform__name__in=platforms)
    return query
