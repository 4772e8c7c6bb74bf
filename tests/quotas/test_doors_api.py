"""The quota REST doors: node pools (list, detail with the quota tree and live figures), setting a project's or
department's quota (PUT whole, PATCH some; one revision each), who may read (researchers) and write
(config:Update on config/node_pool), errors as field/value/reason (400/403/404, never 500), constant queries,
the schema; and OSMO's `GET /api/pool_quota` answering from the quota model once a node pool is managed."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from access.services import roles
from clusters.models import Backend
from configs import revisions, store
from pools.models import Platform, Pool
from quotas.models import Quota
from quotas.services import node_pools, quotas
from quotas.services.node_pools import charged_node_pools
from teams.models import Project
from tests.apiclients import client_of
from tests.factories import NodeFactory, ProjectFactory, RoleFactory, UserFactory, WorkflowFactory
from tests.queries import assert_constant_queries
from tests.quotas.conftest import CLI

URL = "/api/quotas/node_pools"


@pytest.fixture
def researcher(teams):
    """rita: osmo-user and a member of project vision."""
    roles.ensure_builtin_roles()
    user = UserFactory(username="rita")
    roles.update_user_roles(user, add=["osmo-user", teams["vision"].role.name], actor=CLI)
    return client_of(user)


def in_flight(project: str, node_pool: str, gpus: int, pool: str = "research") -> None:
    WorkflowFactory(
        pool=Pool.objects.get(name=pool),
        project=Project.objects.get(name=project),
        node_pool=node_pool,
        status="RUNNING",
        requests={"gpu": gpus, "cpu": 0, "memory": 0},
    )


def guarantees() -> None:
    quotas.set_quota(None, "h100", "department", "research", "gpu", deserved=16)
    quotas.set_quota(None, "h100", "project", "vision", "gpu", deserved=8)
    quotas.set_quota(None, "h100", "project", "speech", "gpu", deserved=4)
    quotas.set_quota(None, "a100", "department", "ops", "gpu", deserved=8)
    quotas.set_quota(None, "a100", "project", "infer", "gpu", deserved=8)


def test_researchers_read_node_pools_and_their_quotas(carved, teams, researcher):
    guarantees()
    in_flight("vision", "h100", 10)
    listed = researcher.get(URL)
    assert listed.status_code == 200, listed.json()
    rows = {row["name"]: row for row in listed.json()["node_pools"]}
    assert list(rows) == ["a100", "h100", "sim-default"]
    assert rows["h100"]["deserved"]["gpu"] == 16 and rows["h100"]["capacity"]["gpu"] == 32
    assert rows["h100"]["managed"] and not rows["sim-default"]["managed"]
    assert [r["name"] for r in researcher.get(f"{URL}?node_pools=a100&node_pools=ghost").json()["node_pools"]] == [
        "a100"
    ]

    def names(query: str) -> list[str]:
        return [row["name"] for row in researcher.get(f"{URL}?{query}").json()["node_pools"]]

    assert names("node_pools=") == ["a100", "h100", "sim-default"]  # an empty value names none: no filter
    assert names("node_pools=a100,h100") == []  # repeated, not comma-separated: one (unknown) name
    detail = researcher.get(f"{URL}/h100").json()
    assert detail["selector"] == {"label": {"key": "nvidia.com/gpu.product", "value": "NVIDIA-H100-80GB-HBM3"}}
    research = next(d for d in detail["departments"] if d["name"] == "research")
    assert research["quotas"]["gpu"] == {"deserved": 16, "limit": None, "weight": 1, "lend": True}
    assert research["projects"] == ["vision"]  # speech is another team (tests/quotas/test_quota_visibility.py)
    vision = next(r for r in detail["projects"] if (r["project"], r["resource"]) == ("vision", "gpu"))
    assert (vision["deserved"], vision["allocated"], vision["borrowed"]) == (8, 10, 2)
    assert vision["fair_share"] >= 10


def test_reading_needs_a_signed_in_principal_and_unknown_node_pools_are_404(carved, teams, researcher):
    assert APIClient().get(URL).status_code == 401
    missing = researcher.get(f"{URL}/nowhere")
    assert missing.status_code == 404
    assert {k: missing.json()[k] for k in ("field", "value", "reason")} == {
        "field": "node_pool",
        "value": "nowhere",
        "reason": "unknown node pool",
    }


def test_put_sets_a_team_whole_and_patch_changes_some(carved, teams, admin_api):
    put = admin_api.put(
        f"{URL}/h100/departments/research",
        {"gpu": {"deserved": 16}, "memory": {"deserved": "1Ti"}, "description": "research's share"},
        format="json",
    )
    assert put.status_code == 200, put.json()
    assert put.json()["quotas"]["memory"] == {"deserved": 2**40, "limit": None, "weight": 1, "lend": True}
    assert revisions.history("NODE_POOL", "h100")[0].description == "research's share"
    patched = admin_api.patch(
        f"{URL}/h100/projects/vision", {"gpu": {"deserved": "8", "limit": 12, "weight": 2}}, format="json"
    )
    assert patched.status_code == 200
    assert patched.json() | {"revision": None} == {
        "node_pool": "h100",
        "team_kind": "project",
        "team": "vision",
        "quotas": {
            "gpu": {"deserved": 8, "limit": 12, "weight": 2, "lend": True},
            "cpu": {"deserved": 0, "limit": None, "weight": 1, "lend": True},
            "memory": {"deserved": 0, "limit": None, "weight": 1, "lend": True},
        },
        "changed": True,
        "revision": None,
    }
    assert patched.json()["revision"] == put.json()["revision"] + 1
    admin_api.patch(f"{URL}/h100/projects/vision", {"gpu": {"weight": 3}}, format="json")
    row = Quota.objects.get(node_pool__name="h100", project__name="vision", resource="gpu")
    assert (row.deserved, row.limit, row.weight) == (8, 12, 3)  # PATCH kept the rest
    admin_api.put(f"{URL}/h100/projects/vision", {"gpu": {"deserved": 2}}, format="json")
    row.refresh_from_db()
    assert (row.deserved, row.limit, row.weight) == (2, None, 1)  # PUT: what is left out goes back to zero


def test_write_errors_are_field_value_reason_never_500(carved, teams, admin_api):
    cases = [
        ("put", "h100/projects/vision", {"gpu": {"deserved": -1}}, 400, "gpu.deserved"),
        ("patch", "h100/projects/vision", {"gpu": {"deserved": 2, "limit": 1}}, 400, "gpu.limit"),
        ("patch", "h100/projects/vision", {"tpu": {"deserved": 1}}, 400, "resource"),
        ("patch", "h100/projects/vision", {"gpu": "lots"}, 400, "gpu"),
        ("patch", "h100/projects/vision", ["gpu"], 400, "body"),
        ("patch", "h100/projects/vision", {"gpu": {"deserved": 1}}, 400, "departments.research.gpu.deserved"),
        ("patch", "h100/projects/vision", {"gpu": {"weight": "heavy"}}, 400, "gpu.weight"),
        ("patch", "h100/projects/vision", {"description": 3, "gpu": {}}, 400, "description"),
        ("patch", "h100/projects/ghost", {"gpu": {"deserved": 1}}, 404, "project"),
        ("patch", "h100/departments/ghost", {"gpu": {"deserved": 1}}, 404, "department"),
        ("patch", "nowhere/projects/vision", {"gpu": {"deserved": 1}}, 404, "node_pool"),
        ("patch", "h100/teams/vision", {"gpu": {"deserved": 1}}, 404, "path"),
    ]
    for method, path, body, status, field in cases:
        answer = getattr(admin_api, method)(f"{URL}/{path}", body, format="json")
        assert (answer.status_code, answer.json()["field"]) == (status, field), (path, body, answer.json())
    assert set(Quota.objects.filter(node_pool__name="h100").values_list("deserved", "limit", "weight")) == {
        (0, None, 1)
    }


def test_writing_needs_config_update_on_node_pools(carved, teams, researcher):
    refused = researcher.patch(f"{URL}/h100/projects/vision", {"gpu": {"deserved": 0}}, format="json")
    assert refused.status_code == 403 and refused.json()["field"] == "resource"
    assert refused.json()["value"] == "config/node_pool"
    RoleFactory(
        name="quota-admin",
        policies=[{"effect": "Allow", "actions": ["config:Update"], "resources": ["config/node_pool"]}],
    )
    quota_admin = UserFactory(username="quinn")
    roles.update_user_roles(quota_admin, add=["quota-admin"], actor=CLI)
    answer = client_of(quota_admin).patch(f"{URL}/h100/departments/ops", {"gpu": {"deserved": 4}}, format="json")
    assert answer.status_code == 200
    assert revisions.history("NODE_POOL", "h100")[0].author_name == "quinn (api)"


def test_list_and_detail_take_constant_queries(carved, teams, admin_api):
    backend = Backend.objects.get(name="sim")

    def grow():
        for index in range(3):
            NodeFactory(backend=backend, name=f"more-{index}", gpu_allocatable=4, labels={"rack": str(index)})
            rack = {"label": {"key": "rack", "value": str(index)}}
            store.apply("NODE_POOL", f"rack-{index}", {"backend": "sim", "selector": rack}, CLI)
            project = ProjectFactory(name=f"more-{index}", department=teams["ops"])
            quotas.set_quota(None, "h100", "department", "ops", "gpu", deserved=index + 1)
            quotas.set_quota(None, "h100", "project", project.name, "gpu", deserved=1)
            in_flight(project.name, "h100", 1)

    def both():
        assert admin_api.get(URL).status_code == 200
        assert admin_api.get(f"{URL}/h100").status_code == 200

    assert_constant_queries(both, grow)


def test_the_schema_describes_the_quota_doors(admin_api):
    schema = admin_api.get("/api/schema/?format=json").json()
    paths = schema["paths"]
    assert {"get"} <= set(paths["/api/quotas/node_pools"])
    assert {"get"} <= set(paths["/api/quotas/node_pools/{name}"])
    assert {"put", "patch"} <= set(paths["/api/quotas/node_pools/{name}/{team_kind}/{team}"])
    assert "/api/pool_quota" in paths


# --- OSMO's pool quota --------------------------------------------------------------------------------


def usage_of(answer: dict) -> dict[str, dict]:
    return {pool["name"]: pool["resource_usage"] for node_set in answer["node_sets"] for pool in node_set["pools"]}


def test_charging_every_pool_at_once_agrees_with_charging_one(carved):
    pools = list(Pool.objects.all())
    charged = charged_node_pools(pools)
    for platform in Platform.objects.select_related("pool"):
        expected = node_pools.charged_node_pool(platform.pool, platform.name)
        assert charged[(platform.pool_id, platform.name)] == expected, platform
    assert charged[(Pool.objects.get(name="train").pk, "a100")].name == "a100"
    assert charged[(Pool.objects.get(name="research").pk, "any-h100")].name == "h100"


def test_pool_quota_keeps_osmo_figures_while_no_node_pool_is_managed(carved, teams, admin_api):
    usage = usage_of(admin_api.get("/api/pool_quota?all_pools=true").json())
    assert usage["train"]["quota_limit"] == "48" and usage["batch"]["quota_limit"] == usage["batch"]["total_capacity"]


def test_pool_quota_answers_from_team_quotas_once_managed(carved, teams, admin_api, researcher):
    guarantees()
    in_flight("vision", "h100", 6)
    in_flight("infer", "a100", 3, pool="train")
    # rita is in project vision: her deserved GPUs in the node pools each pool is charged to
    mine = usage_of(researcher.get("/api/pool_quota?all_pools=true").json())
    assert (mine["research"]["quota_limit"], mine["research"]["quota_used"], mine["research"]["quota_free"]) == (
        "8",
        "6",
        "2",
    )
    assert (mine["train"]["quota_limit"], mine["train"]["quota_used"]) == ("8", "6")  # h100 + a100 (0 there)
    everyone = usage_of(admin_api.get("/api/pool_quota?all_pools=true").json())  # the admin is in no project
    assert (everyone["train"]["quota_limit"], everyone["train"]["quota_used"]) == ("20", "9")  # 8+4 + 8; 6 + 3
    assert (everyone["research"]["quota_limit"], everyone["research"]["quota_used"]) == ("12", "6")
    assert everyone["batch"]["quota_limit"] == everyone["batch"]["total_capacity"]  # sim-default: unmanaged


def test_pool_quota_queries_stay_constant_when_managed(carved, teams, admin_api):
    guarantees()

    def grow():
        for index in range(3):
            project = ProjectFactory(name=f"grown-{index}", department=teams["ops"])
            quotas.set_quota(None, "a100", "department", "ops", "gpu", deserved=9 + index)
            quotas.set_quota(None, "a100", "project", project.name, "gpu", deserved=1)
            in_flight(project.name, "a100", 1, pool="train")

    assert_constant_queries(lambda: admin_api.get("/api/pool_quota?all_pools=true"), grow)
