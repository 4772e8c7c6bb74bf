"""docs/machine-pool-platforms.md: its commands run as written, its transcripts are what they print, and
the capacity lines it shows are the service's."""

from __future__ import annotations

import re
import shlex
from io import StringIO
from pathlib import Path

from django.core.management import call_command

from pools.models import Pool
from pools.services.machine_pool_capacity import growth
from tests.docs_runner import transcripts
from tests.test_docs_examples import bash_commands

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "machine-pool-platforms.md"


def run(args: list[str]) -> str:
    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO())
    return out.getvalue()


def test_the_page_runs_as_written(machine_pools, monkeypatch):
    monkeypatch.chdir(ROOT)
    outputs = {" ".join(args): run(args) for args in bash_commands(PAGE)}
    assert len(outputs) == 4
    preview = outputs["pool preview rosa --platform t4-spot --gpu 1 --format yaml"]
    assert "warnings:\n- no node now; machine pool gpu-zero can add a g4dn.xlarge, 1 × T4; up to 3\n" in preview
    shown = transcripts(PAGE)
    assert len(shown) == 4
    for transcript in shown:
        args = shlex.split(transcript.command)[2:]
        printed = outputs.get(" ".join(args)) or run(args)
        if args[0] == "machinepool":  # it ran above: the transcript is its first run
            assert printed.rstrip("\n") == transcript.expected
        else:
            assert run(args).rstrip("\n") == transcript.expected, transcript.command


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
