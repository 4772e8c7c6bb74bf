"""docs/teams.md: its examples run as written, in order, against a fresh database, and print what it shows."""

from __future__ import annotations

import json
import shlex
from io import StringIO

import pytest
from django.core.management import call_command

from portal.errors import DomainError
from tests.docs_runner import transcripts
from tests.test_docs_examples import ROOT, bash_commands

PAGE = ROOT / "docs" / "teams.md"


@pytest.mark.django_db
def test_teams_page_runs_as_written(monkeypatch):
    monkeypatch.chdir(ROOT)
    commands = bash_commands(PAGE)
    assert len(commands) == 15  # 9 for teams, 4 for department admins, 2 for priority
    outputs = {}
    for args in commands:
        out = StringIO()
        call_command(*args, stdout=out, stderr=StringIO())
        outputs[" ".join(args)] = out.getvalue()
    page = PAGE.read_text()
    for command in (
        "team show project safety",
        "team list",
        "team admins add planning dora",
        "access explain dora department/planning --action config:Update",
        "team update safety --priority 2",
    ):
        for line in outputs[command].splitlines():
            assert line in page, line  # the page shows the real output
    assert json.loads(outputs["team list departments --format json"])["departments"][0]["projects"] == [
        "routes",
        "safety",
    ]
    assert json.loads(outputs["config show ROLE osmo-safety"])["external_roles"] == ["safety-researchers"]
    assert json.loads(outputs["team admins list planning --format json"]) == {
        "department": "planning",
        "admins": ["dora"],
    }
    history = json.loads(outputs["team history safety --format json"])["history"]
    assert [event["changes"] for event in history if event["action"] == "team.update"] == [{"priority": [0, 2]}]
    [transcript] = transcripts(PAGE)
    with pytest.raises(DomainError) as refused:
        call_command(*shlex.split(transcript.command)[2:], stdout=StringIO())
    assert f"error: {refused.value}" == transcript.expected
