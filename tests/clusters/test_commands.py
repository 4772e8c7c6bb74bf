"""Commands: `placement` (json, table, bad quantity), `backend test|sync|status`, `watch_cluster` wiring."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import base, call_command, get_commands

from clusters.kube.errors import KubeError
from clusters.models import Backend, Node
from tests.clirun import run_as_cli

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples" / "placement"
PLACEMENT = [
    "--pod",
    str(EXAMPLES / "pod.yaml"),
    "--nodes",
    str(EXAMPLES / "nodes.json"),
    "--pods",
    str(EXAMPLES / "pods.json"),
]


def run(*args) -> str:
    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO())
    return out.getvalue()


@pytest.fixture
def cli(capsys, monkeypatch):
    """Run as `python manage.py NAME ARGS` would: errors become one stderr line and exit code 1."""
    monkeypatch.setattr(base.connections, "close_all", lambda: None)  # keep the test's transaction

    return lambda name, *args: run_as_cli(capsys, get_commands()[name], name, *args)  # pools or clusters


def test_placement_json_is_exactly_nodes_fits_reasons():
    data = json.loads(run("placement", *PLACEMENT, "--format", "json"))
    assert set(data) == {"nodes", "not_evaluated"}
    assert [set(row) for row in data["nodes"]] == [{"name", "fits", "reasons"}] * 4
    verdicts = {row["name"]: (row["fits"], row["reasons"]) for row in data["nodes"]}
    assert verdicts["h100-node-1"] == (True, [])  # its Succeeded pod does not count
    assert verdicts["h100-node-0"] == (False, ["Insufficient nvidia.com/gpu: requested 4, free 2 of 8"])
    assert verdicts["a100-node-2"][1][0] == "node is cordoned (unschedulable)"
    assert "inter-pod affinity/anti-affinity" in data["not_evaluated"]


def test_placement_table():
    text = run("placement", *PLACEMENT)
    assert text.splitlines()[0].split() == ["NODE", "FITS", "REASONS"]
    assert "h100-node-1  yes   -" in text
    assert "1 of 4 nodes fit." in text


def test_placement_without_pods_and_with_a_bare_list(tmp_path):
    data = json.loads(
        run(
            "placement",
            "--pod",
            str(EXAMPLES / "pod.yaml"),
            "--nodes",
            str(EXAMPLES / "nodes.json"),
            "--format",
            "json",
        )
    )
    assert [row["name"] for row in data["nodes"] if row["fits"]] == ["h100-node-0", "h100-node-1"]


def test_placement_bad_quantity_is_one_clean_line(cli):
    code, out, err = cli(
        "placement",
        "--pod",
        str(EXAMPLES / "bad_pod.yaml"),
        "--nodes",
        str(EXAMPLES / "nodes.json"),
        "--format",
        "json",
    )
    assert code == 1 and out == ""
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("error: spec.containers[0].resources.requests.memory:") and "'1K'" in err


def test_placement_missing_file_is_one_clean_line(cli, tmp_path):
    code, _, err = cli("placement", "--pod", str(tmp_path / "nope.yaml"), "--nodes", str(EXAMPLES / "nodes.json"))
    assert code == 1 and err.count("\n") == 1 and "file not found" in err


def test_backend_test_reports_version_and_permissions(backend, kube_server):
    kube_server.emulator.create("namespaces", {"metadata": {"name": "osmo-workflows"}})
    backend.namespace = "osmo-workflows"
    backend.save()
    text = run("backend", "test", "sim")
    assert f"backend sim: connected to {kube_server.url}, Kubernetes v1.33.0" in text
    assert "permissions (probes (the server has no SelfSubjectAccessReview)):" in text
    for line in (
        "yes list nodes (cluster)",
        "yes watch pods (all namespaces)",
        "yes create pods in namespace osmo-workflows",
        "yes delete pods in namespace osmo-workflows",
    ):
        assert line in text
    assert "result: everything the portal needs is allowed" in text
    assert kube_server.emulator.list("pods", namespace="osmo-workflows") == []  # the probe pod was removed
    backend.refresh_from_db()
    assert backend.server_version == "v1.33.0"


def test_backend_test_names_missing_permissions(backend, kube_server):
    kube_server.emulator.fail_next("watch", "pods", status=403, times=None)
    data = json.loads(run_as_json(backend))
    assert not data["ok"]
    denied = [(c["verb"], c["resource"]) for c in data["checks"] if c["allowed"] is False]
    assert denied == [("watch", "pods")]


def run_as_json(backend) -> str:
    out = StringIO()
    with pytest.raises(KubeError, match="lacks permissions"):
        call_command("backend", "test", backend.name, "--format", "json", stdout=out)
    return out.getvalue()


def test_backend_test_unreachable_is_one_clean_line(cli, backend):
    backend.api_url = "http://127.0.0.1:9"
    backend.save()
    code, out, err = cli("backend", "test", "sim")
    assert code == 1 and out == ""
    assert err == "error: reading the server version: cannot connect to http://127.0.0.1:9: connection refused\n"


def test_backend_test_without_connection_and_unknown_backend(cli, db):
    Backend.objects.create(name="bare")
    code, _, err = cli("backend", "test", "bare")
    assert code == 1 and "has no cluster connection configured" in err and err.count("\n") == 1
    code, _, err = cli("backend", "test", "ghost")
    assert code == 1 and err == "error: name: no backend named 'ghost' (value: 'ghost')\n"


def test_backend_sync_and_status(backend, kube_server):
    assert "backend sim: 29 nodes (29 new, 0 changed, 0 gone), 0 pods" in run("backend", "sync", "sim")
    status = json.loads(run("backend", "status", "--format", "json"))["backends"]
    assert status[0]["name"] == "sim" and status[0]["nodes"] == 29 and status[0]["sync_status"] == "ok"
    assert "token" not in status[0] and "kubeconfig" not in status[0]
    assert "sim" in run("backend", "status")


def test_backend_sync_all_reports_failures_and_keeps_going(cli, backend, kube_server):
    Backend.objects.create(name="broken", connection="url", api_url="http://127.0.0.1:9")
    code, out, err = cli("backend", "sync", "--all")
    assert code == 1
    assert "backend sim: 29 nodes" in out
    assert "backend broken: sync failed: listing nodes: cannot connect" in err
    assert err.strip().splitlines()[-1] == ("error: sync failed for broken; the inventory of each was left as it was")
    assert Node.objects.filter(backend=backend).count() == 29
