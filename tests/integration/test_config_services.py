"""Config services: create/replace, references, atomicity, deletes, history, diff, rollback."""

from __future__ import annotations

import pytest

from configs import revisions, store
from configs.errors import ConfigError, ConfigInUse, ConfigNotFound
from configs.models import Revision
from pools.models import Platform, Pool
from tests.integration.conftest import CLI

POOL = {
    "backend": "default",
    "default_platform": "l40s_platform",
    "common_default_variables": {"USER_CPU": 1, "USER_GPU": 0, "USER_MEMORY": "1Gi", "USER_STORAGE": "1Gi"},
    "common_resource_validations": ["default_cpu", "default_memory"],
    "common_pod_template": ["default_user", "default_ctrl"],
    "platforms": {
        "l40s_platform": {"override_pod_template": ["l40s"]},
        "a100_platform": {"override_pod_template": ["a100"], "resource_validations": ["default_gpu"]},
    },
}


def test_apply_creates_then_replaces_and_keeps_reference_order(reference_config):
    created = store.apply("POOL", "hetero", POOL, CLI)
    assert (created.created, created.changed, created.revision) == (True, True, 1)
    shown = store.show("POOL", "hetero")
    assert shown["common_pod_template"] == ["default_user", "default_ctrl"]
    assert shown["platforms"]["a100_platform"]["resource_validations"] == ["default_gpu"]

    reordered = {
        **POOL,
        "common_pod_template": ["default_ctrl", "default_user"],
        "platforms": {"l40s_platform": {"override_pod_template": ["l40s"]}},
    }
    replaced = store.apply("POOL", "hetero", reordered, CLI)
    assert (replaced.created, replaced.revision) == (False, 2)
    shown = store.show("POOL", "hetero")
    assert shown["common_pod_template"] == ["default_ctrl", "default_user"]
    assert list(shown["platforms"]) == ["l40s_platform"]
    assert Platform.objects.filter(pool__name="hetero").count() == 1


def test_applying_the_same_document_twice_writes_nothing(reference_config):
    store.apply("POOL", "hetero", POOL, CLI)
    again = store.apply("POOL", "hetero", POOL, CLI)
    assert (again.changed, again.revision) == (False, None)
    assert Revision.objects.filter(config_type="POOL", name="hetero").count() == 1


def test_unknown_references_are_named_with_their_field(reference_config):
    body = {**POOL, "platforms": {**POOL["platforms"], "h100": {"override_pod_template": ["nope", "gone"]}}}
    with pytest.raises(ConfigError) as caught:
        store.apply("POOL", "hetero", body, CLI)
    assert caught.value.field == "platforms.h100.override_pod_template"
    assert "nope, gone" in caught.value.reason
    with pytest.raises(ConfigError) as caught:
        store.apply("POOL", "hetero", {**POOL, "backend": "mars"}, CLI)
    assert caught.value.field == "backend"
    assert not Pool.objects.filter(name="hetero").exists()


def test_a_failing_object_in_a_batch_saves_nothing(reference_config):
    batch = {"good": POOL, "bad": {**POOL, "default_platform": "missing"}}
    with pytest.raises(ConfigError) as caught:
        store.apply_many("POOL", batch, CLI)
    assert caught.value.field == "bad.default_platform"
    assert not Pool.objects.exists()
    assert not Revision.objects.filter(config_type="POOL").exists()


def test_a_failed_replace_leaves_the_previous_version_intact(reference_config):
    store.apply("POOL", "hetero", POOL, CLI)
    broken = {**POOL, "platforms": {"l40s_platform": {"override_pod_template": ["unknown"]}}}
    with pytest.raises(ConfigError):
        store.apply("POOL", "hetero", broken, CLI)
    assert store.show("POOL", "hetero")["platforms"]["a100_platform"]["override_pod_template"] == ["a100"]


