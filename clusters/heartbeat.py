"""The watchers' heartbeats: one `WatcherHeartbeat` row per watcher and backend (docs/operations.md).

The watch loop (clusters.watchloop) writes `beat` every few seconds for each backend whose watch threads
are alive; `stale` answers the watchers' probe (`manage.py watcher_health`), `/metrics` reads the rows.
A watcher stuck in a deadlock, a dead watch thread or a loop blocked on its database stops beating: the
probe then fails and Kubernetes restarts the pod. A cluster that does not answer does not stop the beat
(its threads are alive, backing off): a restart would not bring it back.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from django.utils import timezone

from clusters.models import WatcherHeartbeat, WatcherLease, WatcherReplica

WATCHERS = ("watch_cluster", "watch_workflows")


@dataclass(frozen=True)
class Beat:
    backend: int
    lag_seconds: float
    last_event_at: datetime | None
    events: int


def beat(watcher: str, beats: Iterable[Beat]) -> None:
    """Refresh the rows of `watcher` for these backends, in one statement."""
    now = timezone.now()
    rows = [
        WatcherHeartbeat(
            watcher=watcher,
            backend_id=b.backend,
            beat_at=now,
            lag_seconds=b.lag_seconds,
            last_event_at=b.last_event_at,
            events=b.events,
        )
        for b in beats
    ]
    if rows:
        WatcherHeartbeat.objects.bulk_create(
            rows,
            update_conflicts=True,
            unique_fields=["watcher", "backend"],
            update_fields=["beat_at", "lag_seconds", "last_event_at", "events"],
        )


def forget_others(watcher: str, connected: list[int]) -> None:
    """At start: drop the watcher's rows of backends no longer connected (no replica watches them, so no
    row should fail the probe forever). Rows of connected backends belong to whichever replica holds them."""
    WatcherHeartbeat.objects.filter(watcher=watcher).exclude(backend_id__in=connected).delete()


def forget_backend(watcher: str, backend: int) -> None:
    """A replica took the backend's lease: the previous holder's row goes; until the new holder's first beat
    the probe says so, rather than passing or failing on the previous holder's row."""
    WatcherHeartbeat.objects.filter(watcher=watcher, backend_id=backend).delete()


@dataclass(frozen=True)
class Health:
    ok: bool
    lines: list[str]


def health(watcher: str, names: list[str] | None, max_age: float) -> Health:
    """Is every backend the watcher watches (those named, else every one it has a row for) beating within
    `max_age` seconds? No row at all is a failure: the watcher has not beaten yet (or watches nothing)."""
    now = timezone.now()
    rows = {
        name: (beat_at, lag)
        for name, beat_at, lag in WatcherHeartbeat.objects.filter(watcher=watcher)
        .order_by("backend__name")
        .values_list("backend__name", "beat_at", "lag_seconds")
    }
    wanted = list(names) if names else list(rows)
    if not wanted:
        return Health(False, [f"{watcher}: no heartbeat yet"])
    lines, ok = [], True
    for name in wanted:
        if name not in rows:
            ok = False
            lines.append(f"{watcher} {name}: no heartbeat")
            continue
        age = (now - rows[name][0]).total_seconds()
        fresh = age <= max_age
        ok = ok and fresh
        state = "ok" if fresh else f"stale (more than {max_age:g}s)"
        lines.append(f"{watcher} {name}: {state}, beat {age:.0f}s ago, lag {rows[name][1]:.2f}s")
    return Health(ok, lines)


def replica_health(watcher: str, name: str, max_age: float) -> Health:
    """The probe of one replica (`watcher_health WATCHER --this-replica`): does its loop beat within `max_age`
    seconds, and does it beat for every backend whose lease it holds? A backend taken less than `max_age`
    ago may have no row yet (its first sync runs); a replica holding nothing passes on its own beat."""
    now = timezone.now()
    replica = WatcherReplica.objects.filter(watcher=watcher, name=name).first()
    if replica is None:
        return Health(False, [f"{watcher} replica {name}: not running (no replica row)"])
    age = (now - replica.beat_at).total_seconds()
    ok = age <= max_age
    lines = [f"{watcher} replica {name}: {'ok' if ok else f'stale (more than {max_age:g}s)'}, beat {age:.0f}s ago"]
    held = WatcherLease.objects.filter(watcher=watcher, holder=name, expires_at__gt=now).order_by("backend__name")
    beats = dict(
        WatcherHeartbeat.objects.filter(watcher=watcher, backend__in=held.values("backend")).values_list(
            "backend_id", "beat_at"
        )
    )
    for backend, backend_name, acquired_at in held.values_list("backend_id", "backend__name", "acquired_at"):
        beat_at = beats.get(backend)
        if beat_at is None:
            starting = acquired_at is not None and (now - acquired_at).total_seconds() <= max_age
            ok = ok and starting
            lines.append(f"{watcher} {backend_name}: {'taken, first beat pending' if starting else 'no heartbeat'}")
            continue
        backend_age = (now - beat_at).total_seconds()
        ok = ok and backend_age <= max_age
        state = "ok" if backend_age <= max_age else f"stale (more than {max_age:g}s)"
        lines.append(f"{watcher} {backend_name}: {state}, beat {backend_age:.0f}s ago")
    return Health(ok, lines)
