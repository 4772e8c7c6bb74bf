"""Machine pools' status for automation (issue #33), on machine pools reconciled to the simulated cloud (ROSA
through kubesim's OCM API, Karpenter through its NodePools, over HTTP): `GET /api/machine_pools` (a page, filtered
by backend and state, bad filters a 400 with field/value/reason, constant queries), `GET /api/machine_pools/NAME`,
who may read them (config:Read on config/machine_pool), `machinepool list|describe` (rosa's columns, JSON, an
unknown name one error line), and the one computation: the admin and the pool page show the same figures."""

from __future__ import annotations

import json

import pytest
from django.core.management import base
from django.urls import reverse
from rest_framework.test import APIClient

from access.services import roles
from clusters.machinepools.figures import statuses
from clusters.machinepools.reconcile import reconcile_backend
from clusters.machinepools.spec import MACHINEPOOL_LABEL
from clusters.models import Backend, MachinePool
from configs import store
from configs.revisions import Actor
from pools.models import Pool
from pools.services.machine_pool_capacity import growth
from pools.services.machine_pool_platforms import make_platform
from tests.apiclients import client_of, client_with_roles
from tests.clirun import run_as_cli
from tests.clusters.providers.conftest import gpu_spot_pool
from tests.factories import BackendFactory, NodeFactory, UserFactory, WorkerMachinePoolFactory
from tests.queries import assert_constant_queries

URL = "/api/machine_pools"
CLI = Actor(name="tester", source="cli")
SUBNET = "subnet-0123456789abcdef0"


@pytest.fixture
def admin_api(db) -> APIClient:
    return client_with_roles("platform", "osmo-admin", actor=CLI)


@pytest.fixture
def researcher_api(db) -> APIClient:
    return client_with_roles("rita", "osmo-user", actor=CLI)


def node(backend: Backend, pool: str, **fields):
    return NodeFactory(backend=backend, labels={MACHINEPOOL_LABEL: pool, "kubernetes.io/os": "linux"}, **fields)


@pytest.fixture
def fleet(rosa, karpenter):
    """rosa-prod (us-east-1): ml-training (spot, max $0.5, ready from zero, 2 nodes in the inventory, 1 ready),
    extra-workers (3 fixed in zone us-east-1a and a subnet: scaling, none yet), old-type (failed: OCM refuses its
    instance type change); eks-prod: eks-gpu (Karpenter, ready); plain: cpu-pool (no provider: export-only)."""
    Backend.objects.filter(pk=rosa.pk).update(aws_region="us-east-1")
    gpu_spot_pool(rosa)
    WorkerMachinePoolFactory(
        backend=rosa,
        name="extra-workers",
        autoscaling=False,
        replicas=3,
        availability_zones=["us-east-1a"],
        subnets=[SUBNET],
        aws_tags={"team": "data"},
    )
    old = WorkerMachinePoolFactory(backend=rosa, name="old-type")
    gpu_spot_pool(karpenter, name="eks-gpu", max_price=None)
    plain = BackendFactory(name="plain")
    WorkerMachinePoolFactory(backend=plain, name="cpu-pool")
    for backend in (rosa, karpenter, plain):
        reconcile_backend(backend.pk)
    old.instance_type = "g5.xlarge"
    old.save()
    reconcile_backend(rosa.pk)
    node(rosa, "ml-training"), node(rosa, "ml-training", ready=False)
    node(karpenter, "ml-training")  # another backend's node of that name: not counted
    return {row.name: row for row in MachinePool.objects.all()}


def names(answer) -> list[str]:
    return [row["name"] for row in answer.json()["machine_pools"]]


