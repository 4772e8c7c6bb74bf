"""Export → import gives the same machine pools: as a property of the pure pair (clusters.machinepools.export
writes, clusters.machinepools.terraform reads: a pool exported without a note reads back exactly, one with a
note does not), and through the doors: the seed's "Both Pools" exported as one module call, deleted, imported
again."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest
from django.core.management import base
from hypothesis import given, settings
from hypothesis import strategies as st

from clusters.machinepools import export, rosa_module
from clusters.machinepools.spec import TAINT_EFFECTS, MachinePoolSpec, Taint
from clusters.machinepools.terraform import read
from configs import store
from tests.clirun import run_as_cli
from tests.machinepools.conftest import OCM_ID
from tests.machinepools.test_terraform_import import EXAMPLES

NAMES = st.from_regex(r"[a-z][a-z0-9-]{0,10}[a-z0-9]", fullmatch=True)
LABEL_WORDS = st.from_regex(r"[a-z][a-z0-9._-]{0,6}[a-z0-9]", fullmatch=True)


@st.composite
def specs(draw) -> MachinePoolSpec:
    spot = draw(st.booleans())
    low = draw(st.integers(0, 5))
    fixed = draw(st.booleans())
    replicas = draw(st.integers(0, 5))
    labels = draw(st.dictionaries(LABEL_WORDS, LABEL_WORDS, max_size=3))
    if spot and draw(st.booleans()):
        labels = {**labels, **rosa_module.GPU_SPOT_LABELS}
    taints = tuple(
        {
            (t.key, t.effect): t
            for t in draw(
                st.lists(st.builds(Taint, LABEL_WORDS, LABEL_WORDS, st.sampled_from(TAINT_EFFECTS)), max_size=2)
            )
        }.values()
    )
    if spot and draw(st.booleans()):
        taints = rosa_module.GPU_SPOT_TAINTS
    return MachinePoolSpec(
        name=draw(NAMES),
        instance_type=draw(st.sampled_from(["m5.xlarge", "c5.2xlarge", "g4dn.xlarge", "p3.2xlarge"])),
        autoscaling=not fixed,
        replicas=replicas if fixed else 0,
        min_replicas=0 if fixed else low,
        max_replicas=0 if fixed else low + draw(st.integers(0, 20)),
        labels=labels,
        taints=taints,
        spot=spot,
        max_price=draw(st.sampled_from([None, Decimal("0.35"), Decimal("1.2")])) if spot else None,
        disk_size_gib=draw(st.sampled_from([300, 300, 500])),
    )


def read_back(pool) -> MachinePoolSpec:
    document = pool.document
    price = document["max_price"]
    return MachinePoolSpec(
        name=pool.name,
        instance_type=document["instance_type"],
        min_replicas=document["autoscaling"]["min_replicas"],
        max_replicas=document["autoscaling"]["max_replicas"],
        labels=document["labels"],
        taints=tuple(Taint(**taint) for taint in document["taints"]),
        spot=document["spot"],
        max_price=None if price is None else Decimal(str(price)),
        disk_size_gib=document["disk_size"],
    )


@settings(max_examples=150, deadline=None)
@given(st.lists(specs(), min_size=1, max_size=4, unique_by=lambda spec: spec.name), st.sampled_from(["", OCM_ID]))
def test_a_pool_exported_without_a_note_reads_back_the_same(pools, cluster_id):
    exported = export.terraform_calls([(spec, cluster_id) for spec in pools])
    reading = read(exported.text)
    back = {pool.name: read_back(pool) for pool in reading.pools}
    assert sorted(back) == sorted(spec.name for spec in pools)
    for spec in pools:
        noted = any(note.startswith(f"{spec.name}: ") for note in exported.notes)
        assert noted == (back[spec.name] != spec), (spec, back[spec.name], exported.notes)
    assert {pool.cluster.literal for pool in reading.pools} == {cluster_id or None}


def test_an_on_demand_and_a_spot_pool_of_one_cluster_share_a_call():
    compute = MachinePoolSpec("compute", "c5.2xlarge", min_replicas=1, max_replicas=20)
    gpu = MachinePoolSpec("gpu-spot", "g4dn.xlarge", max_replicas=3, labels={"node-type": "gpu"},
                          taints=rosa_module.GPU_SPOT_TAINTS, spot=True)  # fmt: skip
    other = MachinePoolSpec("other", "m5.xlarge", max_replicas=2)
    text = export.terraform_calls([(gpu, "c1"), (compute, "c1"), (other, "c1")]).text
    assert re.findall(r'^module "(\w+)"', text, re.M) == ["machine_pools_compute_gpu_spot", "machine_pools_other"]
    both = text.split("\n\n# machine pool other")[0]
    assert "create_additional_pool" in both and "create_gpu_spot_pool" in both
    assert export.terraform_calls([(gpu, "c1"), (compute, "c2")]).text.count("module ") == 2  # two clusters


@pytest.fixture
def cli(capsys, monkeypatch):
    monkeypatch.setattr(base.connections, "close_all", lambda: None)  # keep the test's transaction
    return lambda *args: run_as_cli(capsys, "pools", "machinepool", *args)


def shown(*names: str) -> dict:
    return {name: {k: v for k, v in store.show("MACHINE_POOL", name).items() if k != "description"} for name in names}


@pytest.mark.parametrize("how", [("--backend", "rosa-a"), ("compute", "gpu-spot")], ids=["backend", "names"])
def test_both_pools_export_as_one_call_and_import_back_the_same(backends, cli, tmp_path, how):
    assert cli("import", "--terraform", str(EXAMPLES / "both_pools.tf"), "--backend", "rosa-a")[0] == 0
    before = shown("compute", "gpu-spot")
    code, text, err = cli("export", *how, "--format", "terraform")
    assert (code, err) == (0, "")
    assert text.count("module ") == 1 and f'cluster_id = "{OCM_ID}"' in text
    for name in ("compute", "gpu-spot"):
        assert cli("delete", name)[0] == 0
    exported = tmp_path / "exported.tf"
    exported.write_text(text)
    code, out, _ = cli("import", "--terraform", str(exported))  # the backend from its OCM cluster id
    assert code == 0 and out.count("created") == 2
    assert shown("compute", "gpu-spot") == before


def test_export_refuses_unknown_names_and_backends(backends, cli):
    assert cli("export")[2] == "error: name: name the machine pools to export, or give --backend\n"
    assert cli("export", "--backend", "ghost")[2] == "error: --backend: unknown backend (value: 'ghost')\n"
    assert cli("export", "--backend", "karp")[2] == "error: --backend: has no machine pool (value: 'karp')\n"
    assert cli("import", "--terraform", str(EXAMPLES / "both_pools.tf"), "--backend", "rosa-a")[0] == 0
    assert cli("export", "compute", "--backend", "karp")[2] == (
        "error: name: unknown machine pool on backend karp (value: 'compute')\n"
    )
    code, out, _ = cli("export", "--backend", "rosa-a", "--format", "rosa")
    assert code == 0 and out.count("rosa create machinepool") == 2
