"""NODE_POOL through the config store: the document, zero quota rows for every team, the department coverage
rule, bad input (field/value/reason, nothing half-written), history/diff/rollback like POOL's, `set_quota`
(one revision, authorized by config:Update on config/node_pool), and `quotas_of`."""

from __future__ import annotations

import pytest

from access.services import roles
from configs import revisions, store
from configs.errors import ConfigError, ConfigInUse, ConfigNotFound
from portal.errors import PermissionDenied
from quotas.models import NodePool, Quota
from quotas.services import quotas
from tests.factories import DepartmentFactory, ProjectFactory, RoleFactory, UserFactory
from tests.queries import assert_constant_queries
from tests.quotas.conftest import CLI, H100_LABEL

GI = 2**30


def h100(departments=None, projects=None, **extra) -> dict:
    return {
        "backend": "sim",
        "selector": H100_LABEL,
        "departments": departments or {},
        "projects": projects or {},
        **extra,
    }


def rows(node_pool: str) -> dict[tuple[str, str], tuple]:
    found = Quota.objects.filter(node_pool__name=node_pool).select_related("department", "project")
    return {((q.department or q.project).name, q.resource): (q.deserved, q.limit, q.weight) for q in found}


def test_the_document_round_trips_quantities_as_units_and_leaves_zeros_out(carved):
    body = h100(
        {"research": {"gpu": {"deserved": 16}, "cpu": {"deserved": "64", "limit": "128"}, "memory": {}}},
        {
            "vision": {"gpu": {"deserved": 8, "limit": 12, "weight": 2}, "memory": {"deserved": "512Gi"}},
            "speech": {"gpu": {"deserved": 0, "limit": None, "weight": 1}},
        },
        over_quota=False,
        description="H100 nodes",
    )
    research_memory = {"memory": {"deserved": "1Ti"}}
    body["departments"]["research"].update(research_memory)
    store.apply("NODE_POOL", "h100", body, CLI)
    assert store.show("NODE_POOL", "h100") == {
        "backend": "sim",
        "selector": {"label": {"key": "nvidia.com/gpu.product", "value": "NVIDIA-H100-80GB-HBM3"}},
        "over_quota": False,
        "admission_seconds": None,
        "min_runtime_seconds": None,
        "time_based_fair_share": None,
        "description": "H100 nodes",
        "departments": {
            "research": {
                "gpu": {"deserved": 16, "limit": None, "weight": 1},
                "cpu": {"deserved": 64000, "limit": 128000, "weight": 1},
                "memory": {"deserved": 2**40, "limit": None, "weight": 1},
            }
        },
        "projects": {
            "vision": {
                "gpu": {"deserved": 8, "limit": 12, "weight": 2},
                "memory": {"deserved": 512 * GI, "limit": None, "weight": 1},
            }
        },
    }
    again = store.apply("NODE_POOL", "h100", store.show("NODE_POOL", "h100"), CLI)
    assert not again.changed and again.revision is None  # the shown document is what is stored


def test_every_team_has_a_zero_row_in_every_node_pool(carved, teams):
    teams_count, resources = 5, 3
    for name in ("h100", "a100", "sim-default"):
        assert len(rows(name)) == teams_count * resources
        assert set(rows(name).values()) == {(0, None, 1)}
    DepartmentFactory(name="later")
    ProjectFactory(name="newcomer", department=teams["ops"])
    assert ("newcomer", "gpu") in rows("a100") and ("later", "memory") in rows("sim-default")
    assert Quota.objects.count() == 3 * 7 * resources


def test_a_department_covers_its_projects_deserved(carved):
    with pytest.raises(ConfigError) as refused:
        store.apply(
            "NODE_POOL",
            "h100",
            h100(
                {"research": {"gpu": {"deserved": 10}}},
                {"vision": {"gpu": {"deserved": 8}}, "speech": {"gpu": {"deserved": 4}}},
            ),
            CLI,
        )
    error = refused.value
    assert (error.field, error.value) == ("departments.research.gpu.deserved", 10)
    assert "(10) is below the sum of its projects' deserved gpu (12: speech 4, vision 8)" in error.reason
    assert set(rows("h100").values()) == {(0, None, 1)}  # nothing half-written
    with pytest.raises(ConfigError) as uncovered:
        store.apply("NODE_POOL", "h100", h100(projects={"infer": {"cpu": {"deserved": "1"}}}), CLI)
    assert uncovered.value.field == "departments.ops.cpu.deserved" and "(0)" in uncovered.value.reason
    store.apply(
        "NODE_POOL",
        "h100",
        h100(
            {"research": {"gpu": {"deserved": 12}}},
            {"vision": {"gpu": {"deserved": 8}}, "speech": {"gpu": {"deserved": 4}}},
        ),
        CLI,
    )
    assert rows("h100")[("speech", "gpu")] == (4, None, 1)


