"""docs/machine-pools.md runs as written: its commands in order against a fresh database (in-process, as the
config CLI page's test does), its transcripts give exactly the output shown, its example documents are the
presets, and the document it describes is one the config type reads."""

from __future__ import annotations

import json
import re
import shlex
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import base, call_command

from clusters.config_types import MACHINE_POOL
from clusters.machinepools.presets import ADDITIONAL_WORKER_POOL, GPU_SPOT_POOL
from clusters.models import MachinePool
from tests.clirun import run_as_cli
from tests.docs_runner import transcripts
from tests.test_docs_examples import bash_commands

ROOT = Path(__file__).resolve().parent.parent.parent
PAGE = ROOT / "docs" / "machine-pools.md"
APPS = {"config": "pools", "machinepool": "pools"}


@pytest.mark.django_db
def test_the_page_runs_as_written(monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    monkeypatch.setattr(base.connections, "close_all", lambda: None)  # keep the test's transaction
    call_command("seed_demo", stdout=StringIO(), stderr=StringIO())  # the demo's machine pools, as under make dev
    commands = bash_commands(PAGE)
    assert len(commands) >= 10
    outputs = []
    for args in commands:
        out = StringIO()
        call_command(*args, stdout=out, stderr=StringIO())
        outputs.append(out.getvalue())
    assert "MACHINE_POOL gpu-spot created (revision 1)" in outputs[2]
    assert json.loads(outputs[3])["taints"][1] == {"key": "spot", "value": "true", "effect": "PreferNoSchedule"}
    assert "MACHINE_POOL gpu-spot rolled back to r1 (revision 3)" in outputs[7]
    assert "create_gpu_spot_pool" in outputs[9] and "--use-spot-instances" in outputs[10]
    assert outputs[11].startswith("# dry run: nothing written.") and "compute-gpu:" in outputs[11]
    assert outputs[12] == (
        "MACHINE_POOL compute created (revision 1) on backend rosa-a\n"
        "MACHINE_POOL compute-gpu created (revision 1) on backend rosa-a\n"
    )
    assert outputs[13].count("module ") == 1 and 'module "machine_pools_compute_compute_gpu" {' in outputs[13]
    assert sorted(MachinePool.objects.values_list("name", flat=True)) == ["additional", "gpu-spot", "ml-training"]
    listed = outputs[16].splitlines()  # machinepool list: rosa's columns and the status (not reconciled here)
    assert listed[0].split()[:3] == ["ID", "BACKEND", "AUTOSCALING"] and listed[0].rstrip().endswith("COST/h")
    assert [line.split()[0] for line in listed[1:]] == ["additional", "gpu-spot", "ml-training"]
    assert json.loads(outputs[17])["count"] == 0  # none is ready before the provider answered
    assert "Platforms:             robotics-spot/t4-spot\n" in outputs[18]
    assert "    node.kubernetes.io/machinepool: ml-training\n" in outputs[18]
    shown = transcripts(PAGE)
    assert len(shown) == 5
    for transcript in shown:
        name, *args = shlex.split(transcript.command)[2:]
        code, out, err = run_as_cli(capsys, APPS[name], name, *args)
        assert (out + err).rstrip("\n") == transcript.expected, transcript.command
        assert code == (1 if transcript.expected.startswith("error:") else 0)


def test_the_example_documents_are_the_presets_and_the_described_document_reads():
    for preset, path in [
        (ADDITIONAL_WORKER_POOL, "machine_pool_additional.json"),
        (GPU_SPOT_POOL, "machine_pool_gpu_spot.json"),
    ]:
        assert json.loads((ROOT / "docs" / "examples" / path).read_text()) == preset.document("rosa-a")
    described = json.loads(re.search(r"## The document\n\n```json\n(.*?)```", PAGE.read_text(), re.S).group(1))
    assert described == {**GPU_SPOT_POOL.document("rosa-a"), "replicas": None}
    assert MACHINE_POOL.snapshot(MACHINE_POOL.parse("gpu-spot", described)) == described
