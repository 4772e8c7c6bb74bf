"""The pool list (`pool list`, `GET /api/pool`): name, backend, platforms, status, description."""

from __future__ import annotations

from django.db.models import Prefetch

from pools.models import Platform, Pool
from pools.services.capacity import capacity


def pool_rows_with_capacity(names: list[str] | None = None) -> list[dict]:
    """`pool_rows` plus allocatable/used/free per pool and per platform (nodes counted once per pool)."""
    rows = pool_rows(names)
    if not rows:
        return rows
    report = capacity([row["name"] for row in rows]).as_dict(with_nodes=False)
    for row in rows:
        figures = report["pools"].get(row["name"], {})
        row["capacity"] = {key: figures.get(key, {}) for key in ("allocatable", "used", "free")}
        row["capacity"]["nodes"] = figures.get("nodes", 0)
        for platform, body in row["platforms"].items():
            platform_figures = figures.get("platforms", {}).get(platform, {})
            body["capacity"] = {key: platform_figures.get(key, {}) for key in ("allocatable", "used", "free")}
            body["capacity"]["nodes"] = platform_figures.get("nodes", 0)
    return rows


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
