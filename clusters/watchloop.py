"""What both long-running watchers share (`watch_cluster`: clusters.inventory_watch; `watch_workflows`:
workflows.watcher): watch threads queue items, the caller's thread applies them.

Database work then happens in one thread, in order. `EventDrain` is the loop: subclasses say what a queued
item does (`_apply`) and what runs between items (`_tick`: relists, periodic jobs). `BackendWatcher` adds
the backends: connect each one (`start`), one thread per watched stream (`WatchThread`), the backoff
between failed watches, and `stop`. `WatchCommand` is the management command around a `BackendWatcher`.

Replicas (clusters.leases; the replica side is clusters.watchshards): a `BackendWatcher` watches only the
backends whose lease it holds. Every `check_seconds_leases` its loop renews what it holds (when due),
takes free backends up to its fair share and releases what is above it, and starts or stops watching
accordingly. Every write of an item runs in one transaction with the lease's fence (holder, token,
unexpired), which records the resourceVersion the item applied: a lost or expired lease stops the writes
at once (the backend is dropped, its queued items too), and the next holder resumes after the last item
written.

The database may go away under the loop (a restart, a failover, connections terminated by an operator).
Before each batch (at most every `check_every` seconds) the loop drops connections that are unusable or
too old (`close_if_unusable_or_obsolete`; with `CONN_HEALTH_CHECKS` the next query checks the connection
first). When applying an item still fails with a connection error, the connection is closed and the same
item is applied again, after a backoff that doubles up to `database_retry_max`: no event is skipped while
the database is away, and the watch threads keep queueing meanwhile. The fault is logged as a line when it
starts and a line with the count when it ends (`portal.faultlog`), not once per failure. An item the
database keeps refusing while it answers (a bad event, not a lost connection) is skipped after
`ITEM_ATTEMPTS` attempts and counted in `dropped`.
"""

from __future__ import annotations

import logging
import os
import queue
import signal
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from django.conf import settings
from django.core.management.base import CommandError
from django.db import DEFAULT_DB_ALIAS, InterfaceError, OperationalError, connections
from django.utils import timezone

from clusters import heartbeat
from clusters.kube.connection import KubeClient, connect
from clusters.kube.errors import KubeError
from clusters.leases import Held, Leases, default_name
from clusters.watchshards import Sharded
from portal import backoff
from portal.commands import LongRunningCommand
from portal.dblock import is_locked
from portal.faultlog import FaultLog

log = logging.getLogger(__name__)
BACKOFF_START, BACKOFF_MAX = 1.0, 60.0  # seconds before a watch reconnects: doubling, up to the maximum
DATABASE_ERRORS = (OperationalError, InterfaceError)  # the connection is gone (or the server refuses work)
DATABASE_RETRY_START, DATABASE_RETRY_MAX = 0.1, 10.0  # seconds between attempts while the database is away
ITEM_ATTEMPTS = 5  # attempts at one item while the database answers, before it is deemed the item's fault
DATABASE = "database"
T = TypeVar("T")


class Halted(Exception):
    """The loop was asked to stop while it waited for the database."""


def close_broken_connections() -> None:
    """Close the thread's connections after a connection error (each reconnects on its next query)."""
    for conn in connections.all(initialized_only=True):
        conn.close()


def database_answers() -> bool:
    """Does the default database take a new connection and answer `SELECT 1`?"""
    conn = connections[DEFAULT_DB_ALIAS]
    try:
        conn.ensure_connection()
        return conn.is_usable()
    except DATABASE_ERRORS:
        conn.close()
        return False