def test_deleting_a_referenced_object_lists_the_referrers(reference_config):
    store.apply("POOL", "hetero", POOL, CLI)
    with pytest.raises(ConfigInUse) as caught:
        store.delete("POD_TEMPLATE", "a100", CLI)
    assert "platform hetero/a100_platform (override_pod_template)" in caught.value.reason
    with pytest.raises(ConfigInUse) as caught:
        store.delete("RESOURCE_VALIDATION", "default_cpu", CLI)
    assert "pool hetero (common_resource_validations)" in caught.value.reason
    with pytest.raises(ConfigInUse) as caught:
        store.delete("BACKEND", "default", CLI)
    assert "pool hetero" in caught.value.reason
    store.delete("POOL", "hetero", CLI)
    store.delete("POD_TEMPLATE", "a100", CLI)
    with pytest.raises(ConfigNotFound):
        store.show("POD_TEMPLATE", "a100")


def test_history_diff_and_rollback(reference_config):
    store.apply("POOL", "hetero", POOL, CLI, description="first", tags=["v1"])
    store.apply("POOL", "hetero", {**POOL, "description": "second", "enable_maintenance": True}, CLI)
    rows = revisions.history("POOL", "hetero")
    assert [r.revision for r in rows] == [2, 1]
    assert rows[1].description == "first" and rows[1].tags == ["v1"]
    assert rows[0].author_name == "tester (cli)"

    changes = {c.path: c for c in revisions.diff("POOL", "hetero", 1, 2).changes}
    assert changes["enable_maintenance"].old is False and changes["enable_maintenance"].new is True
    assert changes["description"].new == "second"

    result = store.rollback("POOL", "hetero", 1, CLI)
    assert result.revision == 3
    assert store.show("POOL", "hetero")["enable_maintenance"] is False
    assert revisions.history("POOL", "hetero")[0].description == "Roll back POOL hetero to r1"
    assert revisions.diff("POOL", "hetero", 1, 3).changes == []


def test_rollback_to_a_deletion_deletes_and_rollback_restores_a_deleted_object(reference_config):
    store.apply("POD_TEMPLATE", "extra", {"spec": {"hostname": "x"}}, CLI)
    store.delete("POD_TEMPLATE", "extra", CLI)
    restored = store.rollback("POD_TEMPLATE", "extra", 1, CLI)
    assert restored.created and restored.revision == 3
    assert store.show("POD_TEMPLATE", "extra") == {"spec": {"hostname": "x"}}
    store.rollback("POD_TEMPLATE", "extra", 2, CLI)
    assert revisions.history("POD_TEMPLATE", "extra")[0].deleted


def test_rollback_to_a_snapshot_whose_references_are_gone_is_refused_cleanly(reference_config):
    store.apply("POD_TEMPLATE", "temp", {"spec": {}}, CLI)
    store.apply("POOL", "p", {**POOL, "common_pod_template": ["temp"]}, CLI)
    store.apply("POOL", "p", POOL, CLI)
    store.delete("POD_TEMPLATE", "temp", CLI)
    with pytest.raises(ConfigError) as caught:
        store.rollback("POOL", "p", 1, CLI)
    assert caught.value.field == "common_pod_template" and caught.value.value == "temp"
    assert store.show("POOL", "p")["common_pod_template"] == ["default_user", "default_ctrl"]


def test_unwrap_accepts_seed_shapes_and_refuses_a_mismatched_name():
    assert store.unwrap("POD_TEMPLATE", "l40s", {"l40s": {"spec": {}}}) == {"spec": {}}
    assert store.unwrap("POOL", "p", {"name": "p", "backend": "b"}) == {"name": "p", "backend": "b"}
    with pytest.raises(ConfigError) as caught:
        store.unwrap("POOL", "p", {"name": "q", "backend": "b"})
    assert caught.value.field == "name" and caught.value.value == "q"


def test_unknown_config_type_is_refused():
    with pytest.raises(ConfigError) as caught:
        store.show("GROUP_TEMPLATE")
    assert caught.value.field == "config_type"
