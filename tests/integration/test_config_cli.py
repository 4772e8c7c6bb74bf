"""The `config` and `pool` commands, including every seed document example."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from configs import store
from configs.errors import ConfigError, ConfigInUse
from portal.docfiles import DocumentError

SEEDS = Path(__file__).resolve().parents[1] / "fixtures" / "seeds"
ROOT = Path(__file__).resolve().parents[2]


def run(*args) -> str:
    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO())
    return out.getvalue()


@pytest.mark.parametrize(
    "filename",
    [
        "pool_robotics_training.json",
        "pool_robotics_simulation.json",
        "pool_robotics_inference.json",
        "pool_team_development.json",
        "pool_robotics_inference_jetson.json",
    ],
)
def test_seed_pool_maps_import_unchanged(reference_config, filename):
    document = json.loads((SEEDS / filename).read_text())
    assert "created" in run("config", "update", "POOL", "--file", str(SEEDS / filename))
    name = next(iter(document))
    shown = store.show("POOL", name)
    for key, value in document[name].items():
        if key == "platforms":
            for platform, body in value.items():
                for field, item in body.items():
                    assert shown["platforms"][platform][field] == item
        else:
            assert shown[key] == value


@pytest.mark.parametrize(
    ("filename", "name"),
    [
        ("heterogeneous_pool.json", "heterogeneous_pool"),
        ("shared_simulation_training_pool.json", "shared_simulation_training_pool"),
    ],
)
def test_seed_named_pool_files_with_a_name_field_import(reference_config, filename, name):
    assert f"POOL {name} created" in run("config", "update", "POOL", name, "--file", str(SEEDS / filename))
    assert store.show("POOL", name)["default_platform"] == "l40s_platform"


def test_seed_pod_template_file_with_a_name_wrapper_imports(db):
    run("config", "update", "POD_TEMPLATE", "l40s", "--file", str(SEEDS / "l40s_pod_template.json"))
    assert store.show("POD_TEMPLATE", "l40s") == {"spec": {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-L40S"}}}


@pytest.mark.parametrize(
    ("filename", "where"),
    [
        ("broken_a100_pod_template.json", ":14:7: invalid JSON: Expecting ',' delimiter"),
        ("broken_training_pool_extra_brace.json", ":36:1: invalid JSON: Extra data"),
        ("broken_simulation_pool_extra_brace.json", ":42:1: invalid JSON: Extra data"),
        ("broken_pool_list_with_comments.json", ":3:27: invalid JSON: Expecting value"),
    ],
)
def test_broken_seed_examples_get_one_clean_line_and_a_nonzero_exit(tmp_path, filename, where):
    """Through the real CLI: one line naming file, line and column; no traceback."""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "portal.settings",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'cli.sqlite3'}",
    }
    process = subprocess.run(
        [sys.executable, "manage.py", "config", "update", "POD_TEMPLATE", "a100", "--file", str(SEEDS / filename)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert process.returncode == 1
    lines = process.stderr.strip().splitlines()
    assert len(lines) == 1, process.stderr
    assert lines[0].startswith(f"error: {SEEDS / filename}{where}")
    assert "Traceback" not in process.stderr


def test_update_without_name_requires_a_map(db, tmp_path):
    path = tmp_path / "list.json"
    path.write_text("[1, 2]")
    with pytest.raises(ConfigError) as caught:
        run("config", "update", "POD_TEMPLATE", "--file", str(path))
    assert "map names to bodies" in caught.value.reason


def test_yaml_files_and_yaml_errors(db, tmp_path):
    good = tmp_path / "t.yaml"
    good.write_text("gpu:\n  spec:\n    tolerations:\n      - {key: nvidia.com/gpu, operator: Exists}\n")
    run("config", "update", "POD_TEMPLATE", "--file", str(good))
    assert store.show("POD_TEMPLATE", "gpu")["spec"]["tolerations"][0]["operator"] == "Exists"
    bad = tmp_path / "bad.yaml"
    bad.write_text("gpu:\n  spec: [\n    a: b\n")
    with pytest.raises(DocumentError) as caught:
        run("config", "update", "POD_TEMPLATE", "--file", str(bad))
    assert caught.value.reason.startswith(f"{bad}:") and "invalid YAML" in caught.value.reason


def test_round_trip_import_show_import_is_identical(demo_pools, tmp_path):
    for config_type in ("BACKEND", "POD_TEMPLATE", "RESOURCE_VALIDATION", "POOL"):
        exported = run("config", "show", config_type)
        path = tmp_path / f"{config_type}.json"
        path.write_text(exported)
        output = run("config", "update", config_type, "--file", str(path))
        assert "created" not in output and "updated" not in output, output
        assert json.loads(run("config", "show", config_type)) == json.loads(exported)


def test_show_yaml_reads_back(demo_pools, tmp_path):
    path = tmp_path / "pool.yaml"
    path.write_text(run("config", "show", "POOL", "team-development", "--format", "yaml"))
    assert "unchanged" in run("config", "update", "POOL", "team-development", "--file", str(path))


def test_history_diff_rollback_and_delete_verbs(reference_config, tmp_path):
    path = tmp_path / "p.json"
    path.write_text(json.dumps({"backend": "default", "description": "one"}))
    run("config", "update", "POOL", "p", "--file", str(path), "--description", "create", "--tags", "a,b")
    path.write_text(json.dumps({"backend": "default", "description": "two"}))
    run("config", "update", "POOL", "p", "--file", str(path))
    history = json.loads(run("config", "history", "POOL", "p", "--format", "json"))
    assert [h["revision"] for h in history] == [2, 1]
    assert history[1]["description"] == "create" and history[1]["tags"] == ["a", "b"]
    assert {"revision", "author", "created_at", "description"} <= set(history[0])
    assert "POOL" in run("config", "history")
    diff = run("config", "diff", "POOL", "p", "1", "2")
    assert '-  "description": "one",' in diff and '+  "description": "two",' in diff
    assert "revision 3" in run("config", "rollback", "POOL", "p", "1")
    assert store.show("POOL", "p")["description"] == "one"
    with pytest.raises(ConfigInUse):
        run("config", "delete", "BACKEND", "default")
    assert "deleted (revision 4)" in run("config", "delete", "POOL", "p")


def test_pool_list(demo_pools):
    table = run("pool", "list")
    assert "robotics-training" in table and "gpu-cluster-01" in table and "h100-platform" in table
    # columns as wide as their widest cell: every row's backend and platforms start under their headers,
    # however long a pool's platform list is (it once ran into the description)
    header, *lines = table.splitlines()
    for column in ("BACKEND", "STATUS", "PLATFORMS", "DESCRIPTION"):
        start = header.index(column)
        cells = [line for line in lines if len(line) > start]  # an empty description leaves its row shorter
        assert all(line[start - 2 : start] == "  " and line[start] != " " for line in cells), column
    widest = max(
        (",".join(sorted(r["platforms"])) for r in json.loads(run("pool", "list", "--format", "json"))["pools"]),
        key=len,
    )
    assert len(widest) > 36 and any(line.split()[3] == widest for line in lines if len(line.split()) > 3)
    rows = json.loads(run("pool", "list", "--format", "json", "--pool", "team-development"))["pools"]
    assert [r["name"] for r in rows] == ["team-development"]
    assert set(rows[0]["platforms"]) == {"cpu-only", "small-gpu"}
    assert rows[0]["status"] == "ONLINE"


def test_seed_demo_is_idempotent(db):
    first = run("seed_demo")
    second = run("seed_demo")
    assert "POOL: 5 objects, 5 changed" in first
    assert "POOL: 5 objects, 0 changed" in second
    assert "MACHINE_POOL: 2 objects, 0 changed" in second
    assert "accounts: admin (platform admin), researcher" in second


def test_seed_demo_leaves_the_machine_pools_to_the_periodic_reconcile(
    db, monkeypatch, caplog, django_capture_on_commit_callbacks
):
    """`make dev` seeds before the simulated cluster runs: no pass tries to reach the provider (no Celery log
    line, no ConnectionError); the devserver's periodic reconcile, run once as soon as the cluster answers,
    puts the pools in step (tests/unit/test_devserver.py)."""
    from clusters.models import MachinePool

    monkeypatch.setenv("DEMO_CLUSTER_URL", "http://127.0.0.1:9")  # nothing listens there
    out, err = StringIO(), StringIO()
    with caplog.at_level("INFO"), django_capture_on_commit_callbacks(execute=True) as callbacks:
        call_command("seed_demo", stdout=out, stderr=err)
    assert not [c for c in callbacks if hasattr(c, "machine_pools_of")]  # no pass queued
    assert err.getvalue() == ""
    assert not [r.getMessage() for r in caplog.records if r.name.startswith(("celery", "clusters"))]
    assert "machine pools: put in step with the provider by the first periodic reconcile" in out.getvalue()
    pools = MachinePool.objects.values_list("name", "state", "attempts", "last_answer_at")
    assert sorted(pools) == [("additional", "pending", 0, None), ("ml-training", "pending", 0, None)]
    with django_capture_on_commit_callbacks() as callbacks:  # outside the seed, a saved row queues its pass
        MachinePool.objects.get(name="additional").save()
    assert [c.machine_pools_of for c in callbacks if hasattr(c, "machine_pools_of")] == [
        MachinePool.objects.get(name="additional").backend_id
    ]


def test_the_demo_spot_pool_is_made_from_its_machine_pools_once(db):
    """robotics-spot's platforms come from the demo ROSA cluster's machine pools (make_platform, as the admin
    action does); a second seed writes no revision of the pool or the templates."""
    from configs.models import Revision

    run("seed_demo")
    revisions = Revision.objects.count()
    run("seed_demo")
    assert Revision.objects.count() == revisions
    pool = store.show("POOL", "robotics-spot")
    assert (pool["backend"], pool["default_platform"]) == ("rosa-cluster-01", "t4-spot")
    assert pool["platforms"]["t4-spot"]["override_pod_template"] == ["machinepool-ml-training"]
    assert pool["platforms"]["batch"]["override_pod_template"] == ["machinepool-additional"]
    assert pool["default_exit_actions"] == {"RESCHEDULE": "3001"}
    assert "default_gpu" in pool["common_resource_validations"]  # 2 GPUs on a 1-T4 machine are refused
    template = store.show("POD_TEMPLATE", "machinepool-ml-training")
    assert template["spec"]["nodeSelector"] == {"node.kubernetes.io/machinepool": "ml-training"}
    assert {t["key"] for t in template["spec"]["tolerations"]} == {"nvidia.com/gpu", "spot"}


def test_pool_status_follows_maintenance_and_the_cluster(demo_pools):
    from clusters.models import Backend
    from pools.models import Pool

    Backend.objects.filter(name="dev-cluster-01").update(sync_status=Backend.SyncStatus.DEGRADED)
    Pool.objects.filter(name="robotics-inference").update(enable_maintenance=True)
    statuses = {row["name"]: row["status"] for row in json.loads(run("pool", "list", "--format", "json"))["pools"]}
    assert statuses["team-development"] == "OFFLINE"
    assert statuses["robotics-inference"] == "MAINTENANCE"
    assert statuses["robotics-training"] == "ONLINE"
