"""`manage.py watch_cluster` as a process: it syncs, follows events, and stops cleanly on SIGTERM."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection

from clusters.models import Node
from tests.kubesim.conftest import wait_until
from tests.polling import PATIENCE

ROOT = Path(__file__).resolve().parents[2]


def _database_url() -> str:
    settings = connection.settings_dict
    if connection.vendor != "postgresql":
        pytest.fail("the subprocess reaches the test database through DATABASE_URL: run with `make test` (PostgreSQL)")
    user = settings["USER"] or "postgres"
    password = f":{settings['PASSWORD']}" if settings["PASSWORD"] else ""
    return (
        f"postgres://{user}{password}@{settings['HOST'] or '127.0.0.1'}:{settings['PORT'] or 5432}/{settings['NAME']}"
    )


def test_watch_cluster_follows_events_and_stops_on_sigterm(transactional_db, backend, kube_server):
    env = {**os.environ, "DATABASE_URL": _database_url(), "PYTHONUNBUFFERED": "1"}
    env.pop("CELERY_BROKER_URL", None)
    process = subprocess.Popen(
        [sys.executable, "manage.py", "watch_cluster", "sim", "--watch-seconds", "30"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        first = process.stdout.readline()  # blocks until the initial sync is done (or the process died)
        assert first == "backend sim: 29 nodes, 0 pods; watching\n", first or process.stderr.read()
        kube_server.emulator.patch("nodes", "cpu-node-0", {"metadata": {"labels": {"seen-by": "watcher"}}})
        wait_until(
            lambda: Node.objects.get(backend=backend, name="cpu-node-0").labels.get("seen-by") == "watcher",
            timeout=PATIENCE,
        )
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=PATIENCE)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 0, err
    assert out.strip().endswith("events") and "stopped after" in out
    assert "Traceback" not in err