class EventDrain:
    backoff_max = BACKOFF_MAX
    check_every = 1.0  # seconds: connections are checked before a batch, at most this often
    database_retry_max = DATABASE_RETRY_MAX
    errors = 0  # items whose applying failed (logged, skipped)

    def _backoff(self, failures: int) -> float:
        """How long a watch thread waits after its `failures`-th failure in a row."""
        return backoff.capped(BACKOFF_START, self.backoff_max, failures)

    def _database_backoff(self, failures: int) -> float:
        """The first retry reconnects at once (a terminated session); then doubling, up to the maximum."""
        return 0.0 if failures <= 1 else backoff.capped(DATABASE_RETRY_START, self.database_retry_max, failures - 1)

    def __init__(self) -> None:
        self.events: queue.Queue = queue.Queue()
        self._stopping = threading.Event()
        self._halt = self._stopping  # `run(stop)` makes the command's stop event interrupt database waits too
        self.faults = FaultLog(log, type(self).__name__)
        self.dropped = 0  # items not applied (an error that was not a lost connection, or a stop mid-retry)
        self._next_check = 0.0

    def run(self, stop: threading.Event) -> None:
        """The long-running loop of the management command."""
        self._halt = stop
        try:
            while not stop.is_set():
                self.process(timeout=1.0)
        finally:
            self.faults.close()

    def process(self, timeout: float = 0.0) -> int:
        """Apply queued items (waiting up to `timeout` for the first) and run `_tick` between them."""
        applied = 0
        deadline = time.monotonic() + timeout
        while True:
            self._check_connections()
            self.faults.tick()
            self._guarded(self._tick, "work between events")
            self._guarded(self._beat, "heartbeat")
            if self._halt.is_set():
                return applied
            try:
                item = self.events.get(timeout=max(0.0, min(deadline - time.monotonic(), 0.2)))
            except queue.Empty:
                if time.monotonic() >= deadline:
                    return applied
                continue
            applied += self._handle(item)
            if self._halt.is_set():
                return applied
            deadline = time.monotonic()  # after the first item, drain what is already queued

    def _tick(self) -> None:
        """Work due between items."""

    def _beat(self) -> None:
        """Say the loop is alive (BackendWatcher: clusters.heartbeat)."""

    def _apply(self, item: tuple) -> int:
        raise NotImplementedError

    def _apply_item(self, item: tuple) -> int:
        """`_apply`, within whatever guards the item's writes (BackendWatcher: its backend's lease)."""
        return self._apply(item)

    # ----------------------------------------------------------------------------- the database

    def _check_connections(self) -> None:
        """Before a batch: drop connections that errored and do not answer, or are past CONN_MAX_AGE."""
        now = time.monotonic()
        if now < self._next_check:
            return
        self._next_check = now + self.check_every
        for conn in connections.all(initialized_only=True):
            if not conn.in_atomic_block:  # inside a transaction (a test's): not ours to close
                conn.close_if_unusable_or_obsolete()

    def _handle(self, item: tuple) -> int:
        applied = self._guarded(lambda: self._apply_item(item), f"applying {item[0]}")
        if applied is None:  # `_apply` returns a count: None is an item given up
            self.dropped += 1
        return applied or 0

    def _guarded(self, work: Callable[[], T], what: str) -> T | None:
        """`work()` through database faults; anything else it raises is logged (de-duplicated) and skipped."""
        try:
            return self._through_database(work)
        except Halted:
            log.warning(
                "%s: stopped while %s waited for the database; the next start lists again", type(self).__name__, what
            )
        except Exception as error:  # noqa: BLE001 - one bad event (or a bug) must not stop the watcher
            self.errors += 1
            key = f"{what} failed ({type(error).__name__}: {error})"[:300]
            self.faults.failed(
                key, f"{what} failed", ended=f"{what}: no more {type(error).__name__} since", exc_info=True
            )
            self.faults.succeeded(key)  # skipped: the loop goes on; repeats within `quiet` are only counted
        return None

    def _through_database(self, work: Callable[[], T]) -> T:
        """Run `work` until the database takes it: after a connection error, close and retry with backoff.

        Raises the error when the database answers yet refused the work `ITEM_ATTEMPTS` times (the work's
        fault), and `Halted` when the loop is stopped meanwhile.
        """
        failures = 0
        while True:
            try:
                result = work()
            except DATABASE_ERRORS as error:
                failures += 1
                close_broken_connections()
                self.faults.failed(
                    DATABASE,
                    f"database connection lost ({str(error).strip()}); reconnecting and "
                    "applying the held events again until they go through",
                    ended="database connection restored; every held event was applied",
                )
                # applying is idempotent (guarded updates): a write that lost SQLite's lock waits its turn
                if failures >= ITEM_ATTEMPTS and not is_locked(error) and database_answers():
                    raise
                if self._halt.wait(self._database_backoff(failures)) or self._stopping.is_set():
                    raise Halted from error
                continue
            self.faults.succeeded(DATABASE)
            return result


# ------------------------------------------------------------------------------------------ backends


class TimedQueue(queue.Queue):
    """A queue whose `get` returns `(monotonic time of the put, item)`: how long an item waited."""

    def _put(self, item) -> None:
        super()._put((time.monotonic(), item))


@dataclass
class Lag:
    """A backend's applied events since the watcher started, and the longest wait since the last beat."""

    events: int = 0
    longest: float = 0.0
    last_event_at: Any = None  # datetime of the last applied event


