"""The pool list (`pool list`, `GET /api/pool`): name, backend, platforms, status, description."""

from __future__ import annotations

from django.db.models import Prefetch

from pools.models import Platform, Pool


def pool_rows(names: list[str] | None = None) -> list[dict]:
    query = Pool.objects.select_related("backend").prefetch_related(
        Prefetch("platforms", queryset=Platform.objects.order_by("name").only("id", "pool_id", "name", "description"))
    )
    if names:
        query = query.filter(name__in=names)
    return [
        {
            "name": pool.name,
            "description": pool.description,
            "backend": pool.backend.name,
            "status": pool.status,
            "default_platform": pool.default_platform or None,
            "platforms": {p.name: {"description": p.description} for p in pool.platforms.all()},
        }
        for pool in query
    ]
