"""docs/quotas.md: its examples run as written, in order, against a fresh database, and print what it shows."""

from __future__ import annotations

import json
import shlex
from io import StringIO

import pytest
from django.core.management import call_command

from portal.errors import DomainError
from tests.docs_runner import transcripts
from tests.test_docs_examples import ROOT, bash_commands

PAGE = ROOT / "docs" / "quotas.md"


@pytest.mark.django_db
def test_quotas_page_runs_as_written(monkeypatch):
    monkeypatch.chdir(ROOT)
    commands = bash_commands(PAGE)
    assert len(commands) == 7
    outputs = {}
    for args in commands:
        out = StringIO()
        call_command(*args, stdout=out, stderr=StringIO())
        outputs[" ".join(args)] = out.getvalue()
    page = PAGE.read_text()
    for command in ("config show NODE_POOL a100", "config show NODE_POOL gpu-cluster-default"):
        assert f"```\n{outputs[command]}```" in page  # the page shows the real output, whole
    shown = json.loads(outputs["config show NODE_POOL a100"])
    assert shown["projects"]["vision"]["memory"]["deserved"] == 512 * 2**30
    [transcript] = transcripts(PAGE)
    with pytest.raises(DomainError) as refused:
        call_command(*shlex.split(transcript.command)[2:], stdout=StringIO())
    assert f"error: {refused.value}" == transcript.expected
