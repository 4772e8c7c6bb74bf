"""docs/usage.md's commands run as written (in-process, in order, on the test database), and the report they
print is the one the page shows for the same record."""

from __future__ import annotations

import io
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.management import call_command

from tests.test_docs_examples import bash_commands
from tests.usage.factories import T0, attempt_row
from usage.models import DeservedSample

PAGE = Path(__file__).resolve().parents[2] / "docs" / "usage.md"


@pytest.mark.django_db
def test_the_usage_pages_commands_run_as_written():
    attempt_row(
        project="vision",
        department="research",
        node_pool="h100",
        gpu=8,
        ended_at=T0 + timedelta(hours=30),
        hourly_cost_micros=98_320_000,
    )
    attempt_row(
        project="speech",
        department="research",
        node_pool="h100",
        gpu=2,
        ended_at=T0 + timedelta(hours=12),
        hourly_cost_micros=24_580_000,
    )
    attempt_row(
        project="infer",
        department="ops",
        gpu=1,
        cpu_millis=8000,
        memory_bytes=64 << 30,
        ended_at=T0 + timedelta(hours=100),
        hourly_cost_micros=5_120_000,
    )
    for hour in range(24 * 6):
        at = T0 + timedelta(hours=hour)
        DeservedSample.objects.create(
            hour=at, node_pool="h100", project="vision", department="research", gpu_deserved=8
        )
        DeservedSample.objects.create(
            hour=at, node_pool="h100", project="speech", department="research", gpu_deserved=4
        )
    commands = bash_commands(PAGE)
    assert [args[:2] for args in commands] == [["usage", "report"]] * 4 + [
        ["usage", v] for v in ("rollup", "rebuild", "prune")
    ]
    outputs = []
    for args in commands:
        out = io.StringIO()
        call_command(*args, stdout=out, stderr=io.StringIO())
        outputs.append(out.getvalue())
    page = PAGE.read_text()
    assert outputs[1].strip() in page  # the table the page shows is what the command prints
    assert "\n".join(outputs[2].splitlines()[:4]) in page  # and the CSV's first lines
