"""The replica side of a watcher's leases (clusters.leases), mixed into `clusters.watchloop.BackendWatcher`.

Every `check_seconds_leases` the loop's pass (`_shard_pass`) renews what it holds (when due), drops what was
lost or whose local deadline passed, releases what is above its fair share (or no longer connected) and
takes free backends up to it, starting (`_watch`) or stopping (`_unwatch`) their watch threads. Every write
of an item goes through the lease's fence: `fenced_write` wraps the write in a transaction whose first
statement is the fence; `fence_of` hands the fence to code that runs its own transaction (the inventory's).
A write refused drops the backend at once, with whatever it had queued.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable
from typing import TypeVar

from django.db import transaction

from clusters import heartbeat
from clusters.kube.errors import KubeError
from clusters.leases import Held, ReplicaReplaced, plan

log = logging.getLogger("clusters.watchloop")
T = TypeVar("T")


class Sharded:
    """Needs, from the watcher: `leases`, `held`, `identities`, `backends`, `names`, `command`, `client_factory`,
    `lags`, `fenced`, `replaced`, `check_seconds_leases`, `_next_pass`, `_next_renew`, `_ensured`, `_halt`,
    `_stopping`, `_watch`, `_threads_of`, `_not_watched`, `_apply`, `beat_now` and `_new_lag`."""

    def _shard_pass(self) -> list[str]:
        """Renew (when due), drop what was lost, take free backends up to the fair share, release the extra."""
        from clusters import inventory

        now = time.monotonic()
        self._next_pass = now + self.check_seconds_leases
        if now >= self._next_renew:
            self._renew()
        if self._stopping.is_set():
            return []
        for backend, lease in list(self.held.items()):
            if time.monotonic() >= lease.deadline:
                self._drop(backend, "its lease was not renewed in time")
        backends = {b.pk: b for b in inventory.connected_backends(self.names)}
        for backend in [pk for pk in self.held if pk in backends and self._moved(backends[pk])]:
            self._release(backend, "its connection settings changed", forget_versions=True)
        if set(backends) - self._ensured:  # a backend seen for the first time: its lease row, free
            self.leases.ensure(set(backends) - self._ensured)
            self._ensured |= set(backends)
        share = plan(self.held, backends, self.leases.free(backends), self.leases.live_replicas())
        for backend in share.release:
            self._release(backend)
        lines = []
        for backend in share.acquire:
            lease = self.leases.acquire(backend)
            if lease is not None:
                lines.extend(self._take(backends[backend], lease))
            if time.monotonic() >= self._next_renew:  # a long first sync: keep the others' leases
                self._renew()
        return lines

    def _renew(self) -> None:
        """Beat and renew; when the database fails meanwhile, the loop's guard retries the pass, renewal first."""
        due = time.monotonic() + self.leases.renew_seconds
        try:
            self.leases.beat()
        except ReplicaReplaced as error:
            log.error("%s; stopping (its backends are the other process's now)", error)
            self.replaced = True
            self._halt.set()
            self._stopping.set()
            return
        for backend in self.leases.renew(self.held):
            self._drop(backend, "another replica holds its lease now")
        self._next_renew = due

    def _moved(self, backend) -> bool:
        """The backend now names another API server or namespace than the one its watch was started on."""
        now = backend.watched_identity()
        return self.identities.get(backend.pk, now) != now

    def _take(self, backend, lease: Held) -> list[str]:
        self.held[backend.pk] = lease
        self.identities[backend.pk] = backend.watched_identity()
        heartbeat.forget_backend(self.command, backend.pk)  # the previous holder's row says nothing of us
        self.lags[backend.pk] = self._new_lag()
        self.beat_now()
        log.info("%s: replica %s took backend %s (token %d)", self.command, self.leases.name, backend, lease.token)
        try:
            kube = self.client_factory(backend)
        except KubeError as error:  # unusable settings: nothing to watch until they are fixed
            self._not_watched(backend, error)
            return [f"not watched: {error}"]
        try:
            return self._watch(backend, kube, lease)
        except BaseException:  # e.g. the database went away during the first sync: give it back, try again
            self.held.pop(backend.pk, None)
            self._unwatch(backend.pk)
            kube.close()
            with contextlib.suppress(Exception):  # else it expires; under our name we may take it back sooner
                self.leases.release(lease)
            raise

    def _release(
        self, backend: int, why: str = "above its share, or no longer connected", *, forget_versions: bool = False
    ) -> None:
        """Stop watching, then free the lease for another replica (or for this one's next pass)."""
        lease = self.held.pop(backend)
        self.identities.pop(backend, None)
        self._unwatch(backend)
        self.leases.release(lease, forget_versions=forget_versions)
        log.info("%s: replica %s released backend #%s (%s)", self.command, self.leases.name, backend, why)

    def _drop(self, backend: int, why: str) -> None:
        """The lease is lost or expired: stop acting on the backend now (its queued items are dropped)."""
        self.held.pop(backend, None)
        self.identities.pop(backend, None)
        self._unwatch(backend)
        log.warning("%s: replica %s stopped watching backend #%s: %s", self.command, self.leases.name, backend, why)

    def _unwatch(self, backend: int) -> None:
        for state in [s for s in self.backends if s.pk == backend]:
            self.backends.remove(state)
            for watched in self._threads_of(state):
                watched.closed = True
                watched.wake.set()
                if watched.current is not None:
                    watched.current.shutdown()
            state.kube.close()

    def _held_lease(self, state) -> Held | None:
        """The lease `state` was started under, if still held (None: its items are dropped)."""
        lease = self.held.get(state.pk)
        return lease if lease is not None and lease is getattr(state, "lease", None) else None

    def fence_of(self, state, versions: dict | None = None) -> Callable[[], bool] | None:
        """The lease's fence, for code that runs its own transaction (the inventory's): call it first in that
        transaction; it records `versions` into the lease's. None: the lease is no longer held."""
        lease = self._held_lease(state)
        if lease is None:
            self.fenced += 1
            return None

        def fence() -> bool:
            recorded = {**lease.versions, **versions} if versions else None
            if not self.leases.fence(lease, recorded):
                return False
            if recorded is not None:
                lease.versions = recorded
            return True

        return fence

    def fenced_write(self, state, write: Callable[[], T], versions: dict | None = None) -> tuple[bool, T | None]:
        """`write()` in one transaction with the lease's fence (recording `versions` into the lease's).
        (False, None) and nothing written when the lease is no longer ours: the backend is then dropped."""
        lease = self._held_lease(state)
        recorded = {**lease.versions, **versions} if lease is not None and versions else None
        with transaction.atomic():
            if lease is None or not self.leases.fence(lease, recorded):
                lost = True
            else:
                lost, result = False, write()
        if lost:
            if lease is not None:
                self._drop(state.pk, "its lease is lost or expired (a write was refused)")
            self.fenced += 1
            return False, None
        if recorded is not None:
            lease.versions = recorded
        return True, result

    def _apply_item(self, item: tuple) -> int:
        state = getattr(item[1], "backend", item[1])  # a stream of the backend, or the backend's state
        if self._held_lease(state) is None:  # released or lost since the item was queued
            self.fenced += 1
            return 0
        done, applied = self.fenced_write(state, lambda: self._apply(item), self._version_of(item))
        return applied if done else 0

    def _version_of(self, item: tuple) -> dict | None:
        """The resourceVersion(s) applying `item` brings the backend's streams to, e.g. {"pods": "42"}."""
        return None
