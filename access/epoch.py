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
  hand in SQL is seen within that time. A long-lived cache's entries (large and slow to read: the quota trees)
  are read again in a thread of their own once three quarters of that time has passed and they are used again,
  so no request waits for their refill while traffic keeps them in use; a refill equal to what it replaces
  keeps the old object, so what is memoised on its identity holds.

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

import logging
import secrets
import threading
import time
from collections.abc import Callable
from typing import TypeVar

from django.conf import settings
from django.core.signals import request_finished, request_started
from django.db import connection, connections

from access.models import AccessEpoch
from portal import gc_tuning, generation

T = TypeVar("T")
ACCESS = 1
CHARGING = 2  # where submissions are charged and the quota trees (quotas.services.charge_cache, .state)
INVENTORY = 4  # what a node adds to its node pool's capacity: ready, cordon, allocatable, GPU product
CONFIG_GENERATION = "config"  # its key among the values read with the epochs
_local = threading.local()  # the epochs read during the current request (gthread workers: per thread)
_UNREAD = object()
REFRESH_AHEAD = 0.75  # a long-lived entry used when this share of ACCESS_CACHE_SECONDS is past is read again
log = logging.getLogger(__name__)
clock = time.monotonic  # entries' age (tests move it on instead of waiting)
_FRESH, _AGING = "fresh", "aging"  # EpochCache._holds


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
    tuple of epochs, when what it keeps depends on several: all of them) stays put. `long_lived`: its values
    are large and slow to read; they are frozen once filled (portal.gc_tuning) and refreshed ahead of expiry."""

    def __init__(self, size: int = 4096, epoch: int | tuple[int, ...] = ACCESS, long_lived: bool = False) -> None:
        self.size = size
        self.epochs = epoch if isinstance(epoch, tuple) else (epoch,)
        self.long_lived = long_lived
        self._entries: dict = {}
        self._refreshing: set = set()  # keys a thread is reading again
        self._lock = threading.Lock()

    def lookup(self, key, load: Callable[[], T]) -> T:
        stamp = _stamp(self.epochs)
        if stamp is None:
            return load()
        now = clock()
        entry = self._entries.get(key)
        held = self._holds(entry, stamp, now)
        if held:
            if held == _AGING:
                self._refresh_ahead([key], lambda keys: {key: load()})
            return entry[2]
        value = load()
        self._store(stamp, now, {key: value})
        return value

    def lookup_many(self, keys, load: Callable[[list], dict]) -> dict:
        """`lookup` for many keys at once: `load(missing keys)` → {key: value} reads only those not cached."""
        keys = list(keys)
        stamp = _stamp(self.epochs)
        if stamp is None:
            return load(keys)
        now = clock()
        found, missing, aging = {}, [], []
        for key in keys:
            entry = self._entries.get(key)
            held = self._holds(entry, stamp, now)
            if held:
                found[key] = entry[2]
                if held == _AGING:
                    aging.append(key)
            else:
                missing.append(key)
        if missing:
            loaded = load(missing)
            self._store(stamp, now, loaded)
            found.update(loaded)
        if aging:
            self._refresh_ahead(aging, load)
        return found

    def _holds(self, entry, stamp: tuple, now: float) -> str:
        """Whether `entry` may be served: "" (no: another stamp, or expired), _FRESH, or _AGING (a long-lived
        entry past REFRESH_AHEAD of its life: served, and read again beside)."""
        if entry is None or entry[0] != stamp:
            return ""
        age, lifetime = now - entry[1], settings.ACCESS_CACHE_SECONDS
        if age >= lifetime:
            return ""
        return _AGING if self.long_lived and age >= lifetime * REFRESH_AHEAD else _FRESH

    def _store(self, stamp: tuple, now: float, loaded: dict, *, keep_equal: bool = False) -> None:
        if len(self._entries) + len(loaded) > self.size:
            self._entries.clear()
        for key, value in loaded.items():
            old = self._entries.get(key) if keep_equal else None
            self._entries[key] = (stamp, now, old[2] if old is not None and old[2] == value else value)
        if loaded and self.long_lived:
            gc_tuning.settle_soon()

    def _refresh_ahead(self, keys: list, load: Callable[[list], dict]) -> None:
        """Read `keys` again in a thread of its own, with its own connection, and keep what it reads."""
        with self._lock:
            keys = [key for key in keys if key not in self._refreshing]
            self._refreshing.update(keys)
        if keys:
            threading.Thread(target=self._refresh, args=(keys, load), name="epoch-cache-refresh", daemon=True).start()

    def _refresh(self, keys: list, load: Callable[[list], dict]) -> None:
        try:
            stamp = _stamp(self.epochs)  # read before the values, as on a request
            if stamp is not None:
                self._store(stamp, clock(), load(keys), keep_equal=True)
        except Exception:  # noqa: BLE001 - the entries then expire as they would have; the next request reads them
            log.warning("refreshing %d cache entries ahead of their expiry failed", len(keys), exc_info=True)
        finally:
            connections.close_all()  # this thread's own
            with self._lock:
                self._refreshing.difference_update(keys)


def _request_started(**kwargs) -> None:
    _local.epochs = _UNREAD


def end_request() -> None:
    """Forget the epochs read during the current request: read them afresh at each use from now on."""
    _local.epochs = None


def _request_finished(**kwargs) -> None:
    end_request()


request_started.connect(_request_started, dispatch_uid="access-epoch-request-started")
request_finished.connect(_request_finished, dispatch_uid="access-epoch-request-finished")