def test_the_list_answers_each_pools_status(fleet, admin_api):
    answer = admin_api.get(URL)
    assert answer.status_code == 200, answer.json()
    page = answer.json()
    assert (page["count"], page["offset"], page["limit"], page["more_entries"]) == (5, 0, 100, False)
    rows = {row["name"]: row for row in page["machine_pools"]}
    assert list(rows) == ["cpu-pool", "eks-gpu", "extra-workers", "ml-training", "old-type"]  # by name
    assert {name: row["state"] for name, row in rows.items()} == {
        "cpu-pool": "export-only",
        "eks-gpu": "ready",
        "extra-workers": "scaling",
        "ml-training": "ready",
        "old-type": "failed",
    }
    ml = rows["ml-training"]
    assert (ml["backend"], ml["provider"], ml["region"], ml["provider_id"]) == (
        "rosa-prod",
        "rosa",
        "us-east-1",
        "ml-training",
    )
    assert ml["last_answer"] == "in step with rosa" and ml["last_answer_at"] and ml["attempts"] == 0
    assert ml["nodes"] == {"now": 2, "ready": 1, "min": 0, "max": 3, "provider_now": 0, "provider_ready": 0}
    assert ml["autoscaling"] == {"min_replicas": 0, "max_replicas": 3} and ml["replicas"] is None
    assert ml["capacity"] == {
        "nodes": {"now": 2, "max": 3},
        "gpus": {"now": 2, "max": 3},
        "cpu_millicores": {"now": 8000, "max": 12000},
        "memory_bytes": {"now": 2 * 16 * 2**30, "max": 3 * 16 * 2**30},
    }
    cost = ml["hourly_cost"]  # g4dn.xlarge: $0.526 on demand; spot estimated at 0.35 of it, $0.18
    assert (cost["capacity_type"], cost["hourly_each"], cost["estimate"]) == ("spot", "0.18", True)
    assert (cost["now"], cost["at_max"], cost["on_demand_now"], cost["saving_percent"]) == ("0.36", "0.54", "1.052", 66)
    assert cost["line"].startswith("≈ $0.36 / $0.54 per hour spot")
    assert ml["spot"] is True and ml["max_price"] == "0.5"
    assert ml["scheduling"]["node_selector"] == {MACHINEPOOL_LABEL: "ml-training"}
    assert ml["scheduling"]["tolerations"][0] == {
        "key": "nvidia.com/gpu",
        "operator": "Equal",
        "value": "true",
        "effect": "NoSchedule",
    }
    extra = rows["extra-workers"]
    assert extra["placement"] == {
        "availability_zones": ["us-east-1a"],
        "subnets": [SUBNET],
        "aws_tags": {"team": "data"},
    }
    assert (extra["replicas"], extra["autoscaling"], extra["nodes"]["now"]) == (3, None, 0)
    assert extra["hourly_cost"]["now"] == "0" and extra["hourly_cost"]["at_max"] == "0.576"  # 3 × m5.xlarge
    assert "cannot be changed" in rows["old-type"]["last_answer"] and rows["old-type"]["attempts"] == 1
    assert rows["eks-gpu"]["provider"] == "karpenter" and rows["eks-gpu"]["provider_id"]


def test_the_list_pages_and_filters_by_backend_and_state(fleet, admin_api):
    page = admin_api.get(URL, {"limit": 2, "offset": 1}).json()
    assert [r["name"] for r in page["machine_pools"]] == ["eks-gpu", "extra-workers"]
    assert (page["count"], page["more_entries"]) == (5, True)
    assert names(admin_api.get(URL, {"backend": "rosa-prod"})) == ["extra-workers", "ml-training", "old-type"]
    assert names(admin_api.get(URL, {"state": "ready"})) == ["eks-gpu", "ml-training"]
    assert names(admin_api.get(URL, {"backend": "rosa-prod", "state": "scaling"})) == ["extra-workers"]
    assert names(admin_api.get(URL, {"state": "export-only"})) == ["cpu-pool"]
    assert names(admin_api.get(URL, {"state": "drifted"})) == []


@pytest.mark.parametrize(
    ("query", "field", "value", "words"),
    [
        ({"state": "sleeping"}, "state", "sleeping", "unknown state sleeping; a state is one of pending, ready"),
        (
            {"backend": "nowhere"},
            "backend",
            "nowhere",
            "no backend by this name (backends: eks-prod, plain, rosa-prod)",
        ),
        ({"limit": "0"}, "limit", "0", "from 1 to 1000"),
        ({"offset": "-1"}, "offset", "-1", ""),
        ({"limit": "many"}, "limit", "many", ""),
    ],
)
def test_bad_filters_are_a_400_naming_the_field(fleet, admin_api, query, field, value, words):
    answer = admin_api.get(URL, query)
    assert answer.status_code == 400
    body = answer.json()
    assert (body["field"], body["value"]) == (field, value), body
    assert words in body["reason"]


def test_the_list_costs_constant_queries(fleet, admin_api, rosa):
    count = iter(range(100))

    def grow():
        for _ in range(6):
            name = f"more-{next(count)}"
            gpu_spot_pool(rosa, name=name)
            node(rosa, name)

    assert_constant_queries(lambda: admin_api.get(URL), grow)
    assert_constant_queries(lambda: admin_api.get(URL, {"backend": "rosa-prod", "state": "ready"}), grow)


