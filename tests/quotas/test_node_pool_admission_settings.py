"""A node pool's own admission settings (NODE_POOL `admission_seconds`, `min_runtime_seconds`; null: the
settings' QUOTA_ADMISSION_SECONDS, QUOTA_MIN_RUNTIME_SECONDS): bounded, refused with field/value/reason; the
minimum runtime read by the node pool's pass; the periodic pass visits a node pool only once its period has
elapsed since its last pass, whoever ran that one.

Node pool a100-80gb: 2 nodes × 4 A100 = 8 GPUs. research deserves 8 (vision 8); ops (infer) deserves none.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from configs import store
from configs.errors import ConfigError
from quotas.models import AdmissionPass, NodePool
from quotas.services.admission_passes import admission_pass, node_pools_due, pass_all
from tests.quotas import gpu_cluster as gc
from tests.workflows.conftest import CLI
from workflows.models import Workflow, WorkflowStatus

Q = WorkflowStatus
POOL = "a100-80gb"


@pytest.fixture
def users(db):
    with gc.cluster(a100_80=2) as server:
        gc.configure(server, ["a100-80"])
        users = gc.teams({"research": ["vision"], "ops": ["infer"]})
        gc.set_quotas(POOL, "a100-80", {"research": 8}, {"vision": 8})
        yield users


@pytest.fixture
def run(users, django_capture_on_commit_callbacks):
    def submit(project: str, name: str, gpus: int) -> Workflow:
        workflow = gc.submit_gpus(users[project], name, gpus, "a100-80", django_capture_on_commit_callbacks)
        return Workflow.objects.get(pk=workflow.pk)

    return submit


def set_admission(**fields) -> dict:
    document = {**store.show("NODE_POOL", POOL), **fields}
    store.apply("NODE_POOL", POOL, document, CLI)
    return store.show("NODE_POOL", POOL)


def fresh(workflow: Workflow) -> Workflow:
    return Workflow.objects.get(pk=workflow.pk)


# --- the document --------------------------------------------------------------------------------------


def test_null_means_the_settings_default_and_values_are_kept(users):
    shown = store.show("NODE_POOL", POOL)
    assert (shown["admission_seconds"], shown["min_runtime_seconds"]) == (None, None)
    shown = set_admission(admission_seconds=30, min_runtime_seconds=600)
    assert (shown["admission_seconds"], shown["min_runtime_seconds"]) == (30, 600)
    assert set_admission(admission_seconds=None)["admission_seconds"] is None


@pytest.mark.parametrize(
    ("field", "value", "bounds"),
    [
        ("admission_seconds", 0, "from 1 to 3600"),
        ("admission_seconds", 3601, "from 1 to 3600"),
        ("admission_seconds", "15", "from 1 to 3600"),
        ("admission_seconds", True, "from 1 to 3600"),
        ("min_runtime_seconds", -1, "from 0 to 604800"),
        ("min_runtime_seconds", 604801, "from 0 to 604800"),
        ("min_runtime_seconds", 1.5, "from 0 to 604800"),
    ],
)
def test_out_of_bounds_values_are_refused_whole(users, field, value, bounds):
    before = set_admission(admission_seconds=20, min_runtime_seconds=60)
    with pytest.raises(ConfigError) as refused:
        set_admission(**{field: value})
    assert (refused.value.field, refused.value.value) == (field, value)
    assert f"must be null (the settings' default) or a whole number of seconds {bounds}" in refused.value.reason
    assert store.show("NODE_POOL", POOL) == before


# --- the minimum runtime -------------------------------------------------------------------------------


def test_the_node_pools_minimum_runtime_protects_young_borrowers(run, settings):
    settings.QUOTA_MIN_RUNTIME_SECONDS = 0
    set_admission(min_runtime_seconds=600)
    borrowed = run("infer", "borrow", 8)
    owner = run("vision", "owner", 4)
    assert owner.status == Q.QUEUED and fresh(borrowed).status == Q.WAITING  # 0 s old: spared
    Workflow.objects.filter(pk=borrowed.pk).update(admitted_at=timezone.now() - timedelta(seconds=601))
    report = admission_pass(NodePool.objects.get(name=POOL))
    assert report.preempted == [borrowed.workflow_id] and report.admitted == [owner.workflow_id]


def test_a_node_pools_zero_overrides_the_settings_default(run, settings):
    settings.QUOTA_MIN_RUNTIME_SECONDS = 3600
    set_admission(min_runtime_seconds=0)
    borrowed = run("infer", "borrow", 8)
    owner = run("vision", "owner", 4)  # its pass reclaims at once: the node pool says 0
    assert fresh(borrowed).status == Q.FAILED_PREEMPTED and fresh(owner).admitted_at is not None


# --- the period ----------------------------------------------------------------------------------------


@pytest.fixture
def queued(run):
    for name in ("a", "b"):
        run("vision", name, 4)
    waiting = run("vision", "c", 4)
    assert waiting.status == Q.QUEUED
    return waiting


def test_every_pass_is_recorded_and_the_periodic_pass_waits_for_the_period(queued, settings):
    settings.QUOTA_ADMISSION_SECONDS = 15
    set_admission(admission_seconds=30)
    node_pool = NodePool.objects.get(name=POOL)
    last = AdmissionPass.objects.get(node_pool=node_pool).at  # the submission's pass recorded it
    assert pass_all(last + timedelta(seconds=29))["node_pools"] == 0  # the settings' 15 s do not count here
    assert pass_all(last + timedelta(seconds=30))["node_pools"] == 1
    assert AdmissionPass.objects.get(node_pool=node_pool).at > last


@hypothesis_settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    own=st.none() | st.integers(min_value=1, max_value=3600),
    default=st.integers(min_value=1, max_value=3600),
    elapsed=st.integers(min_value=0, max_value=7200),
    never=st.booleans(),
)
def test_a_node_pool_is_due_exactly_when_its_period_has_elapsed(queued, settings, own, default, elapsed, never):
    settings.QUOTA_ADMISSION_SECONDS = default
    NodePool.objects.filter(name=POOL).update(admission_seconds=own)
    node_pool = NodePool.objects.get(name=POOL)
    now = timezone.now()
    AdmissionPass.objects.filter(node_pool=node_pool).delete()
    if not never:
        AdmissionPass.objects.create(node_pool=node_pool, at=now - timedelta(seconds=elapsed))
    period = default if own is None else own
    assert node_pools_due(now) == ([node_pool.pk] if never or elapsed >= period else [])


def test_a_node_pool_without_queued_work_is_never_visited(users):
    NodePool.objects.filter(name=POOL).update(admission_seconds=1)
    assert node_pools_due(timezone.now() + timedelta(days=1)) == []
