"""Workflow submission over HTTP: gunicorn (2 sync workers, 127.0.0.1) against a throwaway PostgreSQL database.

Set-up: a pool with OSMO's default user template and CPU/memory/storage/GPU rules, one platform whose nodes
come from the simulated demo fleet (25 nodes synced into the inventory, so node rules are evaluated as in
production), a researcher with a portal API token. Pod creation is enqueued on a Redis database of its own
(`BENCH_BROKER_URL`, default redis://127.0.0.1:6379/12, purged afterwards): no worker consumes it, so
the figures are the submission path only (authenticate, authorize, parse, resolve, validate, store, enqueue).

Load: `CLIENTS` threads each POST `/api/pool/bench/workflow` in a closed loop for a bounded number of
requests (raw sockets sending prebuilt bytes: the generator shares the 2 cores, so it spends as little CPU
as a client can; a new connection per request, as gunicorn's sync workers close them).
Reported: median and p99 latency per request over `BENCH_ROUNDS` rounds (3), and throughput (submissions/s)
in the note: the median round, with every round's figure. Targets for
single-task workflows: ≥ 200 submissions/s and p99 ≤ 100 ms. Then the same submission in-process (no
HTTP) with its query count and the top of its profile, to show where the time goes.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

from bench.django_env import setup
from bench.harness import Row

ROOT = Path(__file__).resolve().parent.parent
CLIENTS = int(os.environ.get("BENCH_CLIENTS", "4"))
WORKERS = 2
THREADS = int(os.environ.get("BENCH_THREADS", "1"))  # >1: gthread workers (measured slower here: CPU-bound)
REQUESTS = {1: int(os.environ.get("BENCH_REQUESTS_1", "1200")), 8: int(os.environ.get("BENCH_REQUESTS_8", "400"))}
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "3"))
WARMUP = 40
BROKER = os.environ.get("BENCH_BROKER_URL", "redis://127.0.0.1:6379/12")


def spec(name: str, tasks: int) -> str:
    items = "\n".join(
        f"  - {{name: t{i}, image: 'nvcr.io/nvidia/pytorch:24.01-py3', command: [python, train.py], "
        f"args: [--epochs, '10', --out, '/results/{{{{workflow_id}}}}'], environment: {{SEED: '{i}'}}}}"
        for i in range(tasks)
    )
    return (
        f"version: 2\nworkflow:\n  name: {name}\n  labels: {{team: bench}}\n"
        f"  timeout: {{exec_timeout: 2h, queue_timeout: 30m}}\n"
        f"  resources:\n    default: {{cpu: 2, memory: 4Gi, storage: 10Gi, gpu: 0}}\n  tasks:\n{items}\n"
    )


def run() -> list[Row]:
    if not _redis_answers(BROKER):
        print(f"bench_workflows: skipped: no Redis at {BROKER} (set BENCH_BROKER_URL)", file=sys.stderr)
        return [
            Row(
                "workflow submissions over HTTP", 0.0, 0.0, 0, "≥ 200/s, p99 ≤ 100 ms", f"skipped: no Redis at {BROKER}"
            )
        ]
    with throwaway_database():
        rows = http_rows(_set_up())
        rows.extend(in_process())
        _purge()
        return rows


def empty_database_rows(label: str = "") -> list[Row]:
    """The HTTP rows alone, on this bench's throwaway database (bench_fleet_submit's baseline, same run)."""
    with throwaway_database():
        rows = http_rows(_set_up(), label=label)
        _purge()
        return rows


def http_rows(token: str, pool: str = "bench", names: dict[int, str] | None = None, label: str = "") -> list[Row]:
    """Gunicorn on the current database, then the load of 1-task and 8-task workflows named `names[tasks]`
    (default `bench-<tasks>`) on `pool`; `label` ends each row's name."""
    from django.db import connection

    names = names or {tasks: f"bench-{tasks}" for tasks in (1, 8)}
    with _gunicorn(_database_url(connection.settings_dict)) as (port, server_pid):
        return [_load(port, token, tasks, server_pid, pool, names[tasks], label) for tasks in (1, 8)]