def test_the_detail_adds_the_platforms_served(fleet, admin_api, rosa):
    store.apply("POOL", "spot", {"backend": "rosa-prod"}, CLI)
    make_platform("ml-training", CLI, pool="spot", platform="t4")
    answer = admin_api.get(f"{URL}/ml-training")
    assert answer.status_code == 200
    detail = answer.json()
    assert detail["platforms"] == [{"pool": "spot", "platform": "t4"}]
    listed = next(row for row in admin_api.get(URL).json()["machine_pools"] if row["name"] == "ml-training")
    assert {key: value for key, value in detail.items() if key != "platforms"} == listed
    missing = admin_api.get(f"{URL}/nope").json()
    assert (missing["code"], missing["field"], missing["value"]) == ("not_found", "name", "nope")
    assert "machine pools: cpu-pool, eks-gpu, extra-workers, ml-training, old-type" in missing["reason"]


def test_who_may_read_machine_pools(fleet, researcher_api, db):
    for path in (URL, f"{URL}/ml-training"):
        refused = researcher_api.get(path)
        assert refused.status_code == 403
        assert refused.json()["value"] == "config/machine_pool"
        assert APIClient().get(path).status_code == 401
    reader = UserFactory(username="viewer")
    store.apply(
        "ROLE",
        "machine-pool-readers",
        {"policies": [{"effect": "Allow", "actions": ["config:Read"], "resources": ["config/machine_pool"]}]},
        CLI,
    )
    roles.update_user_roles(reader, add=["machine-pool-readers"], actor=CLI)
    assert client_of(reader).get(URL).status_code == 200


# -- the CLI ------------------------------------------------------------------------------------------------------


@pytest.fixture
def cli(capsys, monkeypatch):
    monkeypatch.setattr(base.connections, "close_all", lambda: None)  # keep the test's transaction

    def run(*args: str) -> tuple[int, str, str]:
        return run_as_cli(capsys, "pools", "machinepool", *args)

    return run


def test_machinepool_list_has_rosas_columns_and_the_status(fleet, cli):
    code, out, err = cli("list", "--backend", "rosa-prod")
    assert (code, err) == (0, "")
    header, *lines = out.splitlines()
    assert header.split("  ")[0] == "ID" and " AUTOSCALING " in header and "SPOT INSTANCES" in header
    for column in ("REPLICAS", "INSTANCE TYPE", "LABELS", "TAINTS", "AVAILABILITY ZONES", "SUBNETS", "STATE",
                   "NODES", "CAPACITY", "COST/h"):  # fmt: skip
        assert column in header
    rows = {line.split()[0]: line for line in lines}
    assert list(rows) == ["extra-workers", "ml-training", "old-type"]
    ml = rows["ml-training"]
    assert " Yes " in ml and " 0-3 " in ml and "g4dn.xlarge" in ml and "workload-type=ml-training" in ml
    assert "nvidia.com/gpu=true:NoSchedule, spot=true:PreferNoSchedule" in ml and "Yes (max $0.5)" in ml
    assert " ready " in ml and " 1/2 " in ml and "gpu 2/3, cpu 8/12, mem 32Gi/48Gi" in ml and "≈$0.36/$0.54" in ml
    extra = rows["extra-workers"]
    assert " No " in extra and " 3 " in extra and "us-east-1a" in extra and SUBNET in extra
    assert " scaling " in extra and " 0/0 " in extra and "$0.00/$0.58" in extra
    assert " failed " in rows["old-type"]


def test_machinepool_list_json_is_the_apis_page(fleet, cli, admin_api):
    code, out, _ = cli("list", "--state", "ready", "--format", "json")
    assert code == 0
    assert json.loads(out) == {**admin_api.get(URL, {"state": "ready", "limit": 2}).json(), "limit": 2}


