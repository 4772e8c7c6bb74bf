"""What a pool snapshot reads (the shapes themselves derive from pools.config_types.POOL)."""

from __future__ import annotations

from django.db.models import Prefetch, QuerySet

from pools.models import Platform, Pool


def pools_for_snapshot() -> QuerySet[Pool]:
    """Everything a pool snapshot reads, in a constant number of queries whatever the pool count."""
    platforms = Platform.objects.order_by("name").prefetch_related(
        "template_refs__template", "validation_refs__validation"
    )
    return Pool.objects.select_related("backend").prefetch_related(
        "template_refs__template", "validation_refs__validation", Prefetch("platforms", queryset=platforms)
    )