# ------------------------------------------------------------------------------------------ set-up


@contextlib.contextmanager
def throwaway_database():
    """A fresh migrated database of this bench's own (`bench_workflows`, or `BENCH_DATABASE_NAME`), dropped
    afterwards, so it never collides with a test run or another benchmark running at the same time."""
    setup()
    from django.db import connection
    from django.test.utils import setup_test_environment, teardown_test_environment

    setup_test_environment()
    old_name = connection.settings_dict["NAME"]
    connection.settings_dict["TEST"] = {
        **connection.settings_dict.get("TEST", {}),
        "NAME": os.environ.get("BENCH_DATABASE_NAME", "bench_workflows"),
    }
    connection.creation.create_test_db(verbosity=0, autoclobber=True)
    try:
        yield
    finally:
        connection.close()
        connection.creation.destroy_test_db(old_name, verbosity=0)
        teardown_test_environment()


def _set_up() -> str:
    from access.services import roles, tokens
    from clusters import inventory
    from configs import store
    from configs.revisions import Actor
    from kubesim import EmulatorServer
    from pools.engine import default_templates, default_validations
    from tests.factories import RoleFactory, UserFactory

    actor = Actor(name="bench", source="cli")
    with EmulatorServer(fleet="demo") as server:
        store.apply(
            "BACKEND", "bench-cluster", {"description": "bench", "namespace": "bench", "api_url": server.url}, actor
        )
        from clusters.models import Backend

        backend = Backend.objects.get(name="bench-cluster")
        store.apply_many(
            "POD_TEMPLATE",
            {**default_templates(), "cpu": {"spec": {"nodeSelector": {"hive.openshift.io/machine-pool": "cpu"}}}},
            actor,
        )
        store.apply_many("RESOURCE_VALIDATION", default_validations(), actor)
        store.apply(
            "POOL",
            "bench",
            {
                "backend": "bench-cluster",
                "default_platform": "cpu",
                "common_default_variables": {"USER_CPU": 1, "USER_GPU": 0, "USER_MEMORY": "1Gi", "USER_STORAGE": "1Gi"},
                "common_pod_template": ["default_user"],
                "common_resource_validations": ["default_cpu", "default_memory", "default_storage", "default_gpu"],
                "max_exec_timeout": "8h",
                "platforms": {"cpu": {"override_pod_template": ["cpu"]}},
            },
            actor,
        )
        inventory.sync_backend(backend.pk)  # 25 nodes: node rules are checked against the inventory
    user = UserFactory(username="researcher")
    RoleFactory(
        name="osmo-bench", policies=[{"effect": "Allow", "actions": ["workflow:*"], "resources": ["pool/bench*"]}]
    )
    roles.update_user_roles(user, add=["osmo-bench", "osmo-user"], actor=actor)
    return tokens.create(user, "bench").secret


def _database_url(settings_dict: dict) -> str:
    user = settings_dict.get("USER") or ""
    password = f":{settings_dict['PASSWORD']}" if settings_dict.get("PASSWORD") else ""
    host = settings_dict.get("HOST") or "127.0.0.1"
    port = settings_dict.get("PORT") or 5432
    return f"postgres://{user}{password}@{host}:{port}/{settings_dict['NAME']}"


def _redis_answers(url: str) -> bool:
    try:
        import redis

        return bool(redis.Redis.from_url(url, socket_connect_timeout=1).ping())
    except Exception:  # noqa: BLE001
        return False


def _purge() -> None:
    with contextlib.suppress(Exception):
        import redis

        redis.Redis.from_url(BROKER).flushdb()


# ------------------------------------------------------------------------------------------ gunicorn


