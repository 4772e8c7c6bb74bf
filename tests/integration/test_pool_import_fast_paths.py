"""The fast paths of a large pool import and of the pool list (issue 17) give what the straightforward paths
give: new pools written in bulk (`pool_writer.save_new_pools`) and one by one (`save_pool`), compilation
shared between pools of the same config and compiled per pool, the engine inputs read as plain rows
(`compilation.platform_configs`) and from prefetched models (`platform_config`), the pool list's cached
cells and unfold's own rendering."""

from __future__ import annotations

import copy

import pytest
from django.contrib.admin import helpers
from django.utils import translation
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from unfold.admin import checkbox as unfold_checkbox
from unfold.utils import display_for_label

from configs import registry, store
from configs.errors import ConfigError
from pools.admin.config import STATUS_LABELS, status_label
from pools.models import Pool
from pools.services import compilation, pool_writer
from pools.services.snapshots import pools_for_snapshot
from portal.admin_base import row_checkbox
from tests.integration.conftest import CLI

TEMPLATES = ["default_ctrl", "default_user", "high_memory", "training_a100_template", "simulation_l40_template"]
VALIDATIONS = ["default_cpu", "default_memory", "default_gpu", "gpu_training_validation"]
FEW = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

variables = st.fixed_dictionaries(
    {},
    optional={
        "USER_CPU": st.integers(1, 4),
        "USER_GPU": st.integers(0, 2),
        "USER_MEMORY": st.sampled_from(["1Gi", "16Gi"]),
        "USER_STORAGE": st.sampled_from(["1Gi", "50Gi"]),
    },
)
platform = st.fixed_dictionaries(
    {
        "override_pod_template": st.lists(st.sampled_from(TEMPLATES), unique=True, max_size=2),
        "resource_validations": st.lists(st.sampled_from(VALIDATIONS), unique=True, max_size=2),
    },
    optional={"default_variables": variables, "description": st.sampled_from(["", "gpus"])},
)
pool = st.fixed_dictionaries(
    {
        "backend": st.just("default"),
        "common_default_variables": variables,
        "common_pod_template": st.lists(st.sampled_from(TEMPLATES), unique=True, max_size=3),
        "common_resource_validations": st.lists(st.sampled_from(VALIDATIONS), unique=True, max_size=2),
        "platforms": st.dictionaries(st.sampled_from(["a100", "l40", "cpu"]), platform, max_size=3),
    },
    optional={"description": st.sampled_from(["", "team pool"]), "default_exec_timeout": st.just("2h")},
)
# Few distinct configs over several pools: pools of the same config share their compilation.
pool_files = st.lists(pool, min_size=1, max_size=3).flatmap(
    lambda configs: st.lists(st.sampled_from(configs), min_size=2, max_size=6).map(
        lambda chosen: {f"team{index}-pool": copy.deepcopy(body) for index, body in enumerate(chosen)}
    )
)


def _parsed(documents: dict):
    handler = registry.get("POOL")
    docs = [handler.parse(name, copy.deepcopy(body)) for name, body in documents.items()]
    refs = pool_writer.References.load(docs)
    for doc in docs:
        refs.check(doc)
    return docs, refs


def _outcome(call):
    try:
        return call().to_json()
    except ConfigError as error:
        return ("refused", error.reason, error.field, repr(error.value))


@given(documents=pool_files)
@FEW
def test_new_pools_written_in_bulk_are_the_pools_written_one_by_one(reference_config, documents):
    docs, refs = _parsed(documents)
    try:
        pool_writer.save_new_pools([(doc, pool_writer.new_pool(doc, refs)) for doc in docs], refs)
        in_bulk = store.show("POOL")
        Pool.objects.all().delete()
        for doc in docs:
            pool_writer.save_pool(doc, None, refs)
        assert store.show("POOL") == in_bulk
    finally:
        Pool.objects.all().delete()


@given(documents=pool_files)
@FEW
def test_compilation_shared_between_pools_is_each_pool_compiled_alone(reference_config, documents):
    docs, refs = _parsed(documents)
    try:
        pool_writer.save_new_pools([(doc, pool_writer.new_pool(doc, refs)) for doc in docs], refs)
        shared: dict = {}
        one_by_one = []
        for row in pools_for_snapshot().order_by("name"):
            for one in row.platforms.all():
                one_by_one.append((one.pk, one.compiled, compilation.platform_config(row, one)))
                alone = _outcome(lambda: compilation.compile_checked(row, one))  # noqa: B023 (called at once)
                assert _outcome(lambda: compilation.compile_checked(row, one, shared)) == alone  # noqa: B023
        assert compilation.platform_configs(Pool.objects.all()) == one_by_one
    finally:
        Pool.objects.all().delete()


def test_an_import_stores_what_each_platform_compiles_to_alone(reference_config):
    documents = {f"team{index}-pool": copy.deepcopy(_TWO_PLATFORMS) for index in range(4)}
    store.apply_many("POOL", documents, CLI)
    for row in pools_for_snapshot():
        for one in row.platforms.all():
            assert one.compiled == compilation.compile_checked(row, one).to_json()
            assert one.compiled["config"]["pool"] == row.name


_TWO_PLATFORMS = {
    "backend": "default",
    "common_default_variables": {"USER_CPU": 1, "USER_GPU": 0, "USER_MEMORY": "1Gi", "USER_STORAGE": "1Gi"},
    "common_resource_validations": ["default_cpu", "default_memory"],
    "common_pod_template": ["default_user", "default_ctrl"],
    "platforms": {"a100": {"override_pod_template": ["training_a100_template"]}, "cpu": {}},
}


@pytest.mark.parametrize("language", ["en-us", "fr"])
@pytest.mark.parametrize("pk", [1, 42, 10**12, "a<b>&\"'"])
def test_the_row_checkbox_is_unfolds(language, pk):
    with translation.override(language):
        assert row_checkbox(pk) == unfold_checkbox.render(helpers.ACTION_CHECKBOX_NAME, str(pk))


@pytest.mark.parametrize("status", [*STATUS_LABELS, "UNKNOWN"])
def test_the_status_label_is_unfolds(status):
    assert status_label(status) == display_for_label(status, "-", STATUS_LABELS)
