"""Every portal process (web, workers, the CLI: whatever runs django.setup) collects the garbage collector's
youngest generation every GC_YOUNG_THRESHOLD net allocations (portal.gc_tuning), bounded to 700..1,000,000."""

from __future__ import annotations

import os

import pytest

from tests.devstack import manage

SHOW = "import gc; print(gc.get_threshold())"


@pytest.mark.parametrize(
    ("setting", "expected"),
    [
        (None, "(10000, 10, 10)"),
        ("50000", "(50000, 10, 10)"),
        ("5", "(700, 10, 10)"),
        ("10000000", "(1000000, 10, 10)"),
    ],
)
def test_a_process_starts_with_the_young_threshold_it_is_given(setting, expected):
    env = {k: v for k, v in os.environ.items() if k != "GC_YOUNG_THRESHOLD"}
    env["DEBUG"] = "true"
    if setting is not None:
        env["GC_YOUNG_THRESHOLD"] = setting
    done = manage(env, "shell", "-c", SHOW)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == expected