@contextlib.contextmanager
def _gunicorn(database_url: str):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    from django.conf import settings

    # Production settings, but plain HTTP on loopback (no HTTPS redirect) and this process's key (the
    # secrets it stored must stay readable).
    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        "CELERY_BROKER_URL": BROKER,
        "DEBUG": "false",
        "SECRET_KEY": settings.SECRET_KEY,
        "SECURE_SSL_REDIRECT": "false",
        "DATABASE_CONN_MAX_AGE": "600",
        "LOG_LEVEL": "WARNING",
        "TEST_DATABASE_NAME": "",
    }
    command = [
        str(Path(sys.executable).parent / "gunicorn"),
        "portal.wsgi:application",
        "--workers",
        str(WORKERS),
        "--threads",
        str(THREADS),
        "--bind",
        f"127.0.0.1:{port}",
        "--log-level",
        "warning",
        "--backlog",
        "256",
    ]
    if Path("/dev/shm").is_dir():  # the workers' heartbeat files on tmpfs, as gunicorn advises for production
        command += ["--worker-tmp-dir", "/dev/shm"]
    process = subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"gunicorn exited: {process.stderr.read().decode()[-2000:]}")
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("gunicorn did not start within 60 s") from None
                time.sleep(0.1)
        yield port, process.pid
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)


