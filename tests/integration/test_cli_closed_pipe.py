"""`manage.py … | head` closes the pipe before the command has written everything: the command stops quietly
with status 141, as Unix tools do, instead of printing a BrokenPipeError traceback (portal.commands)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.clusters.test_watch_command import _database_url

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.django_db(transaction=True)
def test_a_reader_gone_before_the_output_means_a_quiet_exit():
    reader, writer = os.pipe()
    os.close(reader)  # gone before the command writes: its first write meets EPIPE
    env = {**os.environ, "DATABASE_URL": _database_url(), "TEST_DATABASE_NAME": ""}
    try:
        ran = subprocess.run(
            [sys.executable, "manage.py", "node-pool", "list"],
            cwd=ROOT,
            stdout=writer,
            stderr=subprocess.PIPE,
            env=env,
            timeout=60,
            check=False,
        )
    finally:
        os.close(writer)
    assert (ran.returncode, ran.stderr.decode()) == (141, "")
