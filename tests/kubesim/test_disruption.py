"""Disruptions in the simulated cluster, through the official client as a real one would ask: PodDisruptionBudgets
(policy/v1) and their status, the Eviction API, graceful termination (preStop hooks, grace periods), NoExecute
taints (kubesim.disruption, kubesim.kubelet, kubesim.taints)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from kubernetes import client

from kubesim import EmulatorServer
from kubesim.fleet import node_manifest

from .conftest import kube_api_client, wait_until

NS = "default"
HOOK = ["sh", "-c", "echo saving checkpoint at step 42; sleep 1; echo checkpoint saved"]


@pytest.fixture
def cluster() -> Iterator[EmulatorServer]:
    """Two CPU nodes and the kubelet; pods run until deleted unless they say otherwise."""
    nodes = [node_manifest("cpu", 0), node_manifest("cpu", 1)]
    with EmulatorServer(fleet=nodes, kubelet={"start_delay": 0.01}) as server:
        yield server
        assert not server.emulator.internal_errors, list(server.emulator.internal_errors)


@pytest.fixture
def api(cluster) -> Iterator[client.ApiClient]:
    with kube_api_client(cluster.url) as api_client:
        yield api_client


@pytest.fixture
def v1(api) -> client.CoreV1Api:
    return client.CoreV1Api(api)


@pytest.fixture
def policy(api) -> client.PolicyV1Api:
    return client.PolicyV1Api(api)


def make_pod(v1, name: str, *, labels=None, node=None, hook=None, grace=None, tolerations=None, owned=False):
    container = {"name": "main", "image": "busybox", "command": ["sh", "-c", f"echo {name} started"]}
    if hook:
        container["lifecycle"] = {"preStop": {"exec": {"command": hook}}}
    spec: dict = {"containers": [container]}
    if node:
        spec["nodeSelector"] = {"kubernetes.io/hostname": node}
    if grace is not None:
        spec["terminationGracePeriodSeconds"] = grace
    if tolerations:
        spec["tolerations"] = tolerations
    metadata: dict = {"name": name, "labels": labels or {}, "annotations": {"kubesim/never-finish": "true"}}
    if owned:
        metadata["ownerReferences"] = [
            {"apiVersion": "batch/v1", "kind": "Job", "name": "train", "uid": "u-1", "controller": True}
        ]
    v1.create_namespaced_pod(NS, {"metadata": metadata, "spec": spec})


def running(v1, *names: str) -> None:
    wait_until(lambda: all(phase(v1, n) == "Running" for n in names), what=f"{names} running")


def phase(v1, name: str) -> str | None:
    try:
        return v1.read_namespaced_pod(name, NS).status.phase
    except client.ApiException as error:
        assert error.status == 404
        return None


def gone(v1, name: str) -> bool:
    return phase(v1, name) is None


def budget(policy, name: str, selector: dict, **spec) -> None:
    body = {"metadata": {"name": name}, "spec": {"selector": {"matchLabels": selector}, **spec}}
    policy.create_namespaced_pod_disruption_budget(NS, body)


def evict(v1, name: str):
    return v1.create_namespaced_pod_eviction(
        name, NS, {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name, "namespace": NS}}
    )


def status_of(policy, name: str):
    return policy.read_namespaced_pod_disruption_budget(name, NS).status


# ------------------------------------------------------------------------------------------ budgets
def test_a_budget_counts_its_pods_as_the_disruption_controller_does(v1, policy):
    for name in ("web-0", "web-1", "web-2"):
        make_pod(v1, name, labels={"app": "web"})
    make_pod(v1, "other", labels={"app": "other"})
    running(v1, "web-0", "web-1", "web-2", "other")
    budget(policy, "web", {"app": "web"}, minAvailable=2)

    status = wait_until(lambda: (s := status_of(policy, "web")) and s.expected_pods == 3 and s)
    assert (status.current_healthy, status.desired_healthy, status.disruptions_allowed) == (3, 2, 1)
    assert status.observed_generation == 1
    (condition,) = status.conditions
    assert (condition.type, condition.status, condition.reason) == ("DisruptionAllowed", "True", "SufficientPods")
    listed = policy.list_namespaced_pod_disruption_budget(NS).items
    assert [b.metadata.name for b in listed] == ["web"] and listed[0].spec.min_available == 2

    v1.delete_namespaced_pod("web-2", NS)
    status = wait_until(lambda: (s := status_of(policy, "web")).expected_pods == 2 and s)
    assert (status.current_healthy, status.disruptions_allowed) == (2, 0)
    assert status.conditions[0].reason == "InsufficientPods"

    policy.delete_namespaced_pod_disruption_budget("web", NS)
    assert policy.list_namespaced_pod_disruption_budget(NS).items == []


def test_max_unavailable_and_percentages_need_pods_with_a_controller(v1, policy):
    for name in ("job-0", "job-1", "job-2", "job-3"):
        make_pod(v1, name, labels={"app": "job"}, owned=True)
    make_pod(v1, "bare", labels={"app": "bare"})
    running(v1, "job-0", "job-1", "job-2", "job-3", "bare")
    budget(policy, "jobs", {"app": "job"}, maxUnavailable="25%")
    budget(policy, "half", {"app": "job"}, minAvailable="50%")
    budget(policy, "bare", {"app": "bare"}, maxUnavailable=1)

    jobs = wait_until(lambda: (s := status_of(policy, "jobs")) and s.expected_pods == 4 and s)
    assert (jobs.desired_healthy, jobs.disruptions_allowed) == (3, 1)  # 25% of 4, rounded up: 1 unavailable
    half = status_of(policy, "half")
    assert (half.desired_healthy, half.disruptions_allowed) == (2, 2)
    bare = wait_until(lambda: (s := status_of(policy, "bare")) and s.conditions and s)
    assert bare.disruptions_allowed == 0
    assert (bare.conditions[0].reason, bare.conditions[0].message) == (
        "SyncFailed",
        'found no controller ref for pod "bare"',
    )


# ------------------------------------------------------------------------------------------ evictions
def test_eviction_is_granted_within_the_budget_then_refused_with_429(v1, policy):
    for name in ("web-0", "web-1"):
        make_pod(v1, name, labels={"app": "web"})
    running(v1, "web-0", "web-1")
    budget(policy, "web", {"app": "web"}, minAvailable=1)
    wait_until(lambda: (s := status_of(policy, "web")) and s.disruptions_allowed == 1)

    evict(v1, "web-0")  # 201: the client returns the Status
    assert gone(v1, "web-0")
    with pytest.raises(client.ApiException) as refused:
        evict(v1, "web-1")
    assert refused.value.status == 429
    body = json.loads(refused.value.body)
    assert (body["reason"], body["message"]) == (
        "TooManyRequests",
        "Cannot evict pod as it would violate the pod's disruption budget.",
    )
    assert body["details"]["causes"] == [
        {"reason": "DisruptionBudget", "message": "The disruption budget web needs 1 healthy pods and has 1 currently"}
    ]
    assert phase(v1, "web-1") == "Running"


def test_evicting_what_no_budget_protects_and_what_cannot_be(v1, policy):
    make_pod(v1, "free")
    make_pod(v1, "waiting", node="no-such-node", labels={"app": "web"})  # Pending: a budget is not asked
    running(v1, "free")
    budget(policy, "web", {"app": "web"}, minAvailable=5)
    evict(v1, "free")
    evict(v1, "waiting")
    assert gone(v1, "free") and gone(v1, "waiting")

    with pytest.raises(client.ApiException) as missing:
        evict(v1, "nobody")
    assert missing.value.status == 404 and json.loads(missing.value.body)["message"] == 'pods "nobody" not found'
    make_pod(v1, "twice", labels={"app": "web", "tier": "x"})
    running(v1, "twice")
    budget(policy, "tier", {"tier": "x"}, minAvailable=0)
    with pytest.raises(client.ApiException) as two:
        evict(v1, "twice")
    assert two.value.status == 500 and "more than one PodDisruptionBudget" in json.loads(two.value.body)["message"]


# ------------------------------------------------------------------------------------------ preStop, grace
def test_a_deleted_pod_runs_its_pre_stop_hook_while_terminating_then_goes(v1):
    make_pod(v1, "train", hook=HOOK)
    running(v1, "train")

    v1.delete_namespaced_pod("train", NS)

    terminating = v1.read_namespaced_pod("train", NS)
    assert terminating.metadata.deletion_timestamp is not None
    assert terminating.metadata.deletion_grace_period_seconds == 30  # the pod's default grace period
    assert terminating.status.phase == "Running"
    log = v1.read_namespaced_pod_log("train", NS)
    assert log.splitlines() == ["train started", "saving checkpoint at step 42", "checkpoint saved"]
    wait_until(lambda: gone(v1, "train"), what="removed once its hook (sleep 1) is done")


def test_the_grace_period_cuts_a_long_hook_short_and_grace_zero_forces(v1):
    make_pod(v1, "slow", hook=["sh", "-c", "echo stopping; sleep 3600"], grace=1)
    make_pod(v1, "forced", hook=HOOK)
    make_pod(v1, "plain")
    running(v1, "slow", "forced", "plain")

    v1.delete_namespaced_pod("slow", NS)
    assert v1.read_namespaced_pod("slow", NS).metadata.deletion_grace_period_seconds == 1
    v1.delete_namespaced_pod("forced", NS, grace_period_seconds=0)
    v1.delete_namespaced_pod("plain", NS)  # no hook: its container stops at SIGTERM, at once

    assert gone(v1, "forced") and gone(v1, "plain")
    wait_until(lambda: gone(v1, "slow"), what="killed when its 1 s grace period is over")


def test_an_evicted_pod_is_marked_and_stops_gracefully(v1):
    make_pod(v1, "train", hook=HOOK)
    running(v1, "train")

    evict(v1, "train")

    pod = v1.read_namespaced_pod("train", NS)
    assert pod.metadata.deletion_timestamp is not None
    condition = next(c for c in pod.status.conditions if c.type == "DisruptionTarget")
    assert (condition.status, condition.reason, condition.message) == (
        "True",
        "EvictionByEvictionAPI",
        "Eviction API: evicting",
    )
    assert "saving checkpoint at step 42" in v1.read_namespaced_pod_log("train", NS)
    wait_until(lambda: gone(v1, "train"))


# ------------------------------------------------------------------------------------------ NoExecute
def taint_node(v1, node: str, *taints: dict) -> None:
    v1.patch_node(node, {"spec": {"taints": list(taints)}})


def test_no_execute_evicts_at_once_what_does_not_tolerate_it_and_no_schedule_evicts_nothing(cluster, v1):
    node = "cpu-node-0"
    make_pod(v1, "plain", node=node, hook=HOOK)
    make_pod(v1, "tolerant", node=node, tolerations=[{"key": "maintenance", "operator": "Exists"}])
    running(v1, "plain", "tolerant")

    taint_node(v1, node, {"key": "maintenance", "value": "now", "effect": "NoSchedule"})
    assert cluster.kubelet.taint_eviction.scheduled == set()
    assert phase(v1, "plain") == "Running"

    taint_node(v1, node, {"key": "maintenance", "value": "now", "effect": "NoExecute"})
    pod = wait_until(lambda: (p := v1.read_namespaced_pod("plain", NS)).metadata.deletion_timestamp and p)
    condition = next(c for c in pod.status.conditions if c.type == "DisruptionTarget")
    assert (condition.reason, condition.message) == (
        "DeletionByTaintManager",
        "Taint manager: deleting due to NoExecute taint",
    )
    assert "saving checkpoint at step 42" in v1.read_namespaced_pod_log("plain", NS)  # its hook ran
    wait_until(lambda: gone(v1, "plain"))
    assert phase(v1, "tolerant") == "Running"  # tolerates it with no tolerationSeconds: stays for good


def test_toleration_seconds_evict_after_that_long_unless_the_taint_goes_first(cluster, v1):
    node = "cpu-node-1"
    short = [{"key": "maintenance", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 1}]
    long = [{"key": "maintenance", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 3600}]
    make_pod(v1, "short", node=node, tolerations=short)
    make_pod(v1, "long", node=node, tolerations=long)
    running(v1, "short", "long")

    taint_node(v1, node, {"key": "maintenance", "value": "now", "effect": "NoExecute"})
    wait_until(lambda: cluster.kubelet.taint_eviction.scheduled == {(NS, "short"), (NS, "long")})
    wait_until(lambda: gone(v1, "short"), what="evicted after its tolerationSeconds")

    taint_node(v1, node)  # the taint goes: the other pod stays
    wait_until(lambda: cluster.kubelet.taint_eviction.scheduled == set())
    assert phase(v1, "long") == "Running"


def test_a_checkpoint_the_pre_stop_hook_writes_on_a_claim_is_read_by_the_next_pod(v1):
    v1.create_namespaced_persistent_volume_claim(
        NS,
        {
            "metadata": {"name": "ckpt"},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
        },
    )

    def attempt(name: str, hook=None) -> None:
        container = {
            "name": "main",
            "image": "pytorch",
            "command": ["sh", "-c", "cat /ckpt/step; echo training; echo scratch > /tmp/x"],
            "volumeMounts": [{"name": "ckpt", "mountPath": "/ckpt"}],
        }
        if hook:
            container["lifecycle"] = {"preStop": {"exec": {"command": hook}}}
        spec = {
            "containers": [container],
            "volumes": [{"name": "ckpt", "persistentVolumeClaim": {"claimName": "ckpt"}}],
        }
        v1.create_namespaced_pod(
            NS, {"metadata": {"name": name, "annotations": {"kubesim/never-finish": "true"}}, "spec": spec}
        )
        running(v1, name)

    save = ["sh", "-c", "echo saving checkpoint; mkdir -p /ckpt && echo step 120 > /ckpt/step; cat /tmp/x; sleep 1"]
    attempt("first", save)
    assert v1.read_namespaced_pod_log("first", NS).splitlines() == [
        "cat: /ckpt/step: No such file or directory",
        "training",
    ]
    evict(v1, "first")
    # the hook's output in the log; /tmp is the container's own (gone with the pod), /ckpt the claim's
    assert v1.read_namespaced_pod_log("first", NS).splitlines()[2:] == ["saving checkpoint", "scratch"]
    wait_until(lambda: gone(v1, "first"))

    attempt("second")
    assert v1.read_namespaced_pod_log("second", NS).splitlines() == ["step 120", "training"]
