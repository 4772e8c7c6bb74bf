"""Which watcher replica acts on which backend: a lease per (watcher, backend), a fair share per replica.

Several replicas of one watcher (`watch_cluster` or `watch_workflows`) share the backends: each backend is
watched by the one replica holding its `WatcherLease` row. Everything is a conditional UPDATE on plain
columns, timed by the database's clock (`Now()`, so the replicas' clocks need not agree), and works alike on
PostgreSQL and SQLite (`make dev`); a PostgreSQL advisory lock would not (docs/operations.md#watcher-shards).

* A replica `join`s (its `WatcherReplica` row: live while `expires_at` is ahead) and `beat`s every renewal.
* `acquire`: take a lease that is free, expired, or held under this replica's own name by an earlier
  process; the `token` grows by one, so whatever the previous holder still tries is refused.
* `renew` every `WATCHER_LEASE_RENEW_SECONDS`: `expires_at` moves to now + `WATCHER_LEASE_SECONDS`; a lease
  another replica took meanwhile is reported lost. The replica also keeps a local deadline (monotonic: when
  it asked for the renewal, plus the lease) and stops acting on a backend once it is past.
* `fence`, in the transaction of every write under a lease: the row must still name this holder and token
  and be unexpired, and it records the resourceVersion the write applied (`versions`); otherwise nothing is
  written. So a write of a holder whose lease was lost or expired is refused, and the next holder resumes
  exactly after the last event written.
* `plan`: the share. Each replica targets ceil(backends / live replicas); one above it releases the extra
  leases (`release`: free at once), one below takes free ones.
"""

from __future__ import annotations

import math
import os
import socket
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import timedelta
from functools import reduce
from operator import or_

from django.db.models import F, Q
from django.db.models.functions import Now

from clusters.models import WatcherLease, WatcherReplica


class ReplicaReplaced(Exception):
    """Another process started under this replica's name: this one must stop."""


@dataclass
class Held:
    """A lease this process holds: the backend, the fencing token, the versions it starts from, and the
    local (monotonic) deadline after which it stops acting on the backend unless renewed."""

    backend: int
    token: int
    deadline: float
    versions: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Plan:
    release: tuple[int, ...]
    acquire: tuple[int, ...]
    target: int


def target(backends: int, replicas: int) -> int:
    """The fair share: ceil(backends / live replicas) (a replica that counts at least itself)."""
    return math.ceil(backends / max(replicas, 1))


def plan(held: Iterable[int], scope: Iterable[int], free: Iterable[int], replicas: int) -> Plan:
    """What one replica does this pass: release what is out of scope and above its share, take free
    backends up to its share. Pure: `held` its leases, `scope` the backends to watch (taken in this order),
    `free` those of the scope nobody holds (free or expired), `replicas` the live replicas of the watcher."""
    scope = list(dict.fromkeys(scope))
    held, free, in_scope = set(held), set(free), set(scope)
    share = target(len(scope), replicas)
    kept = [b for b in scope if b in held]
    release = sorted(held - in_scope) + kept[share:]
    acquire = [b for b in scope if b in free and b not in held][: max(0, share - len(kept))]
    return Plan(tuple(release), tuple(acquire), share)


def default_name() -> str:
    """The host name: a Kubernetes pod's name, so a restarted container takes its leases back at once."""
    return os.environ.get("WATCHER_REPLICA") or socket.gethostname()


