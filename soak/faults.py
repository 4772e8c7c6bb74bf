"""The soak's faults, on a schedule (docs/operations.md, "Soak"):

* `worker`: a Celery worker SIGKILLed with its pool (what it had received and not acknowledged stays in Redis
  and is redelivered after the visibility timeout), then started again as a supervisor would;
* `database`: pg_terminate_backend on every connection to the soak's database (web, workers, beat, watchers
  and this process lose theirs at once and must reconnect);
* `redis`: the soak's Redis server stopped and started again (without persistence: every queued message is
  lost; the portal's periodic sweeps must recover the work they carried);
* `cluster`: one simulated cluster's API server answers 503 to everything for `outage_seconds` (open watches
  end; its objects are kept, as etcd keeps them), then comes back;
* `watcher`: one replica of each watcher SIGKILLed; the surviving replica must take its backends over through
  the leases (clusters/leases.py) within the lease time; then it is started again.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

KINDS = ("worker", "database", "redis", "cluster", "watcher")


@dataclass
class Fault:
    kind: str
    at: float  # seconds since the load started
    took: float = 0.0
    detail: str = ""
    ok: bool = True


def schedule(load_seconds: float, outage_seconds: float, cycles: int | None = None) -> list[tuple[float, str]]:
    """Every fault kind, in turn, evenly over the load with room after the last one: `cycles` rounds (by default
    one per 15 minutes of load, at least one)."""
    cycles = cycles or max(1, int(load_seconds // 900))
    window = load_seconds - max(outage_seconds, 30.0) - 15.0  # the last fault ends before the load does
    step = window / (cycles * len(KINDS))
    return [(15.0 + i * step, KINDS[i % len(KINDS)]) for i in range(cycles * len(KINDS))]


@dataclass
class Injector:
    """Runs the schedule from a thread; each fault waits for its own end (the outage, the takeover)."""

    stack: object  # soak.stack.Stack
    redis: object  # soak.services.Redis
    kubesim: object  # kubesim.EmulatorServer serving the clusters
    database_server: str
    database_name: str
    workers: list[str]
    replicas: tuple[str, ...]
    lease_seconds: int
    outage_seconds: float
    plan: list[tuple[float, str]]
    done: list[Fault] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _turn: int = 0  # of the fault running: how many of its kind ran before it

    def start(self, started: float) -> None:
        self._started = started
        self._thread = threading.Thread(target=self._run, name="soak-faults", daemon=True)
        self._thread.start()

    def join(self, timeout: float) -> None:
        if self._thread is not None:
            self._thread.join(timeout)

    def stop(self) -> None:
        self._stop.set()
        self.join(max(120.0, self.outage_seconds + 60))

    def _run(self) -> None:
        for at, kind in self.plan:
            if self._stop.wait(max(0.0, self._started + at - time.monotonic())):
                return
            fault = Fault(kind, time.monotonic() - self._started)
            self._turn = sum(1 for f in self.done if f.kind == kind)  # the how-many-th of its kind: victims rotate
            began = time.monotonic()
            try:
                fault.detail = getattr(self, f"_{kind}")()
            except Exception as error:  # noqa: BLE001 - a fault that could not be injected fails the soak
                fault.ok, fault.detail = False, f"{type(error).__name__}: {error}"
            fault.took = time.monotonic() - began
            self.done.append(fault)
            print(f"  fault at {fault.at:6.0f} s: {kind}: {fault.detail} ({fault.took:.1f} s)", flush=True)

    def _worker(self) -> str:
        name = self.workers[self._turn % len(self.workers)]
        self.stack.kill(name)
        self.stack.restart(name)
        return f"{name} SIGKILLed and restarted"

    def _database(self) -> str:
        from soak.services import terminate_connections

        return f"{terminate_connections(self.database_server, self.database_name)} connections terminated"

    def _redis(self) -> str:
        import redis

        client = redis.Redis.from_url(self.redis.url)
        queued = client.llen("celery") + client.hlen("unacked")
        self.redis.restart()
        return f"restarted (no persistence): {queued} message(s) queued or unacknowledged were lost"

    def _cluster(self) -> str:
        names = sorted(self.kubesim.clusters)
        name = names[self._turn % len(names)]
        cluster = self.kubesim.clusters[name]
        cluster.down()
        self._stop.wait(self.outage_seconds)
        cluster.up()
        return f"cluster {name}'s API down {self.outage_seconds:.0f} s ({cluster.refused_while_down} requests refused)"

    def _watcher(self) -> str:
        from soak.stack import WATCHERS, wait_until

        victim = self.replicas[self._turn % len(self.replicas)]
        for watcher in WATCHERS:
            self.stack.kill(f"{watcher}-{victim}")
        killed = time.monotonic()
        limit = self.lease_seconds * 2 + 30  # expiry, then the survivor's next claim
        for watcher in WATCHERS:
            wait_until(lambda w=watcher: _taken_over(w, victim), timeout=limit, what=f"{watcher}: {victim}'s leases")
        took = time.monotonic() - killed
        for watcher in WATCHERS:
            self.stack.restart(f"{watcher}-{victim}")
        return f"replica {victim} of both watchers SIGKILLed; its backends taken over in {took:.1f} s; restarted"


def _taken_over(watcher: str, victim: str) -> bool:
    """Every backend's lease live and held by a replica other than `victim`."""
    from django.db.models.functions import Now

    from clusters.models import Backend, WatcherLease
    from soak.checks import retrying

    def held() -> bool:
        live = WatcherLease.objects.filter(watcher=watcher, expires_at__gt=Now()).exclude(holder="")
        holders = dict(live.values_list("backend_id", "holder"))
        return len(holders) == Backend.objects.count() and victim not in holders.values()

    return retrying(held)
