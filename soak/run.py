"""The soak (docs/operations.md, "Soak"): the production shape as processes on loopback under a steady mixed load
for `minutes`, with faults on a schedule, then the checks. `python -m soak --minutes N`; `make soak`.

This process: Django (for the setup and the checks, on the soak's own database), the simulated clusters (one
kubesim server, a cluster per backend, so a store listener counts every pod creation), the load's clients, the
fault injector and the samplers. Everything else is a process of its own: gunicorn (2 workers), 4 Celery
workers, beat, two replicas of each watcher, the soak's Redis.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from soak import checks, faults, load, summary
from soak.services import Redis, drop_database, recreate_database
from soak.stack import REPO, Stack, environment, wait_until

INSTANCE = "soak"
CLUSTERS = [f"c{i}" for i in range(5)]
WORKERS = [f"worker{n}" for n in range(1, 5)]
REPLICAS = ("r1", "r2")
LEASE, RENEW = 15, 5  # the watchers' lease and renewal, seconds
KUBELET = {"start_delay": 0.2, "run_seconds": 6.0}  # pods run a few seconds: work is in flight at every fault
SETTLE_SECONDS = 600  # after the load: every workflow ends and the queues drain within this
RSS_WARMUP_SECONDS = 60  # a process's first RSS sample is taken this long after it started (imports, caches)


@dataclass
class Options:
    minutes: float = 30.0
    rate: float = 2.0  # submissions a second
    outage_seconds: float = 60.0
    cycles: int | None = None  # rounds of every fault (default: one per 15 minutes)
    server: str = "postgres://postgres@127.0.0.1:5432/postgres"
    database: str = "pool_portal_soak"
    keep_database: bool = False
    logs: Path | None = None
    stream: object = field(default=None)


def main(options: Options) -> int:
    out = options.stream or sys.stdout
    logs = options.logs or Path(tempfile.mkdtemp(prefix="soak-"))
    logs.mkdir(parents=True, exist_ok=True)
    print(f"soak: {options.minutes:g} min of load; logs in {logs}", file=out, flush=True)
    url = recreate_database(options.server, options.database)
    redis = Redis(logs)
    redis.start()
    try:
        return _run(options, url, redis, logs, out)
    finally:
        redis.stop()
        if not options.keep_database:
            from django.db import connections

            connections.close_all()
            drop_database(options.server, options.database)


def _django(url: str) -> None:
    os.environ["DATABASE_URL"] = url
    os.environ.setdefault("DEBUG", "true")  # this process: the development settings (a key from var/)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
    os.environ["TEST_DATABASE_NAME"] = ""
    sys.path.insert(0, str(REPO))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", "--noinput", verbosity=0)


def _run(options: Options, url: str, redis: Redis, logs: Path, out) -> int:
    _django(url)
    from django.conf import settings

    from kubesim import EmulatorServer
    from soak import counting
    from soak.portal import configure_soak

    parts = {name: EmulatorServer(fleet="demo", kubelet=KUBELET) for name in CLUSTERS}
    counters = {name: counting.PodCreations(INSTANCE, name) for name in CLUSTERS}
    for name, part in parts.items():
        part.emulator.add_listener(counters[name])
    with EmulatorServer(host="127.0.0.1", port=0, clusters=parts) as kubesim:
        with open(logs / "setup.log", "a") as setup_log, contextlib.redirect_stdout(setup_log):
            portal = configure_soak({name: part.url for name, part in parts.items()})
        env = environment(url, redis.url, settings.SECRET_KEY, INSTANCE)
        env.update(
            WATCHER_LEASE_SECONDS=str(LEASE),
            WATCHER_LEASE_RENEW_SECONDS=str(RENEW),
            WORKFLOW_RECONCILE_SECONDS="15",  # the sweeps that recover lost messages, quicker than production's
            WORKFLOW_PENDING_GRACE_SECONDS="30",
            INVENTORY_RESYNC_SECONDS="60",
        )
        stack = Stack(env, logs)
        stack.start_all(WORKERS, REPLICAS)
        try:
            _ready(stack)
            return _soak(options, stack, redis, kubesim, portal, counters, out)
        finally:
            stack.stop()
            internal = {n: list(p.emulator.internal_errors) for n, p in parts.items() if p.emulator.internal_errors}
            if internal:
                print(f"kubesim internal errors: {internal}", file=out)


def _ready(stack: Stack) -> None:
    wait_until(lambda: load.call(stack.web_port, "", "GET", "/healthz")[0] == 200 or stack.exited(), 120, "gunicorn")
    for worker in WORKERS:
        wait_until(lambda w=worker: " ready." in stack.log(w) or stack.exited(), 120, f"{worker} ready")
    if stack.exited():
        raise RuntimeError(f"processes exited at start: {stack.exited()}")


def _soak(options: Options, stack: Stack, redis: Redis, kubesim, portal, counters, out) -> int:
    from soak.traffic import Traffic

    seconds = options.minutes * 60
    traffic = Traffic(
        stack.web_port, portal.admin_token, portal.tokens, portal.pools, portal.node_pools, rate=options.rate
    )
    plan = faults.schedule(seconds, options.outage_seconds, options.cycles)
    injector = faults.Injector(
        stack, redis, kubesim, options.server, options.database, WORKERS, REPLICAS, LEASE, options.outage_seconds, plan
    )
    sampler = checks.Sampler()
    memory = Memory()
    started = time.monotonic()
    traffic.start()
    sampler.start()
    injector.start(started)
    try:
        while time.monotonic() - started < seconds:
            memory.sample(stack)
            time.sleep(5)  # the run's own pace: RSS every 5 s, until the load's time is up
    finally:
        traffic.stop()
        injector.stop()
    load_seconds = time.monotonic() - started
    print(f"  load stopped after {load_seconds:.0f} s; settling", file=out, flush=True)

    settle_started = time.monotonic()
    drained = _settle(redis.url)
    settle_seconds = time.monotonic() - settle_started
    sampler.stop()
    memory.sample(stack)
    end_rss = stack.rss()

    creations, phases = Counter(), {}
    for counter in counters.values():
        creations.update(counter.snapshot())
        phases.update(counter.phases())
    results = checks.workflows_match_pods(creations, phases, {wid for wid, _ in traffic.submitted})
    results.append(
        checks.Check(
            "queues drained", drained, f"every workflow ended and Redis' queue emptied in {settle_seconds:.0f} s"
        )
    )
    results.append(
        checks.Check(
            "no guarantee broken",
            not sampler.breaches and sampler.samples > 0 and sampler.peak > 0,
            f"{sampler.samples} samples ({sampler.failed_reads} skipped: database down); peak non-preemptible "
            f"allocation {100 * sampler.peak:.0f}% of deserved; work above deserved in flight in "
            f"{sampler.over_quota_samples} samples"
            + (f"; {len(sampler.breaches)} breaches, first: {sampler.breaches[:3]}" if sampler.breaches else ""),
        )
    )
    rows = traffic.recorder.rows()
    requests, errors = sum(r[1] for r in rows), sum(r[2] for r in rows)
    rate = errors / requests if requests else 1.0
    results.append(
        checks.Check(
            "error rate",
            rate <= checks.ERROR_RATE_BOUND,
            f"{errors}/{requests} = {100 * rate:.2f}% (bound {100 * checks.ERROR_RATE_BOUND:g}%)",
        )
    )
    kinds_done = Counter(f.kind for f in injector.done)
    failed_faults = [f"{f.kind} at {f.at:.0f} s: {f.detail}" for f in injector.done if not f.ok]
    results.append(
        checks.Check(
            "every fault injected and recovered",
            all(kinds_done[k] for k in faults.KINDS) and not failed_faults,
            ", ".join(f"{k} ×{kinds_done[k]}" for k in faults.KINDS)
            + (f"; failed: {failed_faults}" if failed_faults else ""),
        )
    )
    unexpected = {n: c for n, c in stack.exited().items()}
    results.append(checks.Check("no process died unexpectedly", not unexpected, str(unexpected or "none")))
    rss_check, rss_rows = checks.rss_checks(memory.start, end_rss, set(stack.restarts))
    results.append(rss_check)
    recovered = _requeued(stack)
    results.append(
        checks.Check(
            "recovery by the periodic sweeps (a figure)",
            True,
            f"the reconciler re-enqueued pod creation for {recovered} workflow(s) whose message was lost "
            "(Redis restart) or held by a killed worker",
        )
    )
    report = summary.render(
        options, load_seconds, traffic, rows, injector.done, results, rss_rows, creations, len(plan)
    )
    print(report, file=out, flush=True)
    if traffic.recorder.errors:
        print("first errors: " + "; ".join(f"{k} {s} {t}" for _, k, s, t in traffic.recorder.errors[:8]), file=out)
    return 0 if all(check.ok for check in results) else 1


def _requeued(stack: Stack) -> int:
    """What the periodic reconciliation re-enqueued, from the workers' logs (its result lines)."""
    total = 0
    for name in WORKERS:
        total += sum(
            int(n)
            for n in re.findall(
                r"reconcile_workflows\[[^]]+\] succeeded in [^:]+: \{[^}]*'requeued': (\d+)", stack.log(name)
            )
        )
    return total


def _settle(broker_url: str) -> bool:
    """Every workflow ends and the broker's queue empties (the sweeps finish what the faults dropped)."""
    try:
        wait_until(lambda: checks.unfinished() == 0, SETTLE_SECONDS, "every workflow ends", interval=1.0)
        wait_until(lambda: checks.queues_empty(broker_url), 120, "the queues drain", interval=0.5)
    except AssertionError:
        return False
    return True


class Memory:
    """Each process's first RSS after its warm-up (again after a restart: a new pid)."""

    def __init__(self) -> None:
        self.start: dict[str, int] = {}
        self._born: dict[int, float] = {}
        self._taken: set[int] = set()

    def sample(self, stack: Stack) -> None:
        from soak.stack import rss_kib

        now = time.monotonic()
        for name, process in stack.processes.items():
            born = self._born.setdefault(process.pid, now)
            if process.pid in self._taken or now - born < RSS_WARMUP_SECONDS or process.poll() is not None:
                continue
            self.start[name] = rss_kib(process.pid)
            self._taken.add(process.pid)
