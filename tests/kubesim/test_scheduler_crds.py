"""kubesim serves the quota schedulers' custom resources (KAI Queue; Kueue ResourceFlavor, ClusterQueue,
LocalQueue) as a cluster with those CRDs installed would, through the official client."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kubernetes import client

from kubesim import EmulatorServer, KubeEmulator
from tests.kubesim.conftest import kube_api_client

KAI = ("scheduling.run.ai", "v2")
KUEUE = ("kueue.x-k8s.io", "v1beta1")


@pytest.fixture
def custom() -> Iterator[tuple[EmulatorServer, client.CustomObjectsApi]]:
    with EmulatorServer(host="127.0.0.1", port=0, schedulers=("kai", "kueue")) as server:
        with kube_api_client(server.url) as api:
            yield server, client.CustomObjectsApi(api)
        assert not server.emulator.internal_errors, list(server.emulator.internal_errors)


def queue(name: str, quota: int = 8, **labels: str) -> dict:
    return {
        "apiVersion": "scheduling.run.ai/v2",
        "kind": "Queue",
        "metadata": {"name": name, "labels": labels},
        "spec": {"resources": {"gpu": {"quota": quota, "limit": -1, "overQuotaWeight": 1}}},
        "status": {"allocated": {"gpu": "99"}},  # a client's status is dropped on create
    }


def test_kai_queues_are_cluster_scoped_with_a_status_the_controller_writes(custom):
    server, api = custom
    created = api.create_cluster_custom_object(*KAI, "queues", queue("vision", team="a"))
    assert created["metadata"]["uid"] and "status" not in created
    api.create_cluster_custom_object(*KAI, "queues", queue("speech", team="b"))
    listed = api.list_cluster_custom_object(*KAI, "queues", label_selector="team=a")
    assert [q["metadata"]["name"] for q in listed["items"]] == ["vision"]
    server.emulator.set_status("queues.scheduling.run.ai", "vision", {"allocated": {"gpu": "3"}})
    assert api.get_cluster_custom_object_status(*KAI, "queues", "vision")["status"] == {"allocated": {"gpu": "3"}}
    current = api.get_cluster_custom_object(*KAI, "queues", "vision")
    replaced = api.replace_cluster_custom_object(
        *KAI, "queues", "vision", {**queue("vision", 12), "metadata": current["metadata"]}
    )
    assert replaced["spec"]["resources"]["gpu"]["quota"] == 12
    assert replaced["status"] == {"allocated": {"gpu": "3"}}  # a replace keeps the controller's status
    assert replaced["metadata"]["generation"] == 2
    with pytest.raises(client.ApiException) as stale:  # the old resourceVersion: a conflict
        api.replace_cluster_custom_object(
            *KAI, "queues", "vision", {**queue("vision"), "metadata": current["metadata"]}
        )
    assert stale.value.status == 409
    api.delete_cluster_custom_object(*KAI, "queues", "vision")
    with pytest.raises(client.ApiException) as gone:
        api.get_cluster_custom_object(*KAI, "queues", "vision")
    assert gone.value.status == 404


def test_kueue_objects_in_their_scopes(custom):
    server, api = custom
    flavor = {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "ResourceFlavor",
        "metadata": {"name": "a100"},
        "spec": {},
    }
    api.create_cluster_custom_object(*KUEUE, "resourceflavors", flavor)
    cluster_queue = {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "ClusterQueue",
        "metadata": {"name": "vision"},
        "spec": {"cohort": "research"},
    }
    api.create_cluster_custom_object(*KUEUE, "clusterqueues", cluster_queue)
    local = {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "LocalQueue",
        "metadata": {"name": "vision"},
        "spec": {"clusterQueue": "vision"},
    }
    server.emulator.create("namespaces", {"metadata": {"name": "wf-jobs"}})
    created = api.create_namespaced_custom_object(*KUEUE, "wf-jobs", "localqueues", local)
    assert created["metadata"]["namespace"] == "wf-jobs"
    with pytest.raises(client.ApiException) as wrong_scope:  # a LocalQueue is namespaced
        api.create_cluster_custom_object(*KUEUE, "localqueues", local)
    assert wrong_scope.value.status == 405
    for name, spec in (("root", {}), ("research", {"parentName": "root"})):  # hierarchical cohorts
        cohort = {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Cohort", "metadata": {"name": name}, "spec": spec}
        api.create_cluster_custom_object(*KUEUE, "cohorts", cohort)
    server.emulator.set_status("cohorts.kueue.x-k8s.io", "research", {"fairSharing": {"weightedShare": 0}})
    research = api.get_cluster_custom_object_status(*KUEUE, "cohorts", "research")
    assert research["spec"] == {"parentName": "root"} and research["status"] == {"fairSharing": {"weightedShare": 0}}
    with pytest.raises(client.ApiException) as not_namespaced:  # a Cohort is cluster-scoped
        api.create_namespaced_custom_object(*KUEUE, "wf-jobs", "cohorts", cohort)
    assert not_namespaced.value.status == 404  # as an apiserver answers a namespaced path to it
    with pytest.raises(client.ApiException) as no_status:  # a ResourceFlavor has no status subresource
        api.get_cluster_custom_object_status(*KUEUE, "resourceflavors", "a100")
    assert no_status.value.status == 404
    server.emulator.set_status("localqueues.kueue.x-k8s.io", "vision", {"pendingWorkloads": 2}, namespace="wf-jobs")
    status = api.get_namespaced_custom_object_status(*KUEUE, "wf-jobs", "localqueues", "vision")["status"]
    assert status == {"pendingWorkloads": 2}
    everywhere = api.list_custom_object_for_all_namespaces(*KUEUE, "localqueues")
    assert [(q["metadata"]["namespace"], q["metadata"]["name"]) for q in everywhere["items"]] == [("wf-jobs", "vision")]


def test_discovery_lists_the_served_groups(custom):
    server, api = custom
    with kube_api_client(server.url) as raw:
        groups = {g.name: [v.version for v in g.versions] for g in client.ApisApi(raw).get_api_versions().groups}
    assert groups["scheduling.run.ai"] == ["v2"] and groups["kueue.x-k8s.io"] == ["v1beta1"]


def test_schedulers_are_served_only_when_asked():
    plain = KubeEmulator()
    with pytest.raises(KeyError):
        plain.resource_type("queues.scheduling.run.ai")
    assert [rt.plural for rt in plain.serve_schedulers("kueue")] == [
        "resourceflavors",
        "cohorts",
        "clusterqueues",
        "localqueues",
    ]
    assert plain.resource_type("clusterqueues.kueue.x-k8s.io").namespaced is False
    with pytest.raises(ValueError, match="unknown scheduler 'volcano'; known: kai, kueue"):
        KubeEmulator(schedulers=("volcano",))