@dataclass(kw_only=True)
class WatchThread:
    """One watch thread: the stream it reads now (shut down to stop it), its wake-up event, and whether its
    backend was dropped (its lease released or lost: the thread ends)."""

    thread: threading.Thread | None = None
    current: Any = None  # the open clusters.kube.node_pod_lists.WatchStream, if any
    wake: threading.Event = field(default_factory=threading.Event)
    closed: bool = False


class BackendWatcher(Sharded, EventDrain):
    """`start()`, then `process()` in a loop (or `run(stop)`), then `stop()`.

    Subclasses implement `_watch(backend, kube, lease)`: record the backend's state in `self.backends` (an
    object with `pk`, `name`, `kube` and `lease`, the `clusters.leases.Held` it acts under), start its
    threads with `_spawn`, return status lines; `_watch_threads()`; `_threads_of(state)`; `_version_of(item)`
    (the resourceVersion an item applies, recorded with the lease); and name themselves (`command`: the
    heartbeat's and the leases' watcher). Watch threads end once their thread is `closed` or the watcher stops.

    Heartbeat and lag (clusters.heartbeat): every `heartbeat_seconds` the loop writes, for each backend
    whose watch threads are alive, the time and the lag: the longest an item read from the cluster
    (an event, a listing) waited between its watch thread queueing it and its write committing, over the
    period. Items carry their backend's state second (`(what, state_or_stream, …)`).
    """

    command = ""
    heartbeat_seconds = 10.0
    LAGGED = frozenset({"event", "list"})  # items read from the cluster (not errors or reconnections)

    def __init__(
        self,
        names: list[str] | None = None,
        *,
        watch_seconds: int,
        backoff_max: float = BACKOFF_MAX,
        client_factory: Callable[..., KubeClient] = connect,
        heartbeat_seconds: float | None = None,
        replica: str | None = None,
        lease_seconds: float | None = None,
        renew_seconds: float | None = None,
    ) -> None:
        self.names = names
        if heartbeat_seconds is not None:
            self.heartbeat_seconds = heartbeat_seconds
        self.lags: dict[int, Lag] = {}
        self._next_beat = 0.0
        self.watch_seconds = watch_seconds
        self.backoff_max = backoff_max
        self.client_factory = client_factory
        self.backends: list = []
        self.applied = 0
        self.fenced = 0  # items not applied because their backend's lease was no longer held
        self.replaced = False  # another process took this replica's name: the loop stopped
        lease_seconds = settings.WATCHER_LEASE_SECONDS if lease_seconds is None else lease_seconds
        renew_seconds = settings.WATCHER_LEASE_RENEW_SECONDS if renew_seconds is None else renew_seconds
        # in-process watchers (tests) get a name of their own; the command passes the host's (clusters.leases)
        name = replica or f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.leases = Leases(self.command, name, seconds=lease_seconds, renew_seconds=renew_seconds)
        self.held: dict[int, Held] = {}
        self.identities: dict[int, str] = {}  # per backend held: Backend.watched_identity() when its watch began
        self.check_seconds_leases = max(0.2, renew_seconds / 5)  # free leases are looked for this often
        self._next_pass = self._next_renew = 0.0
        self._ensured: set[int] = set()  # backends whose lease row exists
        super().__init__()
        self.events = TimedQueue()

    def start(self) -> list[str]:
        """Join the watcher's replicas, take a fair share of the connected backends (or of those named) and
        start watching them; one line per backend taken."""
        from clusters import inventory  # the inventory's models: imported once Django is set up

        scope = [b.pk for b in inventory.connected_backends()]
        self._guarded(lambda: heartbeat.forget_others(self.command, scope), "heartbeat")
        self._guarded(self.leases.join, "joining the replicas")
        lines = self._guarded(self._shard_pass, "leases") or []
        if not self.held:
            lines.append(f"replica {self.leases.name}: no backend free to take yet; looking every renewal")
        return lines

    def stop(self, timeout: float = 5.0) -> None:
        self._stopping.set()
        watched = list(self._watch_threads())
        for stream in watched:
            stream.wake.set()
            if stream.current is not None:
                stream.current.shutdown()
        for stream in watched:
            if stream.thread is not None:
                stream.thread.join(timeout)
        for backend in self.backends:
            backend.kube.close()
        if not self.replaced:  # free the leases at once: another replica need not wait for them to expire
            held, self.held = list(self.held.values()), {}
            self._guarded(lambda: self.leases.leave(held), "releasing the leases")

    # ----------------------------------------------------------------------------- the loop

    def _new_lag(self) -> Lag:
        return Lag()

    def _handle(self, timed: tuple) -> int:
        queued, item = timed
        applied = super()._handle(item)
        if applied and item[0] in self.LAGGED:  # an item given up is no event applied
            state = getattr(item[1], "backend", item[1])  # a stream of the backend, or the backend's state
            lag = self.lags.setdefault(state.pk, Lag())
            lag.events += 1
            lag.longest = max(lag.longest, time.monotonic() - queued)
            lag.last_event_at = timezone.now()
        return applied

    def beat_now(self) -> None:
        """Beat on the loop's next pass, however recent the last beat; then every `heartbeat_seconds` again."""
        self._next_beat = 0.0

    def _beat(self) -> None:
        now = time.monotonic()
        if now >= self._next_pass and not self._stopping.is_set():
            for line in self._shard_pass():
                log.info("%s: %s", self.command, line)
        if now < self._next_beat or self._stopping.is_set():
            return
        beats = []
        for state in self.backends:
            if all(t.thread is not None and t.thread.is_alive() for t in self._threads_of(state)):
                lag = self.lags.setdefault(state.pk, Lag())
                beats.append(heartbeat.Beat(state.pk, lag.longest, lag.last_event_at, lag.events))
        heartbeat.beat(self.command, beats)  # raises on a lost database: the guard retries it
        self._next_beat = now + self.heartbeat_seconds
        for state in self.backends:
            self.lags.setdefault(state.pk, Lag()).longest = 0.0

    def _halted(self, watched: WatchThread) -> bool:
        """Should a watch thread end? (The watcher stops, or its backend was dropped.)"""
        return watched.closed or self._stopping.is_set()

    def _threads_of(self, state) -> Iterable[WatchThread]:
        raise NotImplementedError

    def _spawn(self, watched: WatchThread, target: Callable[[], None], name: str) -> None:
        watched.thread = threading.Thread(target=target, daemon=True, name=name)
        watched.thread.start()

    def _failed(self, item: tuple, failures: int) -> None:
        """A watch failed for the `failures`-th time in a row: queue `item` (the error), wait the backoff."""
        self.events.put(item)
        self._stopping.wait(self._backoff(failures))

    def _not_watched(self, backend, error: KubeError) -> None:
        """The backend's connection settings are unusable."""

    def _watch(self, backend, kube: KubeClient, lease: Held) -> list[str]:
        raise NotImplementedError

    def _watch_threads(self) -> Iterable[WatchThread]:
        raise NotImplementedError