class Leases:
    """One replica's side of the leases of one watcher."""

    def __init__(self, watcher: str, name: str, *, seconds: float, renew_seconds: float) -> None:
        self.watcher, self.name = watcher, name
        self.seconds, self.renew_seconds = seconds, renew_seconds
        self.nonce = uuid.uuid4().hex

    def _expiry(self):
        return Now() + timedelta(seconds=self.seconds)

    def _rows(self):
        return WatcherLease.objects.filter(watcher=self.watcher)

    # ----------------------------------------------------------------------------- the replica

    def join(self) -> None:
        """Register (or take over) this replica's name; it counts as live from now on. Rows of replicas gone
        for a day (pods of past rollouts) are removed."""
        WatcherReplica.objects.filter(watcher=self.watcher, expires_at__lt=Now() - timedelta(days=1)).delete()
        WatcherReplica.objects.update_or_create(
            watcher=self.watcher,
            name=self.name,
            defaults={
                "nonce": self.nonce,
                "host": socket.gethostname()[:253],
                "pid": os.getpid(),
                "beat_at": Now(),
                "expires_at": self._expiry(),
            },
        )

    def beat(self) -> None:
        """Stay live; `ReplicaReplaced` when a later process took the name."""
        rows = WatcherReplica.objects.filter(watcher=self.watcher, name=self.name, nonce=self.nonce)
        if not rows.update(beat_at=Now(), expires_at=self._expiry()):
            raise ReplicaReplaced(f"{self.watcher}: another process runs as replica {self.name!r}")

    def leave(self, held: Iterable[Held]) -> None:
        """At a clean stop: free every lease at once and stop counting as a replica."""
        for lease in held:
            self.release(lease)
        WatcherReplica.objects.filter(watcher=self.watcher, name=self.name, nonce=self.nonce).delete()

    def live_replicas(self) -> int:
        return WatcherReplica.objects.filter(watcher=self.watcher, expires_at__gt=Now()).count()

    # ----------------------------------------------------------------------------- the leases

    def ensure(self, backends: Iterable[int]) -> None:
        """A lease row (free) for each backend that has none yet."""
        rows = [WatcherLease(watcher=self.watcher, backend_id=b) for b in backends]
        WatcherLease.objects.bulk_create(rows, ignore_conflicts=True)

    def free(self, backends: Iterable[int]) -> list[int]:
        """Which of these backends another replica does not hold now (free, expired, or our name's)."""
        takeable = Q(holder="") | Q(expires_at__lte=Now()) | Q(expires_at__isnull=True) | Q(holder=self.name)
        return sorted(self._rows().filter(takeable, backend_id__in=list(backends)).values_list("backend_id", flat=True))

    def acquire(self, backend: int) -> Held | None:
        """Take the backend's lease if nobody else holds it; a new token. None: another replica has it."""
        asked = time.monotonic()
        takeable = Q(holder="") | Q(expires_at__lte=Now()) | Q(expires_at__isnull=True) | Q(holder=self.name)
        taken = (
            self._rows()
            .filter(takeable, backend_id=backend)
            .update(
                holder=self.name,
                token=F("token") + 1,
                acquired_at=Now(),
                renewed_at=Now(),
                expires_at=self._expiry(),
            )
        )
        if not taken:
            return None
        token, versions = self._rows().filter(backend_id=backend).values_list("token", "versions").get()
        return Held(backend, token, asked + self.seconds, dict(versions or {}))

    def renew(self, held: dict[int, Held]) -> list[int]:
        """Extend every lease still ours (holder and token); returns the backends whose lease was lost."""
        if not held:
            return []
        asked = time.monotonic()
        ours = reduce(or_, (Q(backend_id=h.backend, token=h.token) for h in held.values()))
        rows = self._rows().filter(ours, holder=self.name)
        rows.update(renewed_at=Now(), expires_at=self._expiry())
        kept = set(rows.values_list("backend_id", flat=True))
        for backend in kept:
            held[backend].deadline = asked + self.seconds
        return sorted(set(held) - kept)

    def release(self, lease: Held, *, forget_versions: bool = False) -> bool:
        """Free the lease at once (another replica may take it on its next pass); `forget_versions`: the next
        holder lists afresh rather than resuming (the backend's connection changed)."""
        rows = self._rows().filter(backend_id=lease.backend, holder=self.name, token=lease.token)
        changes = {"versions": {}} if forget_versions else {}
        return bool(rows.update(holder="", expires_at=Now(), **changes))

    def fence(self, lease: Held, versions: dict | None = None) -> bool:
        """In the caller's transaction, before its write: is the lease still ours and unexpired? Records
        `versions` (the resourceVersions the write applies) with it. False: write nothing.

        The UPDATE locks the row until the caller commits, so a replica taking the lease over waits for the
        write and then reads the versions it recorded."""
        if time.monotonic() >= lease.deadline:
            return False
        changes = {"applied_at": Now()}
        if versions is not None:
            changes["versions"] = versions
        rows = self._rows().filter(backend_id=lease.backend, holder=self.name, token=lease.token, expires_at__gt=Now())
        return bool(rows.update(**changes))


# ------------------------------------------------------------------------------------------ reading them


@dataclass(frozen=True)
class Shard:
    watcher: str
    backend: str
    holder: str
    token: int
    live: bool
    expires_in: float | None
    versions: dict


def shards(watcher: str | None = None) -> tuple[list[Shard], list[WatcherReplica]]:
    """Every lease (backend, holder, whether it is live) and every live replica, for `manage.py watchers`,
    the admin and `/metrics`."""
    from django.utils import timezone

    now = timezone.now()
    leases = WatcherLease.objects.select_related("backend").order_by("watcher", "backend__name")
    replicas = WatcherReplica.objects.filter(expires_at__gt=now).order_by("watcher", "name")
    if watcher:
        leases, replicas = leases.filter(watcher=watcher), replicas.filter(watcher=watcher)
    rows = []
    for lease in leases:
        left = (lease.expires_at - now).total_seconds() if lease.expires_at else None
        live = bool(lease.holder) and left is not None and left > 0
        rows.append(
            Shard(lease.watcher, lease.backend.name, lease.holder, lease.token, live, left, dict(lease.versions))
        )
    return rows, list(replicas)
