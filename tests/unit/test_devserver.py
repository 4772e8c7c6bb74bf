"""The pieces of `manage.py devserver` and `manage.py periodic`: port checks, the supervisor's restart with
backoff and one console line per crash, stopping, the periodic runner, and retrying a locked write."""

from __future__ import annotations

import io
import logging
import signal
import socket
import sys

import pytest
from django.db import OperationalError

from portal import devserver
from portal.dblock import retry_locked
from portal.periodic import PeriodicRunner, jobs_from_schedule
from tests.devstack import free_port, wait_until


def test_busy_port_is_refused_with_its_name_and_a_free_one_passes():
    port, other = free_port(), free_port()
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", port))
        listener.listen()
        with pytest.raises(devserver.PortInUse, match=f"web server port {port} is in use"):
            devserver.check_ports({"web server": port, "simulated cluster": other})
    devserver.check_ports({"web server": port})


def supervisor(tmp_path, *programs: str) -> tuple[devserver.Supervisor, io.StringIO]:
    console = io.StringIO()
    children = [
        devserver.Child(f"child{n}", [sys.executable, "-c", program], tmp_path / f"child{n}.log")
        for n, program in enumerate(programs)
    ]
    return devserver.Supervisor(children, {}, tmp_path, console=console), console


def test_a_crashed_child_is_reported_in_one_line_and_restarted_with_a_growing_backoff(tmp_path, monkeypatch):
    monkeypatch.setattr(devserver, "BACKOFF_START", 0.05)
    sup, console = supervisor(tmp_path, "import sys; print('bye'); sys.exit(3)")
    child = sup.children[0]
    sup.start(child)
    first_pid = child.pid
    wait_until(lambda: (sup.poll(), child.restarts >= 2)[1], 10, "two restarts", interval=0.02)
    assert child.pid != first_pid
    lines = console.getvalue().splitlines()
    assert lines[0].startswith("child0 exited (exit code 3) after 0s; restarting in 0s (log: ")
    assert len(lines) == child.restarts + (child.restart_at is not None)  # one line per crash, nothing else
    assert child.failures >= 2  # crashing in a row: the backoff doubles
    assert "bye" in (tmp_path / "child0.log").read_text()  # the child's output goes to its log, not the console
    sup.stop_all()


def test_stop_all_ends_every_child_and_its_group(tmp_path, monkeypatch):
    monkeypatch.setattr(devserver, "STOP_GRACE", 1.0)
    sup, console = supervisor(
        tmp_path,
        "import time; time.sleep(60)",
        "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('de' + 'af', "
        "flush=True); time.sleep(60)",
    )
    for child in sup.children:
        sup.start(child)
    wait_until(lambda: "\ndeaf" in (tmp_path / "child1.log").read_text(), 10, "child1 ignores SIGTERM")
    assert set(__import__("json").loads(sup.pids_path.read_text())["children"]) == {"child0", "child1"}
    sup.stop_all()  # the second ignores SIGTERM: killed after the grace period, long before its sleep ends
    assert [c.process.returncode for c in sup.children] == [-signal.SIGTERM, -signal.SIGKILL]
    assert not sup.pids_path.exists() and console.getvalue() == ""


def test_exit_descriptions():
    assert devserver.describe_exit(-9) == "killed by SIGKILL"
    assert devserver.describe_exit(1) == "exit code 1"


@pytest.mark.django_db  # between jobs the runner checks the database connections (close_old_connections)
def test_periodic_jobs_are_beats_schedule_and_one_failure_does_not_stop_the_others(caplog):
    from portal.celery import app

    jobs = {job.name: job for job in jobs_from_schedule(app.conf.beat_schedule)}
    assert set(jobs) == {
        "inventory-full-resync",
        "workflows-reconcile",
        "workflows-timeouts",
        "workflows-reaper",
        "workflows-archive",
        "quota-schedulers-resync",
        "node-pool-labels",
        "quotas-admission",
        "machine-pools-reconcile",
        "capacity-summary",
        "usage-rollup",
        "usage-prune",
        "usage-deserved-samples",
        "notifications-sweep",
    }
    assert jobs["workflows-reconcile"].task == "workflows.tasks.reconcile_workflows"
    ran = []

    def run(task: str):
        ran.append(task)
        if task == "workflows.tasks.enforce_timeouts":
            raise RuntimeError("cluster on fire")
        return {"ok": True}

    runner = PeriodicRunner(list(jobs.values()), run=run)
    with caplog.at_level(logging.INFO, logger="portal.periodic"):
        assert runner.run_due() == len(jobs)
        assert runner.run_due() == 0  # not due again before its interval
    assert sorted(ran) == sorted(job.task for job in jobs.values())
    # at start, not after its interval: seed_demo leaves the demo's machine pools to this first pass
    assert "clusters.tasks.reconcile_all_machine_pools" in ran
    failed = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert [r.getMessage() for r in failed] == [
        "periodic workflows-timeouts failed: RuntimeError: cluster on fire (next run in 30s)"
    ]
    assert not failed[0].exc_info  # one line, no traceback
    assert jobs["workflows-timeouts"].failures == 1 and jobs["workflows-reaper"].runs == 1


def test_a_locked_write_is_tried_again_and_other_errors_are_not(monkeypatch):
    monkeypatch.setattr("portal.dblock.BACKOFF_START", 0.01)
    attempts = []

    def locked_twice():
        attempts.append(1)
        if len(attempts) < 3:
            raise OperationalError("database is locked")
        return "written"

    assert retry_locked(locked_twice, "test") == "written" and len(attempts) == 3
    attempts.clear()
    with pytest.raises(OperationalError, match="no such table"):
        retry_locked(lambda: attempts.append(1) or (_ for _ in ()).throw(OperationalError("no such table: x")), "t")
    assert len(attempts) == 1
    with pytest.raises(OperationalError, match="locked"):
        retry_locked(lambda: (_ for _ in ()).throw(OperationalError("database is locked")), "t", attempts=2)


def test_the_simulated_clusters_are_the_demo_backends_each_at_its_own_path(tmp_path):
    """`make dev` serves one simulated cluster per demo backend (kubesim.fleet.DEMO_CLUSTERS) on the kubesim port,
    and the backends seeded without DEMO_CLUSTERS_URL point at theirs on the default port."""
    from kubesim.fleet import DEMO_CLUSTERS, DEMO_MACHINE_POOL_CLUSTER
    from pools.management.commands.seed_demo import DEMO_DIR
    from portal.docfiles import load_document

    backends = load_document(DEMO_DIR / "backends.yaml")
    assert sorted(backends) == sorted(DEMO_CLUSTERS)
    for name, body in backends.items():
        assert body["api_url"] == f"http://127.0.0.1:8001/clusters/{name}"
    assert (
        backends[DEMO_MACHINE_POOL_CLUSTER]["ocm_url"] == f"http://127.0.0.1:8001/clusters/{DEMO_MACHINE_POOL_CLUSTER}"
    )
    kubesim = devserver.children(sys.executable, "manage.py", tmp_path, 8000, 8001)[0]
    argv = kubesim.argv[kubesim.argv.index("kubesim") + 1 :]
    assert argv[argv.index("--fleet") + 1] == "demo-clusters" and argv[argv.index("--port") + 1] == "8001"
    assert argv[argv.index("--machine-pools") + 1] == "demo" and argv[argv.index("--state") + 1] == str(
        tmp_path / "kubesim"
    )
