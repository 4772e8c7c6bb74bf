"""The submission's reads cached per process (quotas.services.fit: hard limits and node shapes;
pools.services.spot_capacity: which platforms run on spot): a repeated submission reads none of them again, and
every change they depend on is seen by the next submission, in this process and in another.

These tests run outside a wrapping transaction: inside one the caches are off.
"""

from __future__ import annotations

import pytest

from clusters import inventory
from clusters.machinepools.spec import CAPACITY_TYPE_LABEL
from clusters.models import Backend
from kubesim.fleet import GPU_RESOURCE
from quotas.services.fit import checker
from teams.models import Department, Project
from tests.access.test_access_cache import manage
from tests.queries import captured_queries
from tests.quotas import gpu_cluster as gc
from workflows.errors import WorkflowInvalid
from workflows.models import WorkflowStatus
from workflows.services import SubmitRequest, submit

pytestmark = pytest.mark.django_db(transaction=True)
NODE_POOL = "a100-80gb"


@pytest.fixture
def server(transactional_db):
    with gc.cluster(a100_80=1) as server:
        gc.configure(server, ["a100-80"])
        yield server


@pytest.fixture
def users(server):
    return gc.teams({"research": ["vision"], "ops": ["infra"]})


def one_task(name: str, gpus: int) -> dict:
    """One task asking `gpus` GPUs (gc.spec would split more than a node's four over several tasks)."""
    document = gc.spec(name, 1, "a100-80")
    document["workflow"]["resources"]["default"]["gpu"] = gpus
    return document


def submitted(user, name: str, gpus: int):
    return submit(SubmitRequest(pool="gpu", spec=one_task(name, gpus), who=user))


def refusal(user, name: str, gpus: int) -> str:
    with pytest.raises(WorkflowInvalid) as refused:
        submitted(user, name, gpus)
    return str(refused.value)


def resync(server) -> None:
    inventory.sync_backend(Backend.objects.get(name="sim").pk)


def test_a_repeated_check_reads_only_the_epochs(users):
    project = Project.objects.get(name="vision")
    backend = Backend.objects.get(name="sim").pk
    first = checker(backend, project, {NODE_POOL})
    with captured_queries() as queries:
        again = checker(backend, project, {NODE_POOL})
    assert again == first and first.limits == () and {shape[0] for shape in first.shapes[NODE_POOL]} == {4}
    assert queries and all("access_accessepoch" in sql for sql in queries)  # once per lookup outside a request


def test_a_limit_set_in_another_process_refuses_the_next_submission(users):
    assert submitted(users["vision"], "before", 4).status == WorkflowStatus.PENDING  # no limit: admitted at once
    manage("quota", "set", "--department", "research", NODE_POOL, "--gpu", "4")
    manage("quota", "set", "vision", NODE_POOL, "--gpu", "2", "--limit-gpu", "2")
    assert "project vision's hard limit there is 2" in refusal(users["vision"], "after", 4)


def test_a_limit_removed_admits_the_next_submission(users):
    gc.set_quotas(NODE_POOL, "a100-80", {"research": 4}, {"vision": {"deserved": 2, "limit": 2}})
    assert "hard limit there is 2" in refusal(users["vision"], "before", 4)
    gc.set_quotas(NODE_POOL, "a100-80", {"research": 4}, {"vision": 2})
    assert submitted(users["vision"], "after", 4).status == WorkflowStatus.QUEUED  # managed now: waits its turn


def test_a_project_moved_to_another_department_meets_that_departments_limit(users):
    gc.set_quotas(NODE_POOL, "a100-80", {"research": 4, "ops": {"deserved": 1, "limit": 1}}, {})
    assert submitted(users["vision"], "before", 4).status == WorkflowStatus.QUEUED
    moved = Project.objects.get(name="vision")
    moved.department = Department.objects.get(name="ops")
    moved.save()
    assert "department ops's hard limit there is 1" in refusal(users["vision"], "after", 4)


def test_a_node_grown_in_the_cluster_takes_a_task_refused_before(server, users):
    assert "the largest node of node pool a100-80gb offers 4" in refusal(users["vision"], "before", 8)
    raw = server.emulator.get("nodes", "a100-80-node-0")
    raw["status"]["capacity"][GPU_RESOURCE] = raw["status"]["allocatable"][GPU_RESOURCE] = "8"
    backend = Backend.objects.get(name="sim").pk
    # the watcher's event: only the inventory epoch moves (a full sync would move the machine-shape one too)
    inventory.apply_node_event(backend, "MODIFIED", raw, inventory.PodIndex())
    assert submitted(users["vision"], "after", 8).status == WorkflowStatus.PENDING


def test_a_node_deleted_in_the_cluster_is_not_offered_again(server, users):
    big = gc.gpu_nodes("a100-80", 2)[1]
    big["status"]["capacity"][GPU_RESOURCE] = big["status"]["allocatable"][GPU_RESOURCE] = "8"
    server.emulator.create("nodes", big)
    resync(server)
    assert submitted(users["vision"], "before", 8).status == WorkflowStatus.PENDING
    server.emulator.delete("nodes", big["metadata"]["name"])
    resync(server)
    assert "the largest node of node pool a100-80gb offers 4" in refusal(users["vision"], "after", 8)


def test_a_spot_node_joining_the_platform_is_advised_at_the_next_submission(server, users):
    assert not [w for w in submitted(users["vision"], "before", 1).warnings if "spot" in w]
    spot = gc.gpu_nodes("a100-80", 2)[1]
    spot["metadata"]["labels"][CAPACITY_TYPE_LABEL] = "spot"
    server.emulator.create("nodes", spot)
    resync(server)
    said = [w for w in submitted(users["vision"], "after", 1).warnings if "spot" in w]
    assert said and "platform a100-80 runs on spot capacity (spot node a100-80-node-1)" in said[0]
