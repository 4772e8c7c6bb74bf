"""`placement --machine-pools`: the seed's workloads land where the seed says, on real nodes or on the
would-be node of a scale-from-zero machine pool, marked as such."""

from __future__ import annotations

import json
import urllib.request
from io import StringIO
from pathlib import Path

import pytest
import yaml
from django.core.management import call_command

from pools.engine.errors import EngineError
from tests.polling import PATIENCE

DOCS = Path(__file__).resolve().parents[2] / "docs" / "examples"
POOLS = DOCS / "machine-pools" / "rosa-scale-from-zero.yaml"
WOULD_BE = "ml-training (would-be g4dn.xlarge)"


@pytest.fixture
def nodes_without_gpu_pool(kube_server, tmp_path) -> Path:
    """The demo fleet as kubectl lists it, its ml-training machine pool scaled to zero (no node)."""
    with urllib.request.urlopen(f"{kube_server.url}/api/v1/nodes", timeout=PATIENCE) as response:
        listing = json.loads(response.read())
    listing["items"] = [n for n in listing["items"] if not n["metadata"]["name"].startswith("ml-training-")]
    target = tmp_path / "nodes.json"
    target.write_text(json.dumps(listing))
    return target


def placed(pod: str, nodes: Path, *extra: str) -> dict[str, dict]:
    out = StringIO()
    call_command(
        "placement",
        "--pod",
        str(DOCS / "placement" / pod),
        "--nodes",
        str(nodes),
        *extra,
        "--format",
        "json",
        stdout=out,
    )
    return {row["name"]: row for row in json.loads(out.getvalue())["nodes"]}


def test_the_ml_training_job_lands_on_the_would_be_node_of_the_scale_from_zero_pool(nodes_without_gpu_pool):
    without = placed("rosa-ml-training-job.yaml", nodes_without_gpu_pool)
    assert [name for name, row in without.items() if row["fits"]] == []  # nowhere, without the machine pools
    rows = placed("rosa-ml-training-job.yaml", nodes_without_gpu_pool, "--machine-pools", str(POOLS))
    assert [name for name, row in rows.items() if row["fits"]] == [WOULD_BE]
    assert rows[WOULD_BE]["would_be"] == "no node now; machine pool ml-training can add a g4dn.xlarge, 1 × T4; up to 3"
    assert all("would_be" not in row for name, row in rows.items() if name != WOULD_BE)  # additional has nodes


def test_the_batch_job_keeps_to_the_additional_nodes_and_not_the_would_be_gpu_node(nodes_without_gpu_pool):
    rows = placed("rosa-batch-job.yaml", nodes_without_gpu_pool, "--machine-pools", str(POOLS))
    assert [name for name, row in rows.items() if row["fits"]] == ["additional-node-0", "additional-node-1"]
    assert rows[WOULD_BE]["reasons"] == [
        "untolerated taint nvidia.com/gpu=true:NoSchedule",
        "node(s) didn't match nodeSelector: node.kubernetes.io/machinepool=additional (node has ml-training)",
    ]


def test_the_table_marks_the_would_be_node(nodes_without_gpu_pool):
    out = StringIO()
    call_command(
        "placement",
        "--pod",
        str(DOCS / "placement" / "rosa-ml-training-job.yaml"),
        "--nodes",
        str(nodes_without_gpu_pool),
        "--machine-pools",
        str(POOLS),
        stdout=out,
    )
    line = next(line for line in out.getvalue().splitlines() if line.startswith(WOULD_BE))
    assert line.split(WOULD_BE)[1].split(maxsplit=1) == [
        "yes",
        "- (no node now; machine pool ml-training can add a g4dn.xlarge, 1 × T4; up to 3)",
    ]


def test_a_bad_machine_pool_file_names_the_field(nodes_without_gpu_pool, tmp_path):
    bad = tmp_path / "pools.yaml"
    bad.write_text("gpu: {instance_type: g9.huge, max_replicas: 2}\n")
    with pytest.raises(EngineError) as unknown:
        placed("rosa-ml-training-job.yaml", nodes_without_gpu_pool, "--machine-pools", str(bad))
    assert unknown.value.field == "gpu.instance_type" and "known: " in unknown.value.reason
    bad.write_text("gpu: {instance_type: g4dn.xlarge, max_replicas: 2, taints: [{key: a, effect: Sometimes}]}\n")
    with pytest.raises(EngineError) as taint:
        placed("rosa-ml-training-job.yaml", nodes_without_gpu_pool, "--machine-pools", str(bad))
    assert taint.value.field == "gpu.taints"


def test_what_config_show_prints_is_accepted(nodes_without_gpu_pool, tmp_path, db):
    """`config show MACHINE_POOL --format yaml` (the documents, by name: `autoscaling: {min_replicas,
    max_replicas}`, `replicas: null`, `disk_size`) gives the same would-be node as the model-field file."""
    from configs import store
    from configs.revisions import Actor

    actor = Actor(name="tester", source="cli")
    store.apply("BACKEND", "rosa-a", {"description": "export only"}, actor)
    for name, body in yaml.safe_load(POOLS.read_text()).items():
        document = {"backend": "rosa-a", "autoscaling": {k: body.pop(k) for k in ("min_replicas", "max_replicas")}}
        body.pop("autoscaling", None)
        store.apply("MACHINE_POOL", name, {**document, **body}, actor)
    shown = StringIO()
    call_command("config", "show", "MACHINE_POOL", "--format", "yaml", stdout=shown)
    documents = tmp_path / "machine-pools.yaml"
    documents.write_text(shown.getvalue())
    assert "replicas: null" in shown.getvalue() and "  autoscaling:\n    min_replicas: 0" in shown.getvalue()
    from_show = placed("rosa-ml-training-job.yaml", nodes_without_gpu_pool, "--machine-pools", str(documents))
    assert from_show == placed("rosa-ml-training-job.yaml", nodes_without_gpu_pool, "--machine-pools", str(POOLS))
    assert from_show[WOULD_BE]["fits"]
    one = StringIO()
    call_command("config", "show", "MACHINE_POOL", "ml-training", "--format", "yaml", stdout=one)
    documents.write_text(one.getvalue())
    with pytest.raises(EngineError) as unnamed:
        placed("rosa-ml-training-job.yaml", nodes_without_gpu_pool, "--machine-pools", str(documents))
    assert unnamed.value.field == "(document)" and "has no name" in unnamed.value.reason