def test_machinepool_describe_shows_status_platforms_and_scheduling(fleet, cli, admin_api):
    store.apply("POOL", "spot", {"backend": "rosa-prod"}, CLI)
    make_platform("ml-training", CLI, pool="spot", platform="t4")
    code, out, _ = cli("describe", "ml-training")
    assert code == 0
    lines = dict(line.split(":", 1) for line in out.splitlines() if ":" in line and not line.startswith(" "))
    said = {key: value.strip() for key, value in lines.items()}
    assert said["ID"] == "ml-training" and said["Provider ID"] == "ml-training" and said["State"] == "ready"
    assert said["Replicas"] == "0-3" and said["Spot instances"] == "Yes (max $0.5)"
    assert said["Nodes"] == "2 now (1 ready), 0 to 3; provider: 0 at the last reconcile"
    assert said["Capacity now/max"] == "gpu 2/3, cpu 8/12, mem 32Gi/48Gi"
    assert said["Platforms"] == "spot/t4"
    scheduling = out.split("Scheduling (a pod spec's fields to land on its nodes):\n", 1)[1]
    assert "nodeSelector:\n    node.kubernetes.io/machinepool: ml-training\n" in scheduling
    assert "  - key: spot\n    operator: Equal\n    value: 'true'\n    effect: PreferNoSchedule\n" in scheduling
    code, out, _ = cli("describe", "ml-training", "--format", "json")
    assert json.loads(out) == admin_api.get(f"{URL}/ml-training").json()
    code, out, _ = cli("describe", "extra-workers")  # the settings recorded on the pool, where it runs
    assert f"Availability zones:    us-east-1a\nSubnets:               {SUBNET}\n" in out
    assert "AWS tags:              {team: data}\n" in out and "Replicas:              3\n" in out
    assert "Platforms:             none\n" in out and "Scheduling" in out and "tolerations" not in out


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (("describe", "nope"), "error: name: no machine pool by this name (machine pools: cpu-pool, eks-gpu,"),
        (("list", "--state", "asleep"), "error: state: unknown state asleep; a state is one of pending, ready,"),
        (("list", "--backend", "nowhere"), "error: backend: no backend by this name (backends: eks-prod, plain,"),
    ],
)
def test_the_cli_refuses_unknown_names_in_one_line(fleet, cli, args, error):
    code, out, err = cli(*args)
    assert (code, out) == (1, "")
    assert err.startswith(error) and "Traceback" not in err and len(err.strip().splitlines()) == 1


# -- one computation ----------------------------------------------------------------------------------------------


def test_the_admin_and_the_pool_pages_show_the_same_figures(fleet, admin_client, rosa):
    store.apply("POOL", "spot", {"backend": "rosa-prod"}, CLI)
    make_platform("ml-training", CLI, pool="spot", platform="t4")
    ml = fleet["ml-training"]
    status = statuses(MachinePool.objects.select_related("backend").filter(pk=ml.pk))[ml.pk]
    change = admin_client.get(reverse("admin:clusters_machinepool_change", args=[ml.pk])).content.decode()
    assert status.capacity_line == "2 / 3 nodes, 2 / 3 GPUs" and status.capacity_line in change
    assert status.cost.line().replace("×", "&times;") in change or status.cost.line() in change
    assert "2 (1 ready)" in change
    listing = admin_client.get(reverse("admin:clusters_machinepool_changelist")).content.decode()
    assert status.capacity_line in listing
    grown = growth([Pool.objects.get(name="spot").pk], {rosa.pk})
    (figures,) = next(iter(grown.values())).platforms["t4"].machine_pools
    assert (figures.nodes_now, figures.nodes_max, figures.gpus_now, figures.gpus_max) == (2, 3, 2, 3)
    assert figures.pricing == status.cost and figures.state == "ready"
    page = admin_client.get(reverse("selfservice:pool", args=["spot"])).content.decode()
    row = page.split('<tr class="machine-pool">', 1)[1].split("</tr>", 1)[0]
    assert (
        "ml-training" in row
        and ">spot<" in row
        and "<td>2 / 3</td><td>2 / 3</td>" in row.replace("\n", "").replace("        ", "")
    )


@pytest.mark.parametrize(
    ("region", "each", "source"),
    [
        ("us-east-1", "0.17", "spot estimate for us-east-1: Amazon EC2 Auto Scaling User Guide"),
        ("eu-west-1", "0.12", "spot estimate: the on-demand price × 0.35"),  # no row for that region
        ("", "0.17", "spot estimate for us-east-1: "),  # unknown: the shipped prices' region
    ],
)
def test_the_spot_price_is_read_for_the_backends_region(db, admin_api, region, each, source):
    backend = BackendFactory(name="regional", aws_region=region)
    gpu_spot_pool(backend, name="compute-spot", instance_type="c5.2xlarge", max_price=None)
    cost = admin_api.get(f"{URL}/compute-spot").json()["hourly_cost"]
    assert (cost["hourly_each"], cost["estimate"]) == (each, True)
    assert cost["source"].startswith(source), cost["source"]
