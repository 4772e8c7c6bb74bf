"""docs/access.md: its examples run as written, in order, against a fresh database."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command

from tests.test_docs_examples import ROOT, bash_commands


@pytest.mark.django_db
def test_access_page_runs_as_written(monkeypatch):
    monkeypatch.chdir(ROOT)
    commands = bash_commands(ROOT / "docs" / "access.md")
    assert len(commands) >= 14
    outputs = {}
    for args in commands:
        out, err = StringIO(), StringIO()
        call_command(*args, stdout=out, stderr=err)
        outputs[" ".join(args)] = (out.getvalue(), err.getvalue())
    assert json.loads(outputs["config show ROLE osmo-team"][0])["policies"] == [
        {"effect": "Allow", "actions": ["workflow:*"], "resources": ["pool/team*"]}
    ]
    assert outputs["access explain ana team-gpu-pool"][0].startswith("ALLOWED")
    assert json.loads(outputs["access explain ana myteam-cluster-01 --format json"][0]) == {
        "allowed": False,
        "because": [
            "no policy of roles osmo-default, osmo-team, osmo-user allows workflow:Create on pool/myteam-cluster-01"
        ],
    }
    assert outputs["access explain ana ml-prod-1 --action workflow:Delete"][0].startswith("DENIED")
    assert outputs["access explain ana ml-prod-1 --action workflow:Cancel"][0].startswith("ALLOWED")
    legacy = outputs["config set ROLE osmo-shared --file tests/fixtures/seeds/role_osmo_shared_legacy.json"]
    page = (ROOT / "docs" / "access.md").read_text()
    for line in legacy[1].splitlines() + legacy[0].splitlines():
        assert line in page, line  # the page shows the real output
    created = json.loads(outputs["token create ana laptop --roles osmo-team --expires 30d --format json"][0])
    assert set(created) == {"name", "token", "expires"}