@pytest.mark.parametrize(
    ("quota", "field", "reason"),
    [
        ({"deserved": -1}, "projects.vision.gpu.deserved", "must not be negative"),
        ({"deserved": "-2"}, "projects.vision.gpu.deserved", "must not be negative"),
        ({"deserved": 2, "limit": 1}, "projects.vision.gpu.limit", "is below deserved (2)"),
        ({"weight": -1}, "projects.vision.gpu.weight", "must be an integer ≥ 0"),
        ({"deserved": "1.5"}, "projects.vision.gpu.deserved", "GPUs are whole devices"),
        ({"deserved": "lots"}, "projects.vision.gpu.deserved", "is not a quantity"),
        ({"deserved": True}, "projects.vision.gpu.deserved", "non-negative integer"),
        ({"guaranteed": 1}, "projects.vision.gpu.guaranteed", "unknown field"),
    ],
)
def test_bad_amounts_are_field_value_reason_errors(carved, quota, field, reason):
    with pytest.raises(ConfigError) as refused:
        store.apply("NODE_POOL", "h100", h100({"research": {"gpu": {"deserved": 8}}}, {"vision": {"gpu": quota}}), CLI)
    assert refused.value.field == field and reason in refused.value.reason, refused.value


def test_unknown_teams_backends_and_resources_are_refused(carved):
    cases = [
        (h100(projects={"nobody": {"gpu": {}}}), "projects.nobody", "unknown project"),
        (h100({"nowhere": {"gpu": {}}}), "departments.nowhere", "unknown department"),
        (h100(projects={"vision": {"tpu": {}}}), "projects.vision.tpu", "unknown field"),
        ({**h100(), "backend": "mars"}, "backend", "unknown backend"),
        ({"selector": H100_LABEL}, "backend", "needs a backend"),
    ]
    for body, field, reason in cases:
        with pytest.raises(ConfigError) as refused:
            store.apply("NODE_POOL", "fresh", body, CLI)
        assert refused.value.field == field and reason in refused.value.reason, refused.value
    assert not NodePool.objects.filter(name="fresh").exists()


def test_history_diff_and_rollback_like_pool(carved):
    first = store.apply("NODE_POOL", "h100", h100({"research": {"gpu": {"deserved": 8}}}), CLI, description="eight")
    second = store.apply("NODE_POOL", "h100", h100({"research": {"gpu": {"deserved": 16, "limit": 24}}}), CLI)
    assert [r.revision for r in revisions.history("NODE_POOL", "h100")] == [
        second.revision,
        first.revision,
        first.revision - 1,
    ]
    found = revisions.diff("NODE_POOL", "h100", first.revision, second.revision)
    assert {(c.path, c.old, c.new) for c in found.changes} == {
        ("departments.research.gpu.deserved", 8, 16),
        ("departments.research.gpu.limit", None, 24),
    }
    back = store.rollback("NODE_POOL", "h100", first.revision, CLI)
    assert back.revision == second.revision + 1
    assert rows("h100")[("research", "gpu")] == (8, None, 1)
    # the whole type, as it was before the two node pools existed: they are deleted, the Default stays
    before = revisions.get_revision("NODE_POOL", "sim-default", 1).change.revision
    restored = store.restore("NODE_POOL", before, CLI)
    assert restored["deleted"] == ["a100", "h100"]
    assert list(NodePool.objects.values_list("name", flat=True)) == ["sim-default"]
    assert NodePool.objects.get(name="sim-default").members.count() == 29


def test_set_quota_writes_one_revision_and_keeps_what_it_is_not_given(carved, teams):
    before = revisions.latest_snapshot("NODE_POOL", "h100")
    quotas.set_quota(None, "h100", "department", "research", "gpu", deserved=16)
    result = quotas.set_quota(None, "h100", "project", "vision", "gpu", deserved=8, limit=12)
    assert result.changed and result.revision == 3
    history = revisions.history("NODE_POOL", "h100")
    assert history[0].description == "quota of project vision in h100: gpu deserved=8 limit=12"
    quotas.set_quota(None, "h100", "project", "vision", "gpu", weight=3)
    assert rows("h100")[("vision", "gpu")] == (8, 12, 3)
    quotas.set_quota(None, "h100", "project", "vision", "gpu", limit=None)
    assert rows("h100")[("vision", "gpu")] == (8, None, 3)
    quotas.set_quotas(None, "h100", "department", "ops", {"cpu": {"deserved": "500m"}, "memory": {"limit": "64Gi"}})
    assert rows("h100")[("ops", "cpu")] == (500, None, 1) and rows("h100")[("ops", "memory")] == (0, 64 * GI, 1)
    assert before["departments"] == {}


