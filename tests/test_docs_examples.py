"""The CLI examples in docs/ run as written (in order, against a fresh database)."""

from __future__ import annotations

import re
import shlex
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

ROOT = Path(__file__).resolve().parent.parent


def bash_commands(markdown: Path) -> list[list[str]]:
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", markdown.read_text(), re.S):
        for command in block.replace("\\\n", " ").splitlines():
            command = command.split("  #")[0].strip()
            if command.startswith("python manage.py "):
                commands.append(shlex.split(command)[2:])
    return commands


@pytest.mark.django_db
def test_config_cli_page_runs_as_written(monkeypatch):
    monkeypatch.chdir(ROOT)
    commands = bash_commands(ROOT / "docs" / "config-cli.md")
    assert len(commands) >= 10
    outputs = []
    for args in commands:
        out = StringIO()
        call_command(*args, stdout=out, stderr=StringIO())
        outputs.append(out.getvalue())
    assert "POOL team-a100 created (revision 1)" in outputs[3]
    assert any("team-a100" in output and "cluster-a" in output for output in outputs)
