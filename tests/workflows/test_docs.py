"""The command-line examples of docs/workflows-api.md run as written, in order, against the demo data."""

from __future__ import annotations

from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from tests.test_docs_examples import bash_commands

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.django_db
def test_workflow_cli_examples_run_as_written(monkeypatch):
    monkeypatch.chdir(ROOT)
    call_command("seed_demo", stdout=StringIO(), stderr=StringIO())
    commands = [args for args in bash_commands(ROOT / "docs" / "workflows-api.md") if args[0] == "workflow"]
    assert [args[1] for args in commands] == ["submit", "submit", "list", "list", "show", "events", "cancel"]
    outputs = []
    for args in commands:  # pods are not created: nothing is committed inside the test's transaction
        out = StringIO()
        call_command(*args, stdout=out, stderr=StringIO())
        outputs.append(out.getvalue())
    assert "valid for pool robotics-inference (DRY_RUN; nothing stored)" in outputs[0]
    assert outputs[1].startswith("workflow hello-1 submitted to pool robotics-inference: PENDING")
    assert "hello-1" in outputs[2] and '"workflow_id": "hello-1"' in outputs[3]
    assert "status: PENDING" in outputs[4] and "SUBMITTED" in outputs[5]
    assert outputs[6].startswith("workflow hello-1: CANCELLED")