def test_set_quota_refusals(carved, teams):
    cases = [
        (("nope", "project", "vision", "gpu"), {"deserved": 1}, ConfigNotFound, "node_pool"),
        (("h100", "team", "vision", "gpu"), {"deserved": 1}, ConfigError, "team_kind"),
        (("h100", "project", "ghost", "gpu"), {"deserved": 1}, ConfigError, "project"),
        (("h100", "project", "vision", "tpu"), {"deserved": 1}, ConfigError, "resource"),
        (("h100", "project", "vision", "gpu"), {"deserved": -1}, ConfigError, "gpu.deserved"),
        (("h100", "project", "vision", "gpu"), {"deserved": 1}, ConfigError, "departments.research.gpu.deserved"),
    ]
    for args, values, error, field in cases:
        with pytest.raises(error) as refused:
            quotas.set_quota(None, *args, **values)
        assert refused.value.field == field, refused.value
    assert set(rows("h100").values()) == {(0, None, 1)}


def test_set_quota_needs_config_update_on_node_pools(carved, teams):
    researcher = UserFactory(username="rita")
    with pytest.raises(PermissionDenied) as refused:
        quotas.set_quota(researcher, "h100", "department", "research", "gpu", deserved=1)
    assert "may not change quotas" in str(refused.value)
    RoleFactory(
        name="quota-admin",
        policies=[{"effect": "Allow", "actions": ["config:Update"], "resources": ["config/node_pool"]}],
    )
    roles.update_user_roles(researcher, add=["quota-admin"], actor=CLI)
    result = quotas.set_quota(researcher, "h100", "department", "research", "gpu", deserved=1)
    assert revisions.get_revision("NODE_POOL", "h100", result.revision).author_name == "rita (cli)"


def test_quotas_of_is_the_tree_in_two_queries(carved, teams):
    quotas.set_quota(None, "h100", "department", "research", "gpu", deserved=16)
    quotas.set_quota(None, "h100", "project", "vision", "gpu", deserved=8)
    teams["vision"].priority = 2
    teams["vision"].save()
    tree = quotas.quotas_of("h100")
    assert (tree["node_pool"], tree["backend"], tree["over_quota"]) == ("h100", "sim", True)
    assert [d["name"] for d in tree["departments"]] == ["ops", "research"]
    research = tree["departments"][1]
    assert research["quotas"]["gpu"] == {"deserved": 16, "limit": None, "weight": 1, "lend": True}
    assert [(p["name"], p["priority"], p["quotas"]["gpu"]["deserved"]) for p in research["projects"]] == [
        ("speech", 0, 0),
        ("vision", 2, 8),
    ]
    assert research["projects"][0]["quotas"]["memory"] == {"deserved": 0, "limit": None, "weight": 1, "lend": True}
    node_pool = NodePool.objects.select_related("backend").get(name="h100")

    def grow():
        for index in range(4):
            ProjectFactory(name=f"more-{index}", department=teams["ops"])

    assert_constant_queries(lambda: quotas.quotas_of(node_pool), grow, at_most=1)
    with pytest.raises(ConfigNotFound):
        quotas.quotas_of("nope")


def test_the_rest_api_writes_and_shows_node_pools_like_any_config(carved, admin_api):
    body = h100({"research": {"gpu": {"deserved": 8}}}, {"vision": {"gpu": {"deserved": "8"}}})
    answer = admin_api.put("/api/configs/node_pool/h100", {"configs": body, "description": "api"}, format="json")
    assert answer.status_code == 200, answer.json()
    assert admin_api.get("/api/configs/node_pool/h100").json()["projects"] == {
        "vision": {"gpu": {"deserved": 8, "limit": None, "weight": 1}}
    }
    bad = admin_api.put(
        "/api/configs/node_pool/h100",
        {"configs": h100(projects={"vision": {"gpu": {"deserved": 2, "limit": 1}}})},
        format="json",
    )
    assert bad.status_code == 400 and bad.json()["field"] == "projects.vision.gpu.limit"


def test_a_type_rollback_refuses_to_delete_a_default_created_since(carved):
    then = revisions.get_revision("NODE_POOL", "h100", 1).change.revision
    store.apply("BACKEND", "newer", {"description": "added later"}, CLI)
    with pytest.raises(ConfigInUse) as refused:
        store.restore("NODE_POOL", then, CLI)
    assert refused.value.value == "newer-default" and "goes only with the backend" in refused.value.reason
    assert NodePool.objects.filter(name="newer-default").exists()
