"""The access epoch: one number that changes, in the same transaction, with anything that decides
access: roles and their policies, who holds them, tokens and their roles, a user's active flag
(`access.signals` bumps it on every such save, delete and membership change, whatever the door).

Per-process caches of token lookups (`access.services.tokens`) and role rules (`access.policy`) are
keyed on it, so a request that hits them costs one tiny query (the epoch, read once per request)
instead of two ORM lookups, and a change is seen by every process at its next request. Safety nets:
- nothing is cached or served from a cache inside a transaction (what it reads might roll back);
- the epoch is read before what it guards, so an entry is never stamped newer than its data;
- a missing epoch row (a flushed database) turns the caches off until the next bump writes one, and
  a fresh row starts at a random value, so entries from before a flush never match again;
- entries expire after `ACCESS_CACHE_SECONDS` (default 60), whatever happens, so even a change made by
  hand in SQL is seen within that time.

The table holds one row per epoch, all read by the same one query: `ACCESS` (1, this module's) and the
epochs of apps above that cache their own per-process answers the same way (2: quotas' charging epoch,
`quotas.services.charge_cache`; 3: pools' machine-shape epoch, `pools.services.machine_pool_shapes`; 4: the
inventory's capacity epoch, moved by `clusters.inventory` when a node's capacity changes, read by
`quotas.services.capacity`).
`current`, `bump` and `EpochCache` take the epoch's id (default `ACCESS`). The same query reads the config
generation (portal.generation, PostgreSQL only): `config_generation()`, for caches of what pools, platforms and
backends hold (workflows.pool_loading).
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable
from typing import TypeVar

from django.conf import settings
from django.core.signals import request_finished, request_started
from django.db import connection

from access.models import AccessEpoch
from portal import gc_tuning, generation

T = TypeVar("T")
ACCESS = 1
CHARGING = 2  # where submissions are charged and the quota trees (quotas.services.charge_cache, .state)
INVENTORY = 4  # what a node adds to its node pool's capacity: ready, cordon, allocatable, GPU product
CONFIG_GENERATION = "config"  # its key among the values read with the epochs
_local = threading.local()  # the epochs read during the current request (gthread workers: per thread)
_UNREAD = object()


def _table() -> str:
    return connection.ops.quote_name(AccessEpoch._meta.db_table)


def current(epoch: int = ACCESS) -> int | None:
    """The committed value of `epoch` (None: no row, caches off). Read once per request, then remembered."""
    return _values().get(epoch)


def config_generation() -> str | None:
    """The config generation (portal.generation), read with the epochs: None on SQLite, before any config
    write, or while no epoch row exists (caches off)."""
    return _values().get(CONFIG_GENERATION)


def _values() -> dict[object, object]:
    """Every epoch's committed value, and the config generation: one query, once per request."""
    remembered = getattr(_local, "epochs", None)
    if remembered is not None and remembered is not _UNREAD:
        return remembered
    generation_sql = generation.read_sql(connection.vendor)
    with connection.cursor() as cursor:
        if generation_sql is None:
            cursor.execute(f"SELECT id, value FROM {_table()}")  # noqa: S608 - a model's table name
            values = dict(cursor.fetchall())
        else:  # the scalar subquery is evaluated once, whatever the number of rows
            cursor.execute(f"SELECT id, value, {generation_sql} FROM {_table()}")  # noqa: S608
            rows = cursor.fetchall()
            values = {epoch: value for epoch, value, _ in rows}
            if rows:
                values[CONFIG_GENERATION] = rows[0][2]
    if remembered is _UNREAD:  # inside a request: keep them for the rest of the request
        _local.epochs = values
    return values


def bump(epoch: int = ACCESS) -> None:
    """Move `epoch` on (in the caller's transaction): every answer cached under it becomes stale."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {_table()} (id, value) VALUES (%s, %s) ON CONFLICT (id) "  # noqa: S608
            f"DO UPDATE SET value = {_table()}.value + 1",
            [epoch, secrets.randbelow(2**48)],
        )
    forget()


def forget() -> None:
    """Read the epochs and the generation again at their next use in this request (after a write that the
    request's own later reads must see)."""
    if getattr(_local, "epochs", None) is not None:
        _local.epochs = _UNREAD


def _stamp(epochs: tuple[int, ...]) -> tuple | None:
    """The epochs' values to key a cache on now; None when caching must not happen (a transaction is open, or
    an epoch has no row)."""
    if connection.in_atomic_block:
        return None
    values = _values()
    stamp = tuple(values.get(e) for e in epochs)
    return None if None in stamp else stamp


class EpochCache:
    """A bounded per-process cache whose entries hold only while `epoch` (by default the access epoch; or a
    tuple of epochs, when what it keeps depends on several: all of them) stays put."""

    def __init__(self, size: int = 4096, epoch: int | tuple[int, ...] = ACCESS, long_lived: bool = False) -> None:
        self.size = size
        self.epochs = epoch if isinstance(epoch, tuple) else (epoch,)
        self.long_lived = long_lived  # its values are large: freeze them once filled (portal.gc_tuning)
        self._entries: dict = {}

    def lookup(self, key, load: Callable[[], T]) -> T:
        stamp = _stamp(self.epochs)
        if stamp is None:
            return load()
        now = time.monotonic()
        entry = self._entries.get(key)
        if entry is not None and entry[0] == stamp and now - entry[1] < settings.ACCESS_CACHE_SECONDS:
            return entry[2]
        value = load()
        if len(self._entries) >= self.size:
            self._entries.clear()
        self._entries[key] = (stamp, now, value)
        self._filled()
        return value

    def lookup_many(self, keys, load: Callable[[list], dict]) -> dict:
        """`lookup` for many keys at once: `load(missing keys)` → {key: value} reads only those not cached."""
        keys = list(keys)
        stamp = _stamp(self.epochs)
        if stamp is None:
            return load(keys)
        now = time.monotonic()
        found, missing = {}, []
        for key in keys:
            entry = self._entries.get(key)
            if entry is not None and entry[0] == stamp and now - entry[1] < settings.ACCESS_CACHE_SECONDS:
                found[key] = entry[2]
            else:
                missing.append(key)
        if missing:
            loaded = load(missing)
            if len(self._entries) + len(loaded) > self.size:
                self._entries.clear()
            for key, value in loaded.items():
                self._entries[key] = (stamp, now, value)
            found.update(loaded)
            self._filled()
        return found

    def _filled(self) -> None:
        if self.long_lived:
            gc_tuning.settle_soon()


def _request_started(**kwargs) -> None:
    _local.epochs = _UNREAD


def end_request() -> None:
    """Forget the epochs read during the current request: read them afresh at each use from now on."""
    _local.epochs = None


def _request_finished(**kwargs) -> None:
    end_request()


request_started.connect(_request_started, dispatch_uid="access-epoch-request-started")
request_finished.connect(_request_finished, dispatch_uid="access-epoch-request-finished")
