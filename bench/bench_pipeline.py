"""Submission to pod (issue #36: p99 ≤ 2 s with 4 Celery workers at 100 submissions/s): the production shape as
processes on loopback (gunicorn with 2 workers, Celery workers, beat and both watchers: soak/stack.py),
a simulated cluster (in this process), and workflows submitted over HTTP at a steady rate. Per workflow, from the
portal's own record: submitted (`Workflow.created_at`) → admitted (`admitted_at`) → pod created
(`Task.pod_created_at`, when the POST to the cluster was answered).

BENCH_PIPELINE=RATE,SECONDS,WORKERS (default 100,30,4); BENCH_BROKER_URL (default redis://127.0.0.1:6379/6, flushed).
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bench.django_env import throwaway_database
from bench.harness import Row

RATE, SECONDS, WORKERS = (int(n) for n in os.environ.get("BENCH_PIPELINE", "100,30,4").split(","))
BROKER = os.environ.get("BENCH_BROKER_URL", "redis://127.0.0.1:6379/6")
CLIENTS = 32
SETTLE_SECONDS = 600


def run() -> list[Row]:
    import redis

    from kubesim import EmulatorServer

    redis.Redis.from_url(BROKER).flushdb()
    kubelet = {"start_delay": 0.1, "run_seconds": 0.3}
    with (
        throwaway_database(),
        EmulatorServer(host="127.0.0.1", port=0, fleet="demo", kubelet=kubelet) as server,
        tempfile.TemporaryDirectory() as logs,
    ):
        return _run(server.url, Path(logs))


def _run(kubesim_url: str, logs: Path) -> list[Row]:
    from django.conf import settings
    from django.db import connection

    from soak.portal import configure_scale, database_url
    from soak.stack import Stack, environment, wait_until

    token = configure_scale(kubesim_url)
    env = environment(database_url(connection.settings_dict), BROKER, settings.SECRET_KEY, "bench-pipeline")
    stack = Stack(env, logs, token=token)
    stack.start_all([f"worker{n}" for n in range(1, WORKERS + 1)])
    try:
        wait_until(lambda: _answers(stack.web_port) or stack.exited(), timeout=90, what="gunicorn answers")
        for n in range(1, WORKERS + 1):
            wait_until(lambda n=n: " ready." in stack.log(f"worker{n}") or stack.exited(), timeout=90, what="worker")
        if stack.exited():
            raise RuntimeError(f"processes exited: {stack.exited()}")
        sent, latencies, failures, took = _paced(stack)
        print(f"  {len(sent)} submitted in {took:.1f} s, {len(failures)} refused", file=sys.stderr, flush=True)
        return _rows(sent, latencies, failures, took)
    finally:
        stack.stop()


def _answers(port: int) -> bool:
    from soak import load

    return load.call(port, "", "GET", "/healthz")[0] == 200


def _paced(stack) -> tuple[list[str], list[float], list, float]:
    """Submit RATE workflows a second for SECONDS, each at its own moment (clients wait for it, none early)."""
    from soak import load
    from soak.portal import POOL, spec

    total, sent, latencies, failures, lock = RATE * SECONDS, [], [], [], threading.Lock()
    start = time.perf_counter() + 0.5

    def one(index: int) -> None:
        delay = start + index / RATE - time.perf_counter()
        if delay > 0:
            time.sleep(delay)  # pacing the load, not waiting for a result
        status, answer, seconds = load.post(stack.web_port, stack.token, f"/api/pool/{POOL}/workflow", spec(index))
        with lock:
            latencies.append(seconds)
            (sent.append(answer["workflow_id"]) if status == 200 else failures.append((status, answer)))

    with ThreadPoolExecutor(CLIENTS) as pool:
        list(pool.map(one, range(total)))
    return sent, latencies, failures, time.perf_counter() - start


def _rows(sent: list[str], latencies: list[float], failures: list, took: float) -> list[Row]:
    from soak.stack import wait_until
    from workflows.models import Task, Workflow

    ours = Task.objects.filter(workflow__workflow_id__in=sent)
    wait_until(
        lambda: not ours.filter(pod_created_at__isnull=True).exists(), timeout=SETTLE_SECONDS, what="every pod made"
    )
    admitted, created = [], []
    for workflow in Workflow.objects.filter(workflow_id__in=sent).prefetch_related("tasks"):
        made = max(task.pod_created_at for task in workflow.tasks.all())
        # admitted in the submission's own transaction: its time may precede the row's created_at by a moment
        admitted.append(max(0.0, (workflow.admitted_at - workflow.created_at).total_seconds()))
        created.append((made - workflow.created_at).total_seconds())
    shape = f"{WORKERS} Celery workers, gunicorn 2 workers, {RATE}/s for {SECONDS} s"

    def row(name: str, samples: list[float], target: str = "", note: str = "") -> Row:
        ordered = sorted(samples)
        p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
        return Row(name, statistics.median(ordered), p99, len(ordered), target, note)

    return [
        row(
            "pipeline: submission over HTTP, answered",
            latencies,
            "p99 ≤ 100 ms",
            f"{len(sent) / took:.0f}/s achieved of {RATE}/s asked; {len(failures)} refused",
        ),
        row("  submitted → admitted", admitted),
        row("  submitted → pod created", created, "p99 ≤ 2 s", shape),
    ]