class WatchCommand(LongRunningCommand):
    """`watch_… [NAME…]`: start the watcher, run it until SIGINT/SIGTERM, stop it and say how many events."""

    names_metavar = "NAME"
    names_help = "backends to watch (default: all connected)"
    watch_seconds_help = "server-side timeout of one watch request; it then reconnects"

    def add_arguments(self, parser):
        parser.add_argument("names", nargs="*", metavar=self.names_metavar, help=self.names_help)
        parser.add_argument("--watch-seconds", type=int, default=300, help=self.watch_seconds_help)
        parser.add_argument(
            "--replica",
            default="",
            help="this replica's name among the watcher's replicas (default: $WATCHER_REPLICA, else the host name)",
        )

    def watcher(self, options) -> BackendWatcher:
        raise NotImplementedError

    def started(self, watcher: BackendWatcher) -> None:
        """After `start()`, before the loop."""

    def handle(self, *args, **options):
        stop = threading.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: stop.set())
        watcher = self.watcher(options)
        try:
            for line in watcher.start():
                self.stdout.write(line)
            self.started(watcher)
            if not watcher.backends and not watcher.held and not _any_connected(watcher.names):
                self.stdout.write("no backend with a connection to watch")
                return
            watcher.run(stop)
        finally:
            watcher.stop()
            skipped = f"; {watcher.dropped} not applied (see the log)" if watcher.dropped else ""
            self.stdout.write(f"stopped after {watcher.applied} events{skipped}")
        if watcher.replaced:
            raise CommandError(f"another process runs as replica {watcher.leases.name!r}: stopped")

    @staticmethod
    def replica(options) -> str:
        return options.get("replica") or default_name()


def _any_connected(names: list[str] | None) -> bool:
    from clusters import inventory

    return inventory.connected_backends(names).exists()
