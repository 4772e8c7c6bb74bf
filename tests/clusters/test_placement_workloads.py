"""`placement --pod` reads the pod template of a workload (Job, CronJob, Deployment, ...) and refuses any
kind without one; the ROSA seed's own workloads place on the simulated demo fleet's machine pools."""

from __future__ import annotations

import json
import urllib.request
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import base, call_command, load_command_class

from pools.engine.errors import EngineError
from pools.engine.workloads import READABLE_KINDS, pod_of
from tests.polling import PATIENCE

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples" / "placement"
SPEC = {"nodeSelector": {"node-type": "gpu"}, "containers": [{"name": "main", "image": "x"}]}
TEMPLATE = {"metadata": {"labels": {"app": "train"}}, "spec": SPEC}


@pytest.mark.parametrize(
    ("kind", "manifest"),
    [
        ("Job", {"spec": {"template": TEMPLATE}}),
        ("CronJob", {"spec": {"schedule": "@daily", "jobTemplate": {"spec": {"template": TEMPLATE}}}}),
        ("Deployment", {"spec": {"replicas": 3, "template": TEMPLATE}}),
        ("StatefulSet", {"spec": {"serviceName": "s", "template": TEMPLATE}}),
        ("DaemonSet", {"spec": {"template": TEMPLATE}}),
        ("ReplicaSet", {"spec": {"template": TEMPLATE}}),
        ("PodTemplate", {"template": TEMPLATE}),
    ],
)
def test_a_workload_yields_its_pod_template(kind, manifest):
    pod = pod_of({"apiVersion": "x/v1", "kind": kind, "metadata": {"name": "trainer"}, **manifest})
    assert pod == {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"labels": {"app": "train"}, "name": "trainer"},
        "spec": SPEC,
    }
    assert kind in READABLE_KINDS


def test_a_pod_or_a_bare_spec_is_read_as_it_is():
    pod = {"kind": "Pod", "metadata": {"name": "p"}, "spec": SPEC}
    assert pod_of(pod) is pod
    assert pod_of(SPEC) is SPEC  # no kind: a bare PodSpec, as before


@pytest.mark.parametrize("kind", ["PodDisruptionBudget", "Service", "ConfigMap", "List", "job"])
def test_a_kind_without_a_pod_template_is_refused_by_name(kind):
    with pytest.raises(EngineError) as caught:
        pod_of({"kind": kind, "spec": {"containers": []}})
    assert caught.value.field == "kind" and caught.value.value == kind
    assert caught.value.reason.startswith(f"a {kind} has no pod template to place; expected one of Pod, Job,")


@pytest.mark.parametrize(
    ("manifest", "field"),
    [
        ({"kind": "Job", "spec": {}}, "spec.template"),
        ({"kind": "Job"}, "spec"),
        ({"kind": "CronJob", "spec": {"jobTemplate": {"spec": {}}}}, "spec.jobTemplate.spec.template"),
        ({"kind": "Deployment", "spec": {"template": {"metadata": {}}}}, "spec.template.spec"),
        ({"kind": "PodTemplate", "template": "nope"}, "template"),
    ],
)
def test_a_workload_missing_its_template_names_the_path(manifest, field):
    with pytest.raises(EngineError) as caught:
        pod_of(manifest)
    assert caught.value.field == field


def test_a_document_that_is_not_an_object_is_refused():
    with pytest.raises(EngineError, match="must hold one object"):
        pod_of(["a", "list"])


@pytest.fixture
def demo_nodes(kube_server, tmp_path) -> Path:
    """The simulated demo cluster's nodes, fetched over HTTP as docs/placement.md does with curl."""
    target = tmp_path / "nodes.json"
    with urllib.request.urlopen(f"{kube_server.url}/api/v1/nodes", timeout=PATIENCE) as response:
        target.write_bytes(response.read())
    return target


def fitting(pod: Path, nodes: Path) -> list[str]:
    out = StringIO()
    call_command("placement", "--pod", str(pod), "--nodes", str(nodes), "--format", "json", stdout=out)
    return [row["name"] for row in json.loads(out.getvalue())["nodes"] if row["fits"]]


def test_the_rosa_seed_jobs_place_on_their_machine_pools(demo_nodes):
    assert fitting(EXAMPLES / "rosa-batch-job.yaml", demo_nodes) == ["additional-node-0", "additional-node-1"]
    assert fitting(EXAMPLES / "rosa-ml-training-job.yaml", demo_nodes) == ["ml-training-node-0", "ml-training-node-1"]
    # No selector, no toleration: only the nodes without a NoSchedule taint (the cpu pool).
    assert fitting(EXAMPLES / "rosa-spot-monitor-pod.yaml", demo_nodes) == [f"cpu-node-{i}" for i in range(4)]


def test_a_job_reads_the_template_not_the_job_spec(demo_nodes, tmp_path):
    """Read as a Pod, the Job's spec has no selector or toleration and would 'fit' the cpu nodes."""
    out = StringIO()
    call_command(
        "placement",
        "--pod",
        str(EXAMPLES / "rosa-ml-training-job.yaml"),
        "--nodes",
        str(demo_nodes),
        "--format",
        "json",
        stdout=out,
    )
    reasons = {row["name"]: row["reasons"] for row in json.loads(out.getvalue())["nodes"]}
    assert reasons["cpu-node-0"][0] == "node(s) didn't match nodeSelector: node-type=gpu (node has no node-type label)"
    assert any("untolerated taint workload-type=batch:NoSchedule" in r for r in reasons["additional-node-0"])


def test_the_cli_refuses_a_pod_disruption_budget_in_one_line(demo_nodes, capsys, monkeypatch):
    monkeypatch.setattr(base.connections, "close_all", lambda: None)
    command = load_command_class("pools", "placement")
    with pytest.raises(SystemExit) as exit_:
        command.run_from_argv(
            ["manage.py", "placement", "--pod", str(EXAMPLES / "rosa-ml-training-pdb.yaml"), "--nodes", str(demo_nodes)]
        )
    captured = capsys.readouterr()
    assert exit_.value.code == 1 and captured.out == ""
    assert captured.err.count("\n") == 1 and "Traceback" not in captured.err
    assert captured.err.startswith("error: kind: a PodDisruptionBudget has no pod template to place;")
    assert "(value: 'PodDisruptionBudget')" in captured.err