def _request_bytes(token: str, body: bytes, pool: str = "bench") -> bytes:
    """The whole request, built once: each submission sends the same bytes (the load generator shares the 2
    cores with the server, so it spends as little CPU per request as a client can)."""
    head = (
        f"POST /api/pool/{pool}/workflow HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Authorization: Bearer {token}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    return head.encode() + body


def _post(port: int, request: bytes) -> tuple[int, float]:
    """One submission on a new connection (gunicorn's sync workers close each): the status and the seconds from
    connecting to the response's last byte."""
    started = time.perf_counter()
    with socket.create_connection(("127.0.0.1", port), timeout=30) as connection:
        connection.sendall(request)
        chunks = []
        while chunk := connection.recv(65536):
            chunks.append(chunk)
    seconds = time.perf_counter() - started
    status_line = b"".join(chunks[:2])[:32]  # "HTTP/1.1 200 OK"
    try:
        return int(status_line.split(b" ", 2)[1]), seconds
    except (IndexError, ValueError):
        return 0, seconds  # no answer: a failed request


def _load(
    port: int, token: str, tasks: int, server_pid: int, pool: str = "bench", name: str = "", label: str = ""
) -> Row:
    """`ROUNDS` rounds of closed-loop load; latency percentiles over all requests, throughput per round
    (the median in the figure, the range in the note: this machine's speed drifts between rounds)."""
    body = json.dumps({"file": spec(name or f"bench-{tasks}", tasks)}).encode()
    request = _request_bytes(token, body, pool)
    for _ in range(WARMUP):  # every worker imports, connects and fills its caches first
        status, _ = _post(port, request)
        if status != 200:
            raise RuntimeError(f"submission failed with HTTP {status}")
    samples: list[float] = []
    failures: list[int] = []
    before = _cpu_seconds(server_pid)
    rates = [_round(port, request, REQUESTS[tasks], samples, failures) for _ in range(ROUNDS)]
    used = {
        name: 1000 * (seconds - before.get(name, 0.0)) / len(samples)
        for name, seconds in _cpu_seconds(server_pid).items()
    }
    samples.sort()
    p99 = samples[min(len(samples) - 1, int(len(samples) * 0.99))]
    note = (
        f"{statistics.median(rates):.0f} submissions/s (rounds: {', '.join(f'{r:.0f}' for r in rates)}), "
        f"{CLIENTS} clients, {WORKERS} gunicorn workers × {THREADS} threads; CPU per submission: "
        + ", ".join(f"{name} {ms:.1f} ms" for name, ms in used.items())
    )
    if failures:
        note += f", {len(failures)} failed (HTTP {sorted(set(failures))})"
    target = "≥ 200/s, p99 ≤ 100 ms" if tasks == 1 else ""
    name = f"submit {tasks}-task workflow over HTTP{label}"
    return Row(name, statistics.median(samples), p99, len(samples), target, note)


def _cpu_seconds(server_pid: int) -> dict[str, float]:
    """CPU seconds (user + system) used so far by gunicorn (the server and its workers), PostgreSQL's
    processes and this load generator, from /proc (Linux): what one submission costs, whatever the
    machine's speed of the moment does to the rate."""
    tick = os.sysconf("SC_CLK_TCK")
    used = {"web": 0.0, "PostgreSQL": 0.0}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            text = (entry / "stat").read_text()
        except OSError:  # gone meanwhile
            continue
        command, fields = text[text.index("(") + 1 : text.rindex(")")], text[text.rindex(")") + 2 :].split()
        pid, parent, seconds = int(entry.name), int(fields[1]), (int(fields[11]) + int(fields[12])) / tick
        if server_pid in (pid, parent):
            used["web"] += seconds
        elif command.startswith("postgres"):
            used["PostgreSQL"] += seconds
    used["load generator"] = sum(os.times()[:2])
    return used


def _round(port: int, request: bytes, total: int, samples: list[float], failures: list[int]) -> float:
    """One round of `total` requests from `CLIENTS` threads; returns submissions per second."""
    lock = threading.Lock()
    counter = iter(range(total))

    def client() -> None:
        while True:
            with lock:
                if next(counter, None) is None:
                    return
            status, seconds = _post(port, request)
            with lock:
                samples.append(seconds)
                if status != 200:
                    failures.append(status)

    threads = [threading.Thread(target=client) for _ in range(CLIENTS)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return total / (time.perf_counter() - started)


# ------------------------------------------------------------------------------------------ in process


def in_process(
    pool: str = "bench", username: str = "researcher", names: dict[int, str] | None = None, label: str = ""
) -> list[Row]:
    """The same submission without HTTP: its cost, its query count and the top of its profile (stderr).
    Nothing is enqueued (pod creation, admission passes): this process has no broker, and Celery would run
    them here, eagerly."""
    import cProfile
    import io
    import pstats

    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from bench.harness import measure
    from quotas import tasks as quota_jobs
    from workflows import tasks as jobs
    from workflows.services import SubmitRequest, submit

    jobs.create_pods.delay = lambda *args, **kwargs: None  # this process has no broker: do not enqueue
    quota_jobs.admission_pass.delay = lambda *args, **kwargs: None
    user = get_user_model().objects.get(username=username)
    names = names or {tasks: f"inproc-{tasks}" for tasks in (1, 8)}
    rows = []
    for tasks in (1, 8):
        text = spec(names[tasks], tasks)
        submit(SubmitRequest(pool=pool, spec=text, who=user))  # the process's caches filled, as in a server
        with CaptureQueriesContext(connection) as queries:
            submit(SubmitRequest(pool=pool, spec=text, who=user))
        slowest = max(queries.captured_queries, key=lambda q: float(q["time"]))
        print(
            f"bench_workflows: slowest query of a {tasks}-task submission{label}: {slowest['time']} s, "
            f"{slowest['sql'][:300]}",
            file=sys.stderr,
        )
        rows.append(
            measure(
                f"submit {tasks}-task workflow in process (service only){label}",
                lambda text=text: submit(SubmitRequest(pool=pool, spec=text, who=user)),
                runs=200 if tasks == 1 else 100,
                note=f"{len(queries)} queries",
            )
        )
    profile = cProfile.Profile()
    profile.enable()
    for _ in range(100):
        submit(SubmitRequest(pool=pool, spec=spec(names[1], 1), who=user))
    profile.disable()
    out = io.StringIO()
    pstats.Stats(profile, stream=out).sort_stats("cumulative").print_stats(
        r"/(workflows|pools|access|teams|clusters|configs|quotas)/", 16
    )
    print(
        f"bench_workflows: where a 1-task submission{label} spends its time (in process, 100 runs, profiled):",
        file=sys.stderr,
    )
    print("\n".join(line for line in out.getvalue().splitlines() if line.strip())[-2500:], file=sys.stderr)
    return rows
