"""Custom objects through the adapter (clusters.kube.custom_objects) against the simulated cluster: the translated
quota objects applied, replaced, listed, read back with their status and deleted; failures as KubeErrors."""

from __future__ import annotations

import pytest

from clusters.kube import custom_objects
from clusters.kube.connection import connect
from clusters.kube.errors import KubeError
from clusters.schedulers import Department, NodePool, Project, Quota, QuotaTree, kai, kueue, resource_of, validate
from clusters.schedulers.crds import crds

MANAGED = "app.kubernetes.io/managed-by=pool-portal"


def tree(vision_gpus: int = 8) -> QuotaTree:
    vision = Project("vision", quotas={"a100": {"gpu": Quota(vision_gpus, None, 1)}})
    research = Department("research", quotas={"a100": {"gpu": Quota(16)}}, projects=(vision, Project("speech")))
    pools = (NodePool("sim-default", default=True), NodePool("a100", node_labels={"gpu": "a100"}))
    return QuotaTree("sim", "quota-jobs", pools, (research,))


def resource(kind: str):
    return next(crd.resource for crd in crds().values() if crd.resource.kind == kind)


@pytest.fixture
def kube(backend, kube_server):
    kube_server.emulator.serve_schedulers("kai", "kueue")
    with connect(backend) as client:
        yield client


def apply_all(kube, objects: list[dict]) -> list[custom_objects.Applied]:
    applied = []
    for obj in objects:
        validate(obj)
        applied.append(custom_objects.apply(kube, resource_of(obj), obj))
    return applied


def test_kai_queues_are_applied_then_replaced_listed_read_and_deleted(kube, kube_server):
    queue_kind = resource("Queue")
    first = apply_all(kube, kai.queues(tree()))
    assert all(a.created for a in first) and len(first) == 6
    again = apply_all(kube, kai.queues(tree(vision_gpus=12)))
    assert not any(a.created for a in again)
    vision = custom_objects.get(kube, queue_kind, "a100-vision")
    assert vision["spec"]["resources"]["gpu"]["quota"] == 12 and vision["metadata"]["generation"] == 2
    # unchanged: no new generation
    assert custom_objects.get(kube, queue_kind, "research")["metadata"]["generation"] == 1
    listed = custom_objects.list_objects(kube, queue_kind, label_selector=f"{MANAGED},kai.scheduler/node-pool=a100")
    assert sorted(q["metadata"]["name"] for q in listed) == ["a100-research", "a100-speech", "a100-vision"]
    assert custom_objects.read_status(kube, queue_kind, "a100-vision") == {}  # before the scheduler wrote any
    kube_server.emulator.set_status("queues.scheduling.run.ai", "a100-vision", {"allocated": {"gpu": "6"}})
    assert custom_objects.read_status(kube, queue_kind, "a100-vision") == {"allocated": {"gpu": "6"}}
    apply_all(kube, kai.queues(tree(vision_gpus=10)))  # a replace keeps the scheduler's status
    assert custom_objects.read_status(kube, queue_kind, "a100-vision") == {"allocated": {"gpu": "6"}}
    assert custom_objects.delete(kube, queue_kind, "a100-vision") is True
    assert custom_objects.delete(kube, queue_kind, "a100-vision") is False
    assert custom_objects.get(kube, queue_kind, "a100-vision") is None
    assert custom_objects.read_status(kube, queue_kind, "a100-vision") is None


def test_kueue_objects_land_in_their_scopes_and_the_namespace_is_created(kube, kube_server):
    applied = apply_all(kube, kueue.objects(tree()))
    kinds = ["ResourceFlavor"] * 2 + ["Cohort"] * 2 + ["ClusterQueue"] * 2 + ["LocalQueue"] * 2
    assert [a.obj["kind"] for a in applied] == kinds  # the root Cohort and research's
    local_kind = resource("LocalQueue")
    assert kube_server.emulator.get("namespaces", "quota-jobs") is not None  # created for the LocalQueues
    local = custom_objects.list_objects(kube, local_kind, "quota-jobs", label_selector=MANAGED)
    assert [(q["metadata"]["namespace"], q["spec"]["clusterQueue"]) for q in local] == [
        ("quota-jobs", "speech"),
        ("quota-jobs", "vision"),
    ]
    assert len(custom_objects.list_objects(kube, local_kind)) == 2  # all namespaces
    kube_server.emulator.set_status(
        "localqueues.kueue.x-k8s.io", "vision", {"pendingWorkloads": 3, "admittedWorkloads": 1}, namespace="quota-jobs"
    )
    assert custom_objects.read_status(kube, local_kind, "vision", "quota-jobs") == {
        "pendingWorkloads": 3,
        "admittedWorkloads": 1,
    }
    flavor = custom_objects.get(kube, resource("ResourceFlavor"), "a100")
    assert flavor["spec"] == {"nodeLabels": {"gpu": "a100"}}
    with pytest.raises(KubeError, match="namespaced: give a namespace"):
        custom_objects.get(kube, local_kind, "vision")


def test_a_conflicting_replace_is_tried_again(kube, kube_server):
    [queue] = [q for q in kai.queues(tree()) if q["metadata"]["name"] == "vision"]
    custom_objects.apply(kube, resource("Queue"), queue)
    kube_server.emulator.fail_next("update", "queues", 409, times=1, reason="Conflict", message="modified meanwhile")
    assert custom_objects.apply(kube, resource("Queue"), queue).created is False


def test_failures_are_one_line_kube_errors(kube, kube_server):
    [queue] = [q for q in kai.queues(tree()) if q["metadata"]["name"] == "vision"]
    kube_server.emulator.fail_next("create", "queues", 503)
    with pytest.raises(KubeError) as unavailable:
        custom_objects.apply(kube, resource("Queue"), queue)
    assert unavailable.value.transient and unavailable.value.k8s_status == 503
    assert str(unavailable.value).startswith("creating queues.scheduling.run.ai vision: HTTP 503")
    kube_server.emulator.fail_next("create", "queues", 403, reason="Forbidden", message="queues is forbidden")
    with pytest.raises(KubeError) as forbidden:
        custom_objects.apply(kube, resource("Queue"), queue)
    assert not forbidden.value.transient and "queues is forbidden" in str(forbidden.value)
    kube_server.emulator.fail_next("list", "queues", 500)
    with pytest.raises(KubeError, match="listing queues.scheduling.run.ai: HTTP 500"):
        custom_objects.list_objects(kube, resource("Queue"))


def test_a_cluster_without_the_scheduler_says_so(backend):
    with connect(backend) as kube, pytest.raises(KubeError) as missing:  # kubesim serves no CRD here
        custom_objects.apply(kube, resource("Queue"), kai.queues(tree())[0])
    assert missing.value.k8s_status == 404 and not missing.value.transient
    assert "creating queues.scheduling.run.ai research: HTTP 404" in str(missing.value)
