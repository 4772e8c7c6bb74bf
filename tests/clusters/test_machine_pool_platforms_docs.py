"""docs/machine-pool-platforms.md: its placement transcripts are what placement prints, and the capacity lines it
shows are the service's (its commands run on the demo in tests/test_docs_examples.py)."""

from __future__ import annotations

import re
import shlex
from io import StringIO
from pathlib import Path

from django.core.management import call_command

from pools.models import Pool
from pools.services.machine_pool_capacity import growth
from tests.docs_runner import transcripts

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "machine-pool-platforms.md"


def run(args: list[str]) -> str:
    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO())
    return out.getvalue()


def test_the_placement_transcripts_are_what_placement_prints(monkeypatch):
    """The page's first commands run on the demo (tests/test_docs_examples.py); its placement transcripts read
    files only, and print what the page shows."""
    monkeypatch.chdir(ROOT)
    shown = [t for t in transcripts(PAGE) if t.command.startswith("python manage.py placement ")]
    assert len(shown) == 2
    for transcript in shown:
        assert run(shlex.split(transcript.command)[2:]).rstrip("\n") == transcript.expected, transcript.command


def test_the_capacity_lines_are_the_services(machine_pools):
    for name, platform in (("additional", "additional"), ("gpu-zero", "t4-spot"), ("ml-training", "ml-training")):
        run(["machinepool", "platform", name, "--pool", "rosa", "--platform", platform])
    pool = Pool.objects.get(name="rosa")
    grown = growth([pool.pk], {pool.backend_id})[pool.pk]
    texts = {m.text for served in grown.platforms.values() for m in served.machine_pools}
    block = re.search(r"Wherever capacity shows.*?```text\n(.*?)```", PAGE.read_text(), re.S).group(1)
    *machine_pool_lines, total = block.rstrip("\n").splitlines()
    assert set(machine_pool_lines) <= texts
    assert total == f"Machine pools: {grown.total.summary}"
