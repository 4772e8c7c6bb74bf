"""What a submission reads of a pool: the pool, its backend and its platforms, in one round trip, cached per
process under the config generation (portal.generation: every write to pools, platforms and backends changes
it, at commit, whatever the process or door), which the request reads with the access epochs anyway. A
submission whose pool nothing changed since this process last loaded it makes no query for it.

Loaded instances are shared by the submissions of the process: read them, do not change them.
"""

from __future__ import annotations

from django.db import DEFAULT_DB_ALIAS, connection
from django.db.models.signals import post_delete, post_save

from access import epoch
from clusters.models import Backend
from pools.models import Platform, Pool
from portal.generation import GenerationCache


# What a submission reads of the pool, its backend and its platforms (any other field would load on
# first access, at one query); the JSON config columns stay in the database: `compiled` has them all.
def _fields(model, *names: str) -> list[str]:
    """`names` in the model's field order, which `Model.from_db` expects of a partial row."""
    return [f.attname for f in model._meta.concrete_fields if f.attname in names]


_POOL_FIELDS = _fields(
    Pool,
    "id",
    "name",
    "backend_id",
    "default_platform",
    "enable_maintenance",
    "default_exec_timeout",
    "default_queue_timeout",
    "max_exec_timeout",
    "max_queue_timeout",
)
_BACKEND_FIELDS = _fields(Backend, "id", "name", "namespace", "scheduler_name", "control_image", "last_sync_at")
_PLATFORM_FIELDS = _fields(Platform, "id", "pool_id", "name", "compiled")


def _pool_rows(name: str) -> list[tuple]:
    """One row per platform (the pool's and backend's columns repeated), in one round trip."""
    return list(
        Pool.objects.filter(name=name)
        .order_by("platforms__name")
        .values_list(
            *_POOL_FIELDS, *(f"backend__{n}" for n in _BACKEND_FIELDS), *(f"platforms__{n}" for n in _PLATFORM_FIELDS)
        )
    )


_LOADED = GenerationCache(size=512)  # pool name -> Pool, under the config generation it was read at


def load_pool(name: str) -> Pool | None:
    """The pool with its backend (id, name, namespace, scheduler, last sync) and its platforms
    (`pool.loaded_platforms`, ordered by name): from the cache while the config generation stays put, else
    in one round trip. Nothing is cached or served from the cache inside a transaction (what it reads might
    roll back), nor without a generation (SQLite)."""
    if "\x00" in name:  # no pool has one (PostgreSQL refuses NUL in text)
        return None
    generation = None if connection.in_atomic_block else epoch.config_generation()
    pool = _LOADED.get(name, generation)
    if pool is None:
        pool = _read(name)
        if pool is not None:
            _LOADED.put(name, generation, pool)
    return pool


def _read(name: str) -> Pool | None:
    rows = _pool_rows(name)
    if not rows:
        return None
    split = (len(_POOL_FIELDS), len(_POOL_FIELDS) + len(_BACKEND_FIELDS))
    pool = Pool.from_db(DEFAULT_DB_ALIAS, _POOL_FIELDS, rows[0][: split[0]])
    pool.backend = Backend.from_db(DEFAULT_DB_ALIAS, _BACKEND_FIELDS, rows[0][split[0] : split[1]])
    pool.loaded_platforms = []
    for row in rows:
        values = row[split[1] :]
        if values[0] is not None:  # a pool without platforms: one row, its platform columns NULL
            platform = Platform.from_db(DEFAULT_DB_ALIAS, _PLATFORM_FIELDS, values)
            platform.pool = pool
            pool.loaded_platforms.append(platform)
    return pool


def _written(**kwargs) -> None:
    # The generation a request read at its start no longer holds for what it reads after its own write.
    epoch.forget()


for _model in (Pool, Platform, Backend):
    post_save.connect(_written, sender=_model, dispatch_uid=f"pool-loading-{_model.__name__}-saved")
    post_delete.connect(_written, sender=_model, dispatch_uid=f"pool-loading-{_model.__name__}-deleted")
