"""The per-process cache of where a submission is charged (quotas.services.charge_cache): a cached answer is
served for one epoch query, and any change it depends on — node pools and their quotas, pools and
platforms, nodes moving node pool or platform, nodes deleted, teams deleted — is seen by the next
submission, in this process and in another.

These tests run outside a wrapping transaction: inside one the cache is off.
"""

from __future__ import annotations

import pytest

from clusters import inventory
from configs import store
from pools.models import Pool
from quotas.services import charge_cache
from teams.models import Department
from tests.access.test_access_cache import manage
from tests.clusters.conftest import CLI, H100_NODES
from tests.queries import captured_queries
from tests.quotas import gpu_cluster as gc
from tests.quotas.conftest import H100_PRODUCT
from workflows.models import Workflow, WorkflowStatus
from workflows.services import SubmitRequest, submit

pytestmark = pytest.mark.django_db(transaction=True)


def charge(pool: str, platform: str) -> tuple[str, bool]:
    """(node pool, queue): the node pool's nodeSelector, also cached, is checked where it matters."""
    return charge_cache.charge(Pool.objects.get(name=pool), platform)[:2]


def test_a_cached_charge_costs_one_epoch_query(carved):
    assert charge("research", "any-h100") == ("h100", False)  # the h100 nodes are research/any-h100's
    with captured_queries() as queries:
        cached = charge_cache.charge(Pool.objects.get(name="research"), "any-h100")
    assert cached == ("h100", False, {"nvidia.com/gpu.product": H100_PRODUCT})  # with its label node pool's selector
    assert len(queries) == 2  # the pool (this test's), the epochs
    assert "access_accessepoch" in queries[1]


def test_nodes_moving_node_pool_are_seen(carved, kube_server):
    assert charge("batch", "cpu") == ("sim-default", False)
    for index in range(4):  # the cpu nodes join the h100 label node pool
        labels = {"nvidia.com/gpu.product": H100_PRODUCT}
        kube_server.emulator.patch("nodes", f"cpu-node-{index}", {"metadata": {"labels": labels}})
    inventory.sync_backend(carved.pk)
    assert charge("batch", "cpu") == ("h100", False)


def test_nodes_moving_platform_are_seen(carved):
    assert charge("research", "any-h100") == ("h100", False)
    # a POD_TEMPLATE revision (not a type the cache listens to): any-h100 now selects the cpu nodes
    store.apply("POD_TEMPLATE", "h100", {"spec": {"nodeSelector": {"hive.openshift.io/machine-pool": "cpu"}}}, CLI)
    assert charge("research", "any-h100") == ("sim-default", False)


def test_nodes_deleted_are_seen(carved, kube_server):
    assert charge("research", "any-h100") == ("h100", False)
    for name in H100_NODES:
        kube_server.emulator.delete("nodes", name)
    inventory.sync_backend(carved.pk)
    assert charge("research", "any-h100") == ("sim-default", False)


def test_node_pool_and_quota_changes_are_seen(carved):
    assert charge("train", "a100") == ("a100", False)
    quota = {"backend": "sim", "selector": {"platform": {"pool": "train", "platform": "a100"}}}
    store.apply("NODE_POOL", "a100", {**quota, "departments": {"ops": {"gpu": {"deserved": 2}}}}, CLI)
    assert charge("train", "a100") == ("a100", True)  # managed now: its workflows wait for admission
    Department.objects.get(name="ops").projects.all().delete()
    Department.objects.get(name="ops").delete()  # its quota rows go with it: unmanaged again
    assert charge("train", "a100") == ("a100", False)
    store.delete("NODE_POOL", "a100", CLI)
    assert charge("train", "a100") == ("sim-default", False)


@pytest.fixture
def gpu_user(transactional_db):
    with gc.cluster(a100_80=2) as server:
        gc.configure(server, ["a100-80"])
        yield gc.teams({"research": ["vision"]})["vision"]


def submitted(user, name: str) -> tuple[str, str]:
    """(node pool, status as submitted: PENDING when admitted at once, QUEUED when it waits for admission)."""
    result = submit(SubmitRequest(pool="gpu", spec=gc.spec(name, 1, "a100-80"), who=user))
    return Workflow.objects.get(workflow_id=result.workflow_id).node_pool, result.status


def test_a_quota_set_in_another_process_is_seen_by_the_next_submission(gpu_user):
    assert submitted(gpu_user, "before") == ("a100-80gb", WorkflowStatus.PENDING)  # unmanaged: admitted at once
    manage("quota", "set", "--department", "research", "a100-80gb", "--gpu", "8")
    assert submitted(gpu_user, "after") == ("a100-80gb", WorkflowStatus.QUEUED)  # managed: waits for admission


def test_a_node_pool_deleted_in_this_process_is_seen_by_the_next_submission(gpu_user):
    assert submitted(gpu_user, "before") == ("a100-80gb", WorkflowStatus.PENDING)
    store.delete("NODE_POOL", "a100-80gb", CLI)
    assert submitted(gpu_user, "after") == ("sim-default", WorkflowStatus.PENDING)
