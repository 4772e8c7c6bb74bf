"""Without a broker (`make dev`'s embedded default) tasks run in the process that sends them: a command line's
output carries no Celery "Task … succeeded" line, the dev server's processes (LOG_INPROCESS_TASKS) keep it."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from portal.devserver import DEV_ENVIRONMENT
from tests.docs_runner import ROOT, database_url

SEND = "from quotas.tasks import admission_all; print('sent', admission_all.delay().successful())"


def _shell(**env: str) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k not in ("CELERY_BROKER_URL", "LOG_INPROCESS_TASKS")}
    return subprocess.run(
        [sys.executable, "manage.py", "shell", "--no-imports", "-c", SEND],
        cwd=ROOT,
        env={**base, "DATABASE_URL": database_url(), **env},
        capture_output=True,
        text=True,
        check=True,
    )


@pytest.mark.django_db(transaction=True)
def test_a_command_line_prints_no_task_log_the_dev_server_keeps_it():
    quiet = _shell()
    assert quiet.stdout == "sent True\n" and "succeeded" not in quiet.stderr, quiet.stderr
    kept = _shell(LOG_INPROCESS_TASKS=DEV_ENVIRONMENT["LOG_INPROCESS_TASKS"])
    assert kept.stdout == "sent True\n"
    assert "Task quotas.tasks.admission_all[" in kept.stderr and "succeeded" in kept.stderr


WARNS = """import logging
from portal.celery import app
@app.task
def chatty():
    logging.getLogger('portal.chatty').info('progress line')
    logging.getLogger('portal.chatty').warning('something to act on')
chatty.delay()
logging.getLogger('portal.chatty').info('the command itself')
"""


@pytest.mark.django_db(transaction=True)
def test_an_in_process_task_keeps_its_warnings_and_the_command_its_own_lines():
    base = {k: v for k, v in os.environ.items() if k not in ("CELERY_BROKER_URL", "LOG_INPROCESS_TASKS")}
    done = subprocess.run(
        [sys.executable, "manage.py", "shell", "--no-imports", "-c", WARNS],
        cwd=ROOT,
        env={**base, "DATABASE_URL": database_url()},
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stderr.splitlines() == ["something to act on", "the command itself"], done.stderr
