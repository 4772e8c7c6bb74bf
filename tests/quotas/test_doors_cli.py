"""The quota doors on the command line, run as a shell would (tests/clirun.py): `quota set` (project and
department, quantities, `none` limits, one revision each, errors naming the option on one line, exit 1),
`quota show` (deserved, limit, weight, allocated, fair share, borrowed), `node-pool list|show`, and history:
`quota set` twice then `config rollback NODE_POOL` restores the first value."""

from __future__ import annotations

import json

import pytest
from django.core.management import base

from configs import revisions
from pools.models import Pool
from quotas.models import Quota
from teams.models import Project
from tests.clirun import run_as_cli
from tests.factories import WorkflowFactory

GI = 2**30


@pytest.fixture
def cli(capsys, monkeypatch):
    monkeypatch.setattr(base.connections, "close_all", lambda: None)  # keep the test's transaction
    apps = {"quota": "quotas", "node-pool": "quotas", "config": "pools"}
    return lambda name, *args: run_as_cli(capsys, apps[name], name, *args)


def quota(node_pool: str, team: str, resource: str) -> tuple:
    row = Quota.objects.get(node_pool__name=node_pool, resource=resource, **_team(team))
    return row.deserved, row.limit, row.weight


def _team(name: str) -> dict:
    return {"department__name": name} if name in ("research", "ops") else {"project__name": name}


def running(project: str, node_pool: str, gpus: int) -> None:
    WorkflowFactory(
        pool=Pool.objects.get(name="research"),
        project=Project.objects.get(name=project),
        node_pool=node_pool,
        status="RUNNING",
        requests={"gpu": gpus, "cpu": 0, "memory": 0},
    )


def test_quota_set_for_departments_and_projects_one_revision_each(carved, teams, cli):
    code, out, err = cli(
        "quota", "set", "--department", "research", "h100", "--gpu", "16", "--cpu", "64", "--memory", "1Ti"
    )  # fmt: skip
    assert (code, err) == (0, "")
    assert out.startswith("department research in h100: gpu deserved 16 limit - weight 1; ")
    code, out, _ = cli(
        "quota", "set", "vision", "h100", "--gpu", "8", "--limit-gpu", "12", "--weight-gpu", "2",
        "--cpu", "8", "--format", "json",
    )  # fmt: skip
    assert code == 0
    shown = json.loads(out)
    assert shown["project"] == "vision" and shown["changed"] and shown["revision"] == 3
    assert shown["quotas"]["gpu"] == {"deserved": 8, "limit": 12, "weight": 2, "lend": True}
    assert quota("h100", "vision", "cpu") == (8000, None, 1)  # a quantity: 8 cores
    assert quota("h100", "research", "memory") == (2**40, None, 1)
    cli("quota", "set", "vision", "h100", "--limit-gpu", "none")
    assert quota("h100", "vision", "gpu") == (8, None, 2)  # what was not given is kept
    history = revisions.history("NODE_POOL", "h100")
    assert history[0].description == "quota of project vision in h100: gpu limit=None"
    assert history[0].author_name == "system (cli)"


def test_quota_set_errors_are_one_line_naming_the_option(carved, teams, cli):
    cases = [
        (("vision", "h100", "--gpu", "-1"), "error: --gpu: must not be negative (value: '-1')"),
        (("vision", "h100", "--gpu", "8", "--limit-gpu", "4"), "error: --limit-gpu: is below deserved (8)"),
        (("vision", "h100", "--weight-cpu", "heavy"), "error: --weight-cpu: must be an integer ≥ 0"),
        (("vision", "h100", "--weight-cpu", "\u00b2"), "error: --weight-cpu: must be an integer ≥ 0 and ≤ 2147483647"),
        (
            ("vision", "h100", "--weight-gpu", str(2**63)),
            "error: --weight-gpu: must be an integer ≥ 0 and ≤ 2147483647",
        ),
        (
            ("vision", "h100", "--weight-gpu", "9" * 5000),
            "error: --weight-gpu: must be an integer ≥ 0 and ≤ 2147483647",
        ),
        (("vision", "h100", "--gpu", "1.5"), "error: --gpu: GPUs are whole devices"),
        (("ghost", "h100", "--gpu", "1"), "error: project: unknown project (value: 'ghost')"),
        (("vision", "nowhere", "--gpu", "1"), "error: node_pool: unknown node pool (value: 'nowhere')"),
        (("vision", "h100"), "error: resource: give at least one of --gpu"),
        (("vision", "h100", "--gpu", "4"), "error: departments.research.gpu.deserved: department research's"),
        (("h100", "extra", "--department", "research", "--gpu", "1"), "error: names: with --department name only"),
    ]
    for args, expected in cases:
        code, out, err = cli("quota", "set", *args)
        assert code == 1 and out == "", args
        assert err.startswith(expected) and err.count("\n") == 1, err
    assert set(Quota.objects.filter(node_pool__name="h100").values_list("deserved", "limit", "weight")) == {
        (0, None, 1)
    }


