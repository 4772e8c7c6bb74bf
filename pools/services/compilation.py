"""Resolved configuration: each platform's merged template and rule list, computed when config is saved."""

from __future__ import annotations

from django.db.models import QuerySet

from pools.models import Pool


def recompile_pools(pools: QuerySet[Pool]) -> None:
    """Recompute the stored resolved config of every platform of `pools` (placeholder until the engine lands)."""
    return None
