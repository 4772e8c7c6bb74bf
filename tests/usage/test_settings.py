"""The usage record's retention settings (docs/usage.md, "Retention"; docs/configuration.md): 90 and 730 days
by default, and a value out of bounds stops the portal at start with the setting, the value and why: a raw
retention under a week (a negative one would prune every rolled-up attempt at once) or a rollup retention
shorter than the raw one (reports over the gap would read neither)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from django.conf import settings

RETENTION = ("USAGE_RAW_RETENTION_DAYS", "USAGE_ROLLUP_RETENTION_DAYS")
PRINT = "import django; django.setup(); from django.conf import settings as s; "
PRINT += "print(s.USAGE_RAW_RETENTION_DAYS, s.USAGE_ROLLUP_RETENTION_DAYS)"


def _start(**values: str) -> subprocess.CompletedProcess:
    environment = {key: value for key, value in os.environ.items() if key not in RETENTION}
    environment.update(values, DJANGO_SETTINGS_MODULE="portal.settings")
    return subprocess.run(
        [sys.executable, "-c", PRINT],
        env=environment,
        capture_output=True,
        text=True,
        cwd=settings.BASE_DIR,
        check=False,
    )


def test_raw_records_are_kept_90_days_and_rollups_730_by_default():
    done = _start()
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["90", "730"]


@pytest.mark.parametrize(
    ("values", "message"),
    [
        (
            {"USAGE_RAW_RETENTION_DAYS": "-1"},
            "USAGE_RAW_RETENTION_DAYS=-1: expected 7 to 3650 days (raw usage records are pruned this long after"
            " they end; the time-based fair share and the what-if read them)",
        ),
        (
            {"USAGE_RAW_RETENTION_DAYS": "3"},
            "USAGE_RAW_RETENTION_DAYS=3: expected 7 to 3650 days",
        ),
        (
            {"USAGE_ROLLUP_RETENTION_DAYS": "5000"},
            "USAGE_ROLLUP_RETENTION_DAYS=5000: expected 90 to 3650 days",
        ),
        (
            {"USAGE_RAW_RETENTION_DAYS": "120", "USAGE_ROLLUP_RETENTION_DAYS": "100"},
            "USAGE_ROLLUP_RETENTION_DAYS=100: expected 120 to 3650 days (rollups are kept at least as long as the raw "
            "records, USAGE_RAW_RETENTION_DAYS=120: a report over older hours reads only the rollups)",
        ),
    ],
)
def test_a_retention_out_of_bounds_is_refused_at_start(values, message):
    done = _start(**values)
    assert done.returncode != 0
    assert message in done.stderr


def test_the_least_retentions_are_accepted():
    done = _start(USAGE_RAW_RETENTION_DAYS="7", USAGE_ROLLUP_RETENTION_DAYS="7")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["7", "7"]