def test_quota_show_prints_deserved_allocated_fair_share_and_borrowed(carved, teams, cli):
    cli("quota", "set", "--department", "research", "h100", "--gpu", "16")
    cli("quota", "set", "vision", "h100", "--gpu", "8", "--limit-gpu", "24")
    cli("quota", "set", "speech", "h100", "--gpu", "8")
    running("vision", "h100", 12)  # 4 above its deserved 8: borrowed
    code, out, _ = cli("quota", "show", "h100", "--format", "json")
    assert code == 0
    shown = json.loads(out)
    assert (shown["name"], shown["managed"], shown["capacity"]["gpu"], shown["nodes"]) == ("h100", True, 32, 4)
    rows = {(row["project"], row["resource"]): row for row in shown["projects"]}
    vision = rows["vision", "gpu"]
    assert {k: vision[k] for k in ("deserved", "limit", "weight", "allocated", "borrowed")} == {
        "deserved": 8,
        "limit": 24,
        "weight": 1,
        "allocated": 12,
        "borrowed": 4,
    }
    assert vision["fair_share"] >= 12 and rows["speech", "gpu"]["allocated"] == 0
    assert [d["name"] for d in shown["departments"]] == ["ops", "research"]
    assert shown["departments"][1]["projects"] == ["speech", "vision"]
    code, table, _ = cli("quota", "show", "h100")
    lines = table.splitlines()
    assert lines[0] == "node pool h100 (backend sim): label nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3"
    assert lines[1].startswith("4 nodes; gpu 16 deserved / 32")
    vision_line = next(line for line in lines if line.startswith("vision ") and " gpu " in line)
    assert vision_line.split()[3:6] == ["8", "24", "1"] and vision_line.split()[-1] == "4"


def test_node_pool_list_and_show(carved, teams, cli):
    cli("quota", "set", "--department", "ops", "h100", "--gpu", "40")  # 4 nodes × 8 GPUs = 32
    code, out, _ = cli("node-pool", "list", "--format", "json")
    assert code == 0
    rows = {row["name"]: row for row in json.loads(out)["node_pools"]}
    assert list(rows) == ["a100", "h100", "sim-default"]
    h100 = rows["h100"]
    assert (h100["backend"], h100["nodes"], h100["managed"], h100["over_quota"]) == ("sim", 4, True, True)
    assert (h100["deserved"]["gpu"], h100["capacity"]["gpu"]) == (40, 32)
    assert (h100["overcommitted"], h100["overcommitted_resources"]) == (True, ["gpu"])
    assert rows["a100"]["selector"] == {"platform": {"pool": "train", "platform": "a100"}}
    assert not rows["sim-default"]["managed"] and not rows["sim-default"]["overcommitted"]
    code, out, _ = cli("node-pool", "list", "--node-pool", "h100", "--node-pool", "ghost", "--format", "json")
    assert [row["name"] for row in json.loads(out)["node_pools"]] == ["h100"]
    code, table, _ = cli("node-pool", "list")
    h100_line = next(line for line in table.splitlines() if line.startswith("h100 "))
    assert "40/32" in h100_line and "over: gpu" in h100_line
    code, out, err = cli("node-pool", "show", "h100")
    assert code == 0, err
    assert "OVER-COMMITTED: gpu" in out and "department ops (gpu 40, cpu 0, memory 0): infer" in out
    code, out, _ = cli("node-pool", "show", "a100", "--format", "json")
    assert json.loads(out)["nodes"] == 2
    code, out, err = cli("node-pool", "show", "nope")
    assert (code, err) == (1, "error: node_pool: unknown node pool (value: 'nope')\n")


def test_quota_set_twice_then_config_rollback_restores_the_first(carved, teams, cli):
    cli("quota", "set", "--department", "research", "h100", "--gpu", "16")
    code, out, _ = cli("quota", "set", "vision", "h100", "--gpu", "8", "--format", "json")
    first = json.loads(out)["revision"]
    cli("quota", "set", "vision", "h100", "--gpu", "12")
    assert quota("h100", "vision", "gpu") == (12, None, 1)
    code, out, err = cli("config", "rollback", "NODE_POOL", "h100", str(first))
    assert (code, err) == (0, "")
    assert quota("h100", "vision", "gpu") == (8, None, 1)
    assert revisions.history("NODE_POOL", "h100")[0].revision == first + 2
