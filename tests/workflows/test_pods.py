"""`clusters.kube.pods` against the simulated cluster over HTTP: idempotent create, ownership, namespaces, delete,
list and watch by label, and the plain status the lifecycle reads."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from clusters.kube import pods
from clusters.kube.connection import ConnectionSettings, connect
from clusters.kube.errors import KubeError
from kubesim import EmulatorServer

OURS = {pods.WORKFLOW_LABEL: "wf-1", pods.TASK_LABEL: "t0", pods.INSTANCE_LABEL: "test-portal"}


def manifest(name: str = "wf-1-t0", labels: dict | None = None) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": dict(labels or OURS)},
        "spec": {"restartPolicy": "Never", "containers": [{"name": "t0", "image": "busybox"}]},
    }


@pytest.fixture
def server():
    with EmulatorServer(fleet="demo", kubelet={"start_delay": 0.02, "run_seconds": 0.05}) as emulator:
        yield emulator


@pytest.fixture
def kube(server):
    with connect(ConnectionSettings(name="sim", connection="url", api_url=server.url)) as client:
        yield client


def test_create_makes_the_missing_namespace_then_the_pod(kube, server):
    assert server.emulator.get("namespaces", "jobs") is None
    outcome = pods.create_pod(kube, "jobs", manifest())
    assert outcome.created and outcome.pod["metadata"]["uid"]
    assert pods.MANAGED_BY.items() <= server.emulator.get("namespaces", "jobs")["metadata"]["labels"].items()
    assert server.emulator.get("pods", "wf-1-t0", "jobs")["metadata"]["labels"] == OURS


def test_already_exists_with_our_labels_is_success(kube, server):
    first = pods.create_pod(kube, "default", manifest())
    again = pods.create_pod(kube, "default", manifest())
    assert not again.created
    assert again.pod["metadata"]["uid"] == first.pod["metadata"]["uid"]
    assert len(server.emulator.list("pods", "default")) == 1


def test_someone_elses_pod_of_that_name_is_a_clear_error(kube, server):
    server.emulator.create("pods", manifest(labels={"app": "theirs"}), "default")
    with pytest.raises(pods.PodConflict) as caught:
        pods.create_pod(kube, "default", manifest())
    assert not caught.value.transient and caught.value.k8s_status == 409
    assert "already exists and is not this task's" in caught.value.reason
    other_instance = {**OURS, pods.INSTANCE_LABEL: "another-portal"}
    server.emulator.create("pods", manifest("wf-2-t0", other_instance), "default")
    with pytest.raises(pods.PodConflict):
        pods.create_pod(kube, "default", manifest("wf-2-t0"))


def test_server_errors_are_transient_client_errors_are_not(kube, server):
    server.emulator.fail_next("create", "pods", status=503)
    with pytest.raises(KubeError) as caught:
        pods.create_pod(kube, "default", manifest())
    assert caught.value.transient and caught.value.k8s_status == 503
    server.emulator.fail_next("create", "pods", status=422, message="spec.containers: Required value")
    with pytest.raises(KubeError) as caught:
        pods.create_pod(kube, "default", manifest())
    assert not caught.value.transient
    assert "HTTP 422" in str(caught.value) and "spec.containers: Required value" in str(caught.value)


def test_unreachable_cluster_is_transient():
    with (
        connect(
            ConnectionSettings(name="gone", connection="url", api_url="http://127.0.0.1:9"), timeout=(0.5, 0.5)
        ) as client,
        pytest.raises(KubeError) as caught,
    ):
        pods.create_pod(client, "default", manifest())
    assert caught.value.transient


def test_delete_is_idempotent_and_read_answers_none(kube, server):
    pods.create_pod(kube, "default", manifest())
    assert pods.delete_pod(kube, "default", "wf-1-t0") is True
    assert pods.delete_pod(kube, "default", "wf-1-t0") is False
    assert pods.read_pod(kube, "default", "wf-1-t0") is None


def test_list_by_instance_label_across_namespaces_and_pages(kube, server):
    for index in range(7):
        pods.create_pod(kube, "team-a" if index % 2 else "team-b", manifest(f"p{index}"))
    server.emulator.create("pods", manifest("foreign", {**OURS, pods.INSTANCE_LABEL: "other"}), "default")
    listing = pods.list_pods(kube, pods.instance_selector("test-portal"), page_size=3)
    assert sorted(p["metadata"]["name"] for p in listing.items) == [f"p{i}" for i in range(7)]
    assert listing.resource_version
    only_a = pods.list_pods(kube, pods.instance_selector("test-portal"), namespace="team-a")
    assert {p["metadata"]["namespace"] for p in only_a.items} == {"team-a"}


def test_watch_sees_our_pods_only_and_410_means_list_again(kube, server):
    listing = pods.list_pods(kube, pods.instance_selector("test-portal"))
    pods.create_pod(kube, "default", manifest())
    server.emulator.create("pods", manifest("foreign", {"app": "x"}), "default")
    watch = pods.watch_pods(kube, pods.instance_selector("test-portal"), listing.resource_version, timeout_seconds=2)
    seen = []
    for event_type, obj in watch:
        seen.append((event_type, obj["metadata"]["name"], (obj.get("status") or {}).get("phase")))
        if seen[-1][2] == "Succeeded":
            break
    assert {name for _, name, _ in seen} == {"wf-1-t0"}
    assert seen[0][0] == "ADDED" and seen[-1][2] == "Succeeded"
    server.emulator.compact()
    with pytest.raises(KubeError) as caught:
        list(pods.watch_pods(kube, pods.instance_selector("test-portal"), listing.resource_version, timeout_seconds=2))
    assert caught.value.gone


def _pod(phase="Pending", **status) -> dict:
    return {
        "metadata": {
            "name": "p",
            "namespace": "ns",
            "uid": "u-1",
            "labels": OURS,
            "creationTimestamp": "2026-01-02T03:04:05Z",
        },
        "spec": {"nodeName": status.pop("node", "")},
        "status": {"phase": phase, **status},
    }


def test_pod_state_reads_scheduling_running_and_exit():
    unschedulable = pods.pod_state(
        _pod(
            conditions=[
                {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "0/25 nodes fit"}
            ]
        )
    )
    assert unschedulable.unschedulable == "Unschedulable: 0/25 nodes fit" and not unschedulable.node
    pulling = pods.pod_state(
        _pod(
            node="n1",
            containerStatuses=[
                {"name": "t0", "state": {"waiting": {"reason": "ErrImagePull", "message": "not found"}}}
            ],
        ),
        "t0",
    )
    assert pulling.waiting == "ErrImagePull: not found" and pulling.started_at is None
    running = pods.pod_state(
        _pod(
            "Running",
            node="n1",
            startTime="2026-01-02T03:04:06Z",
            containerStatuses=[{"name": "t0", "state": {"running": {"startedAt": "2026-01-02T03:04:07Z"}}}],
        ),
        "t0",
    )
    assert running.running and running.started_at == datetime(2026, 1, 2, 3, 4, 7, tzinfo=UTC)
    failed = pods.pod_state(
        _pod(
            "Failed",
            node="n1",
            containerStatuses=[
                {"name": "sidecar", "state": {"terminated": {"exitCode": 0}}},
                {
                    "name": "t0",
                    "state": {
                        "terminated": {
                            "exitCode": 137,
                            "reason": "OOMKilled",
                            "startedAt": "2026-01-02T03:04:07Z",
                            "finishedAt": "2026-01-02T03:05:00.5Z",
                        }
                    },
                },
            ],
        ),
        "t0",
    )
    assert (failed.terminal, failed.exit_code, failed.reason) == (True, 137, "OOMKilled")
    assert failed.finished_at == datetime(2026, 1, 2, 3, 5, 0, 500000, tzinfo=UTC)
    evicted = pods.pod_state(_pod("Failed", node="n1", reason="Evicted", message="low on memory"), "t0")
    assert (evicted.exit_code, evicted.reason, evicted.message) == (None, "Evicted", "low on memory")
    assert pods.parse_time("not a time") is None and pods.parse_time(None) is None
