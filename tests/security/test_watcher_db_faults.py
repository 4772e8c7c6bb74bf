"""The watchers survive a lost database connection under load (issue #18, item 5).

`manage.py watch_workflows` runs as a process against the simulated cluster while many pods change; a
separate connection terminates every other connection to the test database (the watcher's among them)
several times, mid-stream. The watcher must resume, apply every event (each task's pod ends Succeeded, so
each task must end COMPLETED with its CREATED, SCHEDULED, RUNNING and EXITED events, once each), and log
a bounded number of lines about it (not one per failed event).

`watch_cluster` runs the same `EventDrain` loop; its run under the same fault checks that every node's
pod sums end as the cluster's.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import psycopg
import pytest
from django.contrib.auth import get_user_model
from django.db import connection

from clusters.models import Backend, Node
from kubesim import EmulatorServer
from tests.clusters.test_watch_command import _database_url
from tests.logcapture import logger_lines
from tests.polling import PATIENCE, drain_until
from tests.workflows.conftest import (  # noqa: F401 - fixtures
    alice,
    backend,
    batch_role,
    fast_password_hashing,
    pool,
    portal_instance,
    spec,
    wait_until,
    watcher,
)
from workflows.models import Task, TaskEvent, Workflow
from workflows.services import SubmitRequest, submit

pytestmark = pytest.mark.heavy

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS, TASKS = 6, 30  # 180 pods, each ADDED, bound, Running, Succeeded: ~720 watch events
KILLS = 3
TERMINATE = (
    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
    "WHERE datname = current_database() AND pid <> pg_backend_pid()"
)


@pytest.fixture
def kube_server():
    # pods run for a second, so the watcher is still applying a stream of changes when connections drop
    with EmulatorServer(
        host="127.0.0.1", port=0, fleet="demo", kubelet={"start_delay": 0.05, "run_seconds": 1.0}
    ) as server:
        yield server
        assert not server.emulator.internal_errors, list(server.emulator.internal_errors)


def _terminate_database_connections() -> int:
    """Kill every other session of the test database, from a connection of our own (as an operator would)."""
    with psycopg.connect(_database_url(), autocommit=True) as admin:
        killed = admin.execute(TERMINATE).fetchone()[0]
    connection.close()  # the test's own session was one of them
    return killed


def _start(command: list[str]) -> subprocess.Popen:
    env = {
        **os.environ,
        "DATABASE_URL": _database_url(),
        "PYTHONUNBUFFERED": "1",
        "PORTAL_INSTANCE": "test-portal",
        "LOG_LEVEL": "INFO",
    }
    env.pop("CELERY_BROKER_URL", None)
    return subprocess.Popen(
        [sys.executable, "manage.py", *command],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _stop(process: subprocess.Popen) -> tuple[str, str]:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
    try:
        return process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()


def _events_recorded() -> int:
    return TaskEvent.objects.exclude(kind="SUBMITTED").count()


@pytest.mark.usefixtures("pool", "alice")
def test_watch_workflows_resumes_after_its_connections_are_killed_and_loses_no_event(transactional_db, kube_server):
    submitter = get_user_model().objects.get(username="alice")
    process = _start(["watch_workflows", "sim", "--watch-seconds", "30"])
    kills = []
    try:
        first = process.stdout.readline()
        assert first.startswith("backend sim: watching"), first or process.stderr.read()
        for number in range(WORKFLOWS):
            # the pods are created when the submission commits (Celery runs in-process without a broker)
            submit(SubmitRequest(pool="batch", spec=spec(f"load{number}", tasks=TASKS), who=submitter))
            if number < KILLS:  # kill while the watcher is busy with this workflow's pods
                floor = _events_recorded() + TASKS
                wait_until(lambda floor=floor: _events_recorded() >= floor, timeout=60)
                kills.append(_terminate_database_connections())
        total = WORKFLOWS * TASKS

        def finished() -> bool:
            return Task.objects.filter(status="COMPLETED").count() == total

        with contextlib.suppress(AssertionError):  # reported below, with what is missing
            wait_until(finished, timeout=90, interval=0.2)
        statuses = Counter(Task.objects.values_list("status", flat=True))
    finally:
        out, err = _stop(process)
    lines = [line for line in err.splitlines() if not line.startswith("watch_workflows: replica ")]  # its lease
    assert all(kills), f"each kill should have ended the watcher's session: {kills}"
    assert statuses == {"COMPLETED": WORKFLOWS * TASKS}, (
        f"tasks not brought to their pod's final state (events lost): {dict(statuses)}; "
        f"{len(lines)} log lines, e.g. {lines[:3]}"
    )
    kinds = Counter(TaskEvent.objects.values_list("kind", flat=True))
    assert kinds == {kind: WORKFLOWS * TASKS for kind in ("SUBMITTED", "CREATED", "SCHEDULED", "RUNNING", "EXITED")}
    assert set(Workflow.objects.values_list("status", flat=True)) == {"COMPLETED"}
    # bounded logging: a line when each fault starts and one when it ends, not a line per failed event
    assert len(lines) <= 2 * KILLS + 2, err
    assert "Traceback" not in err, err
    assert any("database" in line and "restored" in line for line in lines), err
    assert process.returncode == 0, err
    assert "stopped after" in out and "not applied" not in out, out


@pytest.mark.usefixtures("backend")
def test_watch_cluster_keeps_node_sums_right_across_lost_connections(transactional_db, kube_server):
    sim = Backend.objects.get(name="sim")
    process = _start(["watch_cluster", "sim", "--watch-seconds", "30"])
    emulator = kube_server.emulator
    try:
        first = process.stdout.readline()
        assert first == "backend sim: 29 nodes, 0 pods; watching\n", first or process.stderr.read()
        for wave in range(KILLS):
            for number in range(40):
                emulator.create(
                    "pods", _pod(f"w{wave}-{number}", f"cpu-node-{number % 4}", forever=number % 2 == 0), "default"
                )
            floor = 20 * wave + 10
            wait_until(lambda floor=floor: _recorded_pods(sim) >= floor, timeout=30)  # busy with this wave
            _terminate_database_connections()

        def sums_match() -> bool:
            running = Counter(
                p["spec"]["nodeName"]
                for p in emulator.list("pods", "default")
                if (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
            )
            recorded = {n.name: n.workload_pods + n.other_pods for n in Node.objects.filter(backend=sim)}
            return all(recorded.get(name, 0) == running.get(name, 0) for name in recorded)

        wait_until(sums_match, timeout=60, interval=0.2)
    finally:
        out, err = _stop(process)
    lines = [line for line in err.splitlines() if not line.startswith("watch_cluster: replica ")]  # its lease
    assert "Traceback" not in err, err
    assert len(lines) <= 2 * KILLS + 2, err
    assert any("database" in line and "restored" in line for line in lines), err
    assert process.returncode == 0, err
    assert "stopped after" in out and "not applied" not in out, out


def _recorded_pods(backend_row) -> int:
    return sum(n.workload_pods + n.other_pods for n in Node.objects.filter(backend=backend_row))


def _pod(name: str, node: str, *, forever: bool) -> dict:
    """A pod bound to `node`: half of them never finish, so lost events show as wrong sums either way."""
    annotations = {"kubesim/never-finish": "true"} if forever else {"kubesim/run-seconds": "0.5"}
    return {
        "metadata": {"name": name, "annotations": annotations},
        "spec": {
            "nodeName": node,
            "restartPolicy": "Never",
            "containers": [
                {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}
            ],
        },
    }


def watchloop_lines(request) -> list[str]:
    """What the watch loop logs (WARNING and up)."""
    return logger_lines(request, "clusters.watchloop")


@pytest.mark.usefixtures("pool", "alice")
def test_an_event_met_by_a_killed_session_is_applied_after_reconnecting(transactional_db, request):
    """In-process and deterministic: the watcher's session dies mid-batch (no check before the batch can
    see it coming), so applying the next event fails; it is applied again on a new connection."""
    drain = request.getfixturevalue("watcher")
    # The pods run 5 s, not the fixture's 1 s: their exits are still to come when the session dies, however
    # slowly a busy machine lets the watcher reach RUNNING (at 1 s, one batch could take every event).
    request.getfixturevalue("kube_server").kubelet.run_seconds = 5.0
    lines = watchloop_lines(request)
    submitter = get_user_model().objects.get(username="alice")
    result = submit(SubmitRequest(pool="batch", spec=spec("once", tasks=2), who=submitter))
    workflow = Workflow.objects.get(workflow_id=result.workflow_id)
    drain_until(drain, lambda: TaskEvent.objects.filter(task__workflow=workflow, kind="RUNNING").exists())
    drain.check_every = float("inf")
    drain._next_check = float("inf")
    connection.ensure_connection()
    watchers_session = connection.connection.info.backend_pid  # this thread's session is the watcher's
    with psycopg.connect(_database_url(), autocommit=True) as admin:  # kill exactly it (not a leftover session)
        assert admin.execute("SELECT pg_terminate_backend(%s)", [watchers_session]).fetchone()[0] is True
    assert drain.process(timeout=PATIENCE) >= 1
    drain_until(drain, lambda: Workflow.objects.get(pk=workflow.pk).status == "COMPLETED")
    drain.faults.close()
    assert drain.dropped == 0 and drain.errors == 0
    lost = [line for line in lines if "database connection lost" in line]
    restored = [line for line in lines if "database connection restored" in line]
    # One line when the fault starts and one when it ends, never one per event.
    assert (len(lost), len(restored)) == (1, 1), lines
    assert Counter(TaskEvent.objects.filter(task__workflow=workflow).values_list("kind", flat=True)) == {
        "SUBMITTED": 2,
        "CREATED": 2,
        "SCHEDULED": 2,
        "RUNNING": 2,
        "EXITED": 2,
    }
