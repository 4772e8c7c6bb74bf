"""`workflow submit` without a broker (`make dev`'s embedded default): the pods are created in the command's
own process, and its output is its answer only. The task's INFO line, naming the workflow by the id its user
sees, is kept where LOG_INPROCESS_TASKS is true (`make dev`'s server and watchers, var/*.log)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import yaml

from tests.docs_runner import ROOT, database_url
from tests.workflows.conftest import spec


def _submit(spec_file, **env: str) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k not in ("CELERY_BROKER_URL", "LOG_INPROCESS_TASKS")}
    return subprocess.run(
        [sys.executable, "manage.py", "workflow", "submit", str(spec_file), "--pool", "batch", "--user", "alice"],
        cwd=ROOT,
        env={**base, "DATABASE_URL": database_url(), **env},
        capture_output=True,
        text=True,
        check=True,
    )


@pytest.mark.django_db(transaction=True)  # the command's own process reads what the fixtures committed
def test_submit_prints_its_answer_and_no_task_log_line(pool, alice, tmp_path):
    spec_file = tmp_path / "hello.yaml"
    spec_file.write_text(yaml.safe_dump(spec("hello")))
    quiet = _submit(spec_file)
    assert quiet.stdout.splitlines()[0] == "workflow hello-1 submitted to pool batch: PENDING"
    assert quiet.stderr == "", quiet.stderr
    kept = _submit(spec_file, LOG_INPROCESS_TASKS="true")
    assert kept.stdout.splitlines()[0] == "workflow hello-2 submitted to pool batch: PENDING"
    assert "workflow hello-2 on sim: 1 pod(s) created, 0 adopted, 0 failed" in kept.stderr.splitlines(), kept.stderr
