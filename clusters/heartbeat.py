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

from clusters.models import WatcherHeartbeat

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


def forget(watcher: str, names: list[str] | None) -> None:
    """At start, before the first sync: drop the watcher's rows of the backends in its scope (those named,
    or all). Until its first beat the probe then says so, rather than passing on the previous run's rows;
    and a backend it no longer watches (disconnected, unusable settings) leaves no row to fail it forever."""
    rows = WatcherHeartbeat.objects.filter(watcher=watcher)
    if names:
        rows = rows.filter(backend__name__in=names)
    rows.delete()


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
