"""The soak, short (docs/operations.md, "Soak"): `python -m soak` for 3 minutes of load with every fault once
(the cluster's API down 20 s instead of 60) must pass every check. `make soak` runs it for 30 minutes.

It runs as a child process with its own PostgreSQL database (created and dropped by it, named after this test's
database so parallel runs do not meet) and its own Redis server; its report is printed (-s shows it)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from soak.stack import REPO

pytestmark = [pytest.mark.soak, pytest.mark.timeout(1200)]

MINUTES = os.environ.get("SOAK_TEST_MINUTES", "3")


def test_three_minutes_under_every_fault_pass_every_check(tmp_path):
    server = os.environ.get("DATABASE_URL", "")
    if not server.startswith("postgres"):
        pytest.fail("the soak needs PostgreSQL: set DATABASE_URL (make test does)")
    database = "_".join(
        filter(None, (os.environ.get("TEST_DATABASE_NAME") or "test", os.environ.get("PYTEST_XDIST_WORKER"), "soak"))
    )
    argv = [sys.executable, "-m", "soak", "--minutes", MINUTES, "--outage-seconds", "20", "--cycles", "1"]
    argv += ["--server", server, "--database", database, "--logs", str(tmp_path)]
    run = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=1100)
    print(run.stdout[-6000:])
    assert run.returncode == 0, (run.stdout[-6000:], run.stderr[-3000:])
    assert "soak: every check passed" in run.stdout
