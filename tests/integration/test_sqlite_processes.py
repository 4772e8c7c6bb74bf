"""The embedded default's processes against ONE SQLite file: the web server, both watchers, the periodic jobs and
command-line submitters write at the same time, and no write is lost to "database is locked".

Real processes (`manage.py runserver|watch_workflows|watch_cluster|periodic|workflow submit`) on a temporary
SQLite database, the simulated cluster (kubesim, demo fleet, fast kubelet) in this process over HTTP.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

from kubesim import EmulatorServer
from tests.devstack import HELLO, REPO, Api, free_port, manage, wait_until

HTTP_THREADS, PER_THREAD, CLI_SUBMITTERS = 4, 5, 4
POOL = "robotics-inference"


@pytest.fixture
def cluster():
    with EmulatorServer(port=0, fleet="demo", kubelet={"start_delay": 0.2, "run_seconds": 0.5}) as server:
        yield server


@pytest.fixture
def sqlite_env(tmp_path, cluster):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_URL", "CELERY_", "TEST_"))}
    env.update(
        DATABASE_URL=f"sqlite:///{tmp_path / 'var' / 'db.sqlite3'}",
        PORTAL_VAR_DIR=str(tmp_path / "var"),
        DEMO_CLUSTER_URL=cluster.url,
        WORKFLOW_RECONCILE_SECONDS="2",
        WORKFLOW_PENDING_GRACE_SECONDS="5",
        WORKFLOW_TIMEOUT_CHECK_SECONDS="2",
        INVENTORY_RESYNC_SECONDS="5",
        PYTHONUNBUFFERED="1",
    )
    for step in (("migrate", "--noinput", "-v0"), ("seed_demo",)):  # `var/` does not exist yet: settings create it
        done = manage(env, *step)
        assert done.returncode == 0, done.stderr
    return env


@pytest.fixture
def processes(sqlite_env, tmp_path):
    port = free_port()
    started = {}
    for name, args in (
        ("web", ("runserver", "--noreload", f"127.0.0.1:{port}")),
        ("watch_workflows", ()),
        ("watch_cluster", ()),
        ("periodic", ()),
    ):
        log = open(tmp_path / f"{name}.log", "w")  # noqa: SIM115 - closed below
        command = args if name == "web" else (name,)
        started[name] = (
            subprocess.Popen(
                [sys.executable, str(REPO / "manage.py"), *command],
                cwd=REPO,
                env=sqlite_env,
                stdout=log,
                stderr=subprocess.STDOUT,
            ),
            log,
        )
    yield f"http://127.0.0.1:{port}", started
    for process, _log in started.values():
        process.terminate()
    for process, log in started.values():
        process.wait(20)
        log.close()


def rows(path, sql: str, *params) -> list[tuple]:
    with sqlite3.connect(path, timeout=30) as db:
        return db.execute(sql, params).fetchall()


def test_processes_share_one_sqlite_file_and_lose_nothing(sqlite_env, processes, tmp_path):
    base, started = processes
    database = tmp_path / "var" / "db.sqlite3"
    assert rows(database, "PRAGMA journal_mode")[0][0] == "wal"
    created = manage(sqlite_env, "token", "create", "researcher", "ci", "--format", "json")
    assert created.returncode == 0 and "Traceback" not in created.stderr, created.stderr
    api = Api(base, token=json.loads(created.stdout)["token"])
    wait_until(lambda: api.answers("/api/pool"), 180, "the web server answers")  # a loaded CI machine
    spec = HELLO.read_bytes()

    def submit_over_http(_: int) -> list[str]:
        return [api.submit(POOL, spec, priority="LOW") for _ in range(PER_THREAD)]

    cli = [
        subprocess.Popen(
            [
                sys.executable,
                str(REPO / "manage.py"),
                "workflow",
                "submit",
                str(HELLO),
                "--pool",
                POOL,
                "--user",
                "researcher",
                "--priority",
                "LOW",
            ],
            cwd=REPO,
            env=sqlite_env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(CLI_SUBMITTERS)
    ]
    with ThreadPoolExecutor(HTTP_THREADS) as pool:
        over_http = [wid for ids in pool.map(submit_over_http, range(HTTP_THREADS)) for wid in ids]
    for process in cli:
        out, err = process.communicate(timeout=120)
        assert process.returncode == 0 and "submitted to pool" in out and "Traceback" not in err, (out, err)
        assert "No hostname was supplied" not in err  # eager tasks borrow no producer from amqp://localhost

    total = HTTP_THREADS * PER_THREAD + CLI_SUBMITTERS
    assert len(set(over_http)) == HTTP_THREADS * PER_THREAD
    stored = {wid for (wid,) in rows(database, "SELECT workflow_id FROM workflows_workflow")}
    assert stored == {f"hello-{n}" for n in range(1, total + 1)}  # every submission, numbered without a gap

    def statuses() -> dict[str, str]:
        return dict(rows(database, "SELECT workflow_id, status FROM workflows_workflow"))

    wait_until(
        lambda: set(statuses().values()) == {"COMPLETED"},
        120,
        f"every workflow COMPLETED (now {sorted(set(statuses().values()))})",
        interval=0.5,
    )
    for wid in over_http[:3]:
        assert api.status(wid) == "COMPLETED"
    kinds = rows(
        database,
        "SELECT t.pod_name, group_concat(e.kind) FROM workflows_task t JOIN workflows_taskevent e "
        "ON e.task_id = t.id GROUP BY t.id",
    )
    assert len(kinds) == total
    for pod_name, events in kinds:
        assert {"SUBMITTED", "CREATED"} <= set(events.split(",")), (pod_name, events)
    nodes = dict(
        rows(
            database,
            "SELECT b.name, count(n.id) FROM clusters_backend b LEFT JOIN clusters_node n "
            "ON n.backend_id = b.id GROUP BY b.name",
        )
    )
    assert nodes and set(nodes.values()) == {29}, nodes  # watch_cluster and the resync wrote the inventory too
    for name, (process, _) in started.items():
        assert process.poll() is None, f"{name} exited"
    for name in started:
        log = (tmp_path / f"{name}.log").read_text()
        assert "Traceback" not in log and "Internal Server Error" not in log, f"{name}.log:\n{log[-3000:]}"
