"""Config history by type (configs.changes) through the REST API: numbering, whole-type states, rollback of
a type all or nothing, hidden revisions, query counts. The CLI's own requests are in tests/osmo_cli."""

from __future__ import annotations

from configs import changes, store
from configs.models import Change
from pools.models import Pool
from tests.factories import WorkflowFactory
from tests.integration.conftest import CLI
from tests.queries import assert_constant_queries


def _latest(config_type: str) -> int:
    return Change.objects.filter(config_type=config_type).order_by("-revision").first().revision


def test_each_write_is_one_numbered_revision_of_its_type(reference_config):
    start = _latest("POOL") if Change.objects.filter(config_type="POOL").exists() else 0
    store.apply_many("POOL", {"a": {"backend": "default"}, "b": {"backend": "default"}}, CLI, description="two")
    store.apply("POOL", "a", {"backend": "default", "description": "a2"}, CLI)
    store.apply("POOL", "a", {"backend": "default", "description": "a2"}, CLI)  # unchanged: no revision
    store.delete("POOL", "b", CLI)
    rows = list(Change.objects.filter(config_type="POOL", revision__gt=start).order_by("revision"))
    assert [(r.revision - start, r.name, r.description) for r in rows] == [(1, "", "two"), (2, "a", ""), (3, "b", "")]
    assert [sorted(r.name for r in row.revisions.all()) for row in rows] == [["a", "b"], ["a"], ["b"]]
    states = changes.states("POOL", [start + 1, start + 2, start + 3])
    assert sorted(states[start + 1]) == ["a", "b"] and states[start + 1]["a"].get("description") in ("", None)
    assert states[start + 2]["a"]["description"] == "a2"
    assert sorted(states[start + 3]) == ["a"]


def test_history_answers_osmos_fields_with_the_types_data(admin_api, reference_config):
    store.apply("POD_TEMPLATE", "t", {"spec": {}}, CLI, description="made", tags=["x"])
    row = admin_api.get("/api/configs/history?config_types=pod_template&order=DESC&limit=1").json()["configs"][0]
    assert set(row) == {
        "config_type",
        "name",
        "revision",
        "username",
        "created_at",
        "description",
        "tags",
        "data",
        "source",
        "objects",
    }
    assert (row["config_type"], row["name"], row["username"], row["source"]) == ("POD_TEMPLATE", "t", "tester", "cli")
    assert "+" not in row["created_at"] and row["tags"] == ["x"]
    assert row["data"]["t"] == {"spec": {}} and "default_user" in row["data"]


def test_rolling_back_a_type_is_all_or_nothing(admin_api, reference_config):
    store.apply("POOL", "keep", {"backend": "default"}, CLI)
    before = _latest("POOL")
    store.apply("POOL", "keep", {"backend": "default", "description": "changed"}, CLI)
    store.apply("POOL", "busy", {"backend": "default"}, CLI)
    WorkflowFactory(pool=Pool.objects.get(name="busy"))
    answer = admin_api.post("/api/configs/history/rollback", {"config_type": "POOL", "revision": before}, format="json")
    assert answer.status_code == 409 and answer.json()["code"] == "in_use", answer.json()
    assert store.show("POOL", "keep")["description"] == "changed"  # the update was rolled back with the refusal
    assert _latest("POOL") == before + 2


def test_a_hidden_revision_still_counts_for_later_states(admin_api, reference_config):
    store.apply("BACKEND", "c1", {"description": "one"}, CLI)
    hidden = _latest("BACKEND")
    store.apply("BACKEND", "c2", {"description": "two"}, CLI)
    assert admin_api.delete(f"/api/configs/history/backend/revision/{hidden}").status_code == 200
    rows = admin_api.get("/api/configs/history?config_types=BACKEND&limit=1000").json()["configs"]
    assert hidden not in [r["revision"] for r in rows]
    assert {b["name"] for b in rows[-1]["data"]} >= {"c1", "c2"}
    again = admin_api.delete(f"/api/configs/history/backend/revision/{hidden}")
    assert again.status_code == 400 and again.json()["field"] == "revision"
    rollback = admin_api.post("/api/configs/history/rollback", {"config_type": "BACKEND", "revision": hidden})
    assert rollback.status_code == 400 and "deleted from the history" in rollback.json()["reason"]


def test_revision_numbers_out_of_range_are_a_400(admin_api, db):
    for path in ("/api/configs/history/pool/revision/99999999999", "/api/configs/history/pool/revision/0"):
        answer = admin_api.delete(path)
        assert answer.status_code in (400, 404) and answer.json()["field"] == "revision", answer.content
    bad = admin_api.get("/api/configs/history?created_after=yesterday")
    assert bad.status_code == 400 and bad.json()["field"] == "created_after"
    both = admin_api.get("/api/configs/history?at_timestamp=2025-01-01T00:00:00&created_after=2025-01-01T00:00:00")
    assert both.status_code == 400 and both.json()["field"] == "at_timestamp"


def test_history_query_count_is_constant(admin_api, reference_config):
    store.apply("POOL", "first", {"backend": "default"}, CLI)  # every type present: data is one replay per type

    def grow():
        for index in range(10):
            store.apply("POOL", f"p{index}", {"backend": "default"}, CLI)
            store.apply("POD_TEMPLATE", f"t{index}", {"spec": {}}, CLI)

    assert_constant_queries(lambda: admin_api.get("/api/configs/history?limit=1000"), grow=grow)
    assert_constant_queries(lambda: admin_api.get("/api/configs/history?omit_data=true&limit=1000"), grow=grow)
    assert_constant_queries(lambda: admin_api.get(f"/api/configs/history?at_timestamp={'2100-01-01'}"), grow=grow)
