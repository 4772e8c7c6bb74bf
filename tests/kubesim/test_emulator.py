"""The simulated apiserver, driven through the official ``kubernetes`` client over loopback HTTP."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest
from kubernetes import client, watch

from kubesim import EmulatorServer
from kubesim.fleet import demo_fleet, load_fleet
from tests.polling import PATIENCE

from .conftest import kube_api_client, wait_until


def _node(name: str, **labels: str) -> dict:
    return {"metadata": {"name": name, "labels": labels}, "spec": {}}


def _pod(name: str, node: str | None = None, **labels: str) -> dict:
    spec: dict = {"containers": [{"name": "main", "image": "busybox"}]}
    if node:
        spec["nodeName"] = node
    return {"metadata": {"name": name, "labels": labels}, "spec": spec}


def _status(exc: client.ApiException) -> dict:
    return json.loads(exc.body)


def _take(n: int, func, *args, **kwargs) -> list[tuple[str, str]]:
    """The first ``n`` watch events as (type, name), then stop watching."""
    w = watch.Watch()
    events = []
    for event in w.stream(func, *args, **kwargs):
        events.append((event["type"], event["object"].metadata.name))
        if len(events) == n:
            w.stop()
    return events


def _raw_get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=PATIENCE) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


# --------------------------------------------------------------------------- discovery
def test_version_and_discovery(kube_emulator, api):
    assert client.VersionApi(api).get_code().git_version == "v1.33.0"
    for path in ("/version", "/version/"):
        status, body = _raw_get(kube_emulator.url + path)
        assert status == 200 and json.loads(body)["gitVersion"] == "v1.33.0"
    assert client.CoreApi(api).get_api_versions().versions == ["v1"]
    groups = {g.name for g in client.ApisApi(api).get_api_versions().groups}
    assert {"apps", "batch"} <= groups
    resources = {r.name: r for r in client.CoreV1Api(api).get_api_resources().resources}
    assert resources["pods"].namespaced and not resources["nodes"].namespaced
    assert {"pods/status", "nodes/status", "namespaces"} <= set(resources)
    assert client.BatchV1Api(api).get_api_resources().group_version == "batch/v1"


# --------------------------------------------------------------------------- metadata and lists
def test_objects_get_uid_resource_version_and_timestamps(v1):
    a = v1.create_node(_node("a"))
    b = v1.create_node(_node("b"))
    assert a.metadata.uid and a.metadata.uid != b.metadata.uid
    assert int(b.metadata.resource_version) > int(a.metadata.resource_version)
    assert a.metadata.creation_timestamp is not None
    pod = v1.create_namespaced_pod(
        "default", {"metadata": {"generateName": "job-"}, "spec": {"containers": [{"name": "c", "image": "x"}]}}
    )
    assert pod.metadata.name.startswith("job-") and len(pod.metadata.name) == len("job-") + 5
    assert pod.metadata.namespace == "default" and pod.status.phase == "Pending"

    raw = json.loads(v1.list_node(_preload_content=False).data)
    assert raw["kind"] == "NodeList" and raw["apiVersion"] == "v1"
    assert raw["metadata"]["resourceVersion"] == str(int(pod.metadata.resource_version))
    pods = json.loads(v1.list_pod_for_all_namespaces(_preload_content=False).data)
    assert pods["kind"] == "PodList"


def test_list_nodes_by_label_selector(v1):
    for name, labels in [
        ("h1", {"gpu": "h100", "zone": "a"}),
        ("h2", {"gpu": "h100", "zone": "b"}),
        ("a1", {"gpu": "a100", "zone": "a"}),
        ("c1", {"zone": "c"}),
    ]:
        v1.create_node(_node(name, **labels))

    def names(selector: str) -> set[str]:
        return {n.metadata.name for n in v1.list_node(label_selector=selector).items}

    assert names("gpu=h100") == {"h1", "h2"}
    assert names("gpu==a100") == {"a1"}
    assert names("gpu!=h100") == {"a1", "c1"}  # != also matches nodes without the label
    assert names("gpu in (h100,a100),zone=a") == {"h1", "a1"}
    assert names("gpu notin (h100)") == {"a1", "c1"}
    assert names("gpu") == {"h1", "h2", "a1"}
    assert names("!gpu") == {"c1"}
    assert names("") == {"h1", "h2", "a1", "c1"}
    with pytest.raises(client.ApiException) as exc:
        v1.list_node(label_selector="gpu in h100")
    assert exc.value.status == 400


def test_list_pods_by_field_selector(v1):
    v1.create_namespace({"metadata": {"name": "team-a"}})
    v1.create_namespaced_pod("default", _pod("p1", node="n1"))
    v1.create_namespaced_pod("default", _pod("p2", node="n2"))
    v1.create_namespaced_pod("team-a", _pod("p3", node="n1"))
    v1.create_namespaced_pod("team-a", _pod("p4"))
    v1.patch_namespaced_pod_status("p2", "default", {"status": {"phase": "Running"}})

    def names(selector: str, namespace: str | None = None) -> set[str]:
        if namespace:
            items = v1.list_namespaced_pod(namespace, field_selector=selector).items
        else:
            items = v1.list_pod_for_all_namespaces(field_selector=selector).items
        return {p.metadata.name for p in items}

    assert names("spec.nodeName=n1") == {"p1", "p3"}
    assert names("spec.nodeName==n1", namespace="team-a") == {"p3"}
    assert names("spec.nodeName=") == {"p4"}  # unbound pods
    assert names("status.phase=Running") == {"p2"}
    assert names("status.phase!=Running,spec.nodeName!=") == {"p1", "p3"}
    assert names("metadata.namespace=team-a") == {"p3", "p4"}
    assert names("metadata.name=p4") == {"p4"}
    with pytest.raises(client.ApiException) as exc:
        names("spec.containers=x")
    assert exc.value.status == 400 and "not supported" in _status(exc.value)["message"]


def test_pagination_over_a_snapshot(kube_emulator, v1):
    load_fleet(kube_emulator, demo_fleet())
    first = v1.list_node(limit=10)
    assert len(first.items) == 10 and first.metadata._continue
    assert first.metadata.remaining_item_count == 19
    v1.create_node(_node("zz-added-during-paging"))  # not in the snapshot being paged
    second = v1.list_node(limit=10, _continue=first.metadata._continue)
    third = v1.list_node(limit=10, _continue=second.metadata._continue)
    assert len(second.items) == 10 and len(third.items) == 9 and not third.metadata._continue
    assert first.metadata.resource_version == second.metadata.resource_version == third.metadata.resource_version
    names = [n.metadata.name for page in (first, second, third) for n in page.items]
    assert names == sorted(names) and len(set(names)) == 29
    assert len(v1.list_node().items) == 30

    with pytest.raises(client.ApiException) as exc:
        v1.list_node(limit=5, _continue="not-a-token")
    assert exc.value.status == 410 and _status(exc.value)["reason"] == "Expired"
    token = v1.list_node(limit=5).metadata._continue
    kube_emulator.emulator.compact()
    with pytest.raises(client.ApiException) as exc:
        v1.list_node(limit=5, _continue=token)
    assert exc.value.status == 410


# --------------------------------------------------------------------------- CRUD
def test_pod_create_duplicate_get_delete(v1):
    created, status_code, _headers = v1.create_namespaced_pod_with_http_info("default", _pod("web"))
    assert status_code == 201 and created.metadata.name == "web"
    with pytest.raises(client.ApiException) as exc:
        v1.create_namespaced_pod("default", _pod("web"))
    body = _status(exc.value)
    assert exc.value.status == 409 and body["kind"] == "Status" and body["reason"] == "AlreadyExists"
    assert v1.read_namespaced_pod("web", "default").metadata.uid == created.metadata.uid
    deleted = v1.delete_namespaced_pod("web", "default")
    assert deleted.metadata.name == "web"
    with pytest.raises(client.ApiException) as exc:
        v1.read_namespaced_pod("web", "default")
    assert exc.value.status == 404 and _status(exc.value)["reason"] == "NotFound"
    assert _status(exc.value)["details"] == {"name": "web", "group": "", "kind": "pods"}
    with pytest.raises(client.ApiException) as exc:
        v1.delete_namespaced_pod("web", "default")
    assert exc.value.status == 404


def test_replace_patch_and_conflicts(v1):
    pod = v1.create_namespaced_pod("default", _pod("p", app="a"))
    fresh = v1.read_namespaced_pod("p", "default")
    fresh.metadata.labels["app"] = "b"
    replaced = v1.replace_namespaced_pod("p", "default", fresh)
    assert replaced.metadata.labels["app"] == "b"
    assert int(replaced.metadata.resource_version) > int(pod.metadata.resource_version)

    stale = v1.read_namespaced_pod("p", "default")
    stale.metadata.resource_version = pod.metadata.resource_version
    with pytest.raises(client.ApiException) as exc:
        v1.replace_namespaced_pod("p", "default", stale)
    assert exc.value.status == 409 and _status(exc.value)["reason"] == "Conflict"

    patched = v1.patch_namespaced_pod("p", "default", {"metadata": {"labels": {"tier": "x", "app": None}}})
    assert patched.metadata.labels == {"tier": "x"}
    assert int(patched.metadata.resource_version) > int(replaced.metadata.resource_version)
    json_patched = v1.patch_namespaced_pod(
        "p", "default", [{"op": "add", "path": "/metadata/annotations", "value": {"note": "hi"}}]
    )
    assert json_patched.metadata.annotations == {"note": "hi"}
    again = v1.patch_namespaced_pod("p", "default", {"metadata": {"labels": {"tier": "x"}}})
    assert again.metadata.resource_version == json_patched.metadata.resource_version  # no-op: no bump

    # status goes through the status subresource only
    v1.patch_namespaced_pod("p", "default", {"status": {"phase": "Running"}})
    assert v1.read_namespaced_pod("p", "default").status.phase == "Pending"
    running = v1.patch_namespaced_pod_status("p", "default", {"status": {"phase": "Running"}})
    assert running.status.phase == "Running"
    status = v1.read_namespaced_pod_status("p", "default")
    status.status.phase = "Succeeded"
    assert v1.replace_namespaced_pod_status("p", "default", status).status.phase == "Succeeded"

    node = v1.create_node(_node("n1"))
    node.status = client.V1NodeStatus(allocatable={"cpu": "4"})
    assert v1.replace_node_status("n1", node).status.allocatable == {"cpu": "4"}
    assert v1.patch_node_status("n1", {"status": {"capacity": {"cpu": "8"}}}).status.capacity == {"cpu": "8"}


def test_finalizers_delay_deletion(v1):
    v1.create_namespaced_config_map("default", {"metadata": {"name": "cm", "finalizers": ["portal/cleanup"]}})
    marked = v1.delete_namespaced_config_map("cm", "default")
    assert v1.read_namespaced_config_map("cm", "default").metadata.deletion_timestamp is not None
    assert marked is not None
    v1.patch_namespaced_config_map("cm", "default", {"metadata": {"finalizers": None}})
    with pytest.raises(client.ApiException) as exc:
        v1.read_namespaced_config_map("cm", "default")
    assert exc.value.status == 404


def test_delete_collection_by_label(v1):
    for i in range(4):
        v1.create_namespaced_pod("default", _pod(f"p{i}", batch="x" if i % 2 else "y"))
    v1.delete_collection_namespaced_pod("default", label_selector="batch=x")
    assert sorted(p.metadata.name for p in v1.list_namespaced_pod("default").items) == ["p0", "p2"]


def test_namespaces(v1):
    created, status_code, _headers = v1.create_namespace_with_http_info({"metadata": {"name": "team-a"}})
    assert status_code == 201 and created.status.phase == "Active"
    assert {"default", "kube-system", "team-a"} <= {n.metadata.name for n in v1.list_namespace().items}
    assert v1.read_namespace("team-a").metadata.labels["kubernetes.io/metadata.name"] == "team-a"
    v1.create_namespaced_pod("team-a", _pod("p"))
    with pytest.raises(client.ApiException) as exc:
        v1.create_namespaced_pod("nowhere", _pod("p"))
    assert exc.value.status == 404 and "namespaces" in _status(exc.value)["message"]
    v1.delete_namespace("team-a")
    with pytest.raises(client.ApiException) as exc:
        v1.read_namespace("team-a")
    assert exc.value.status == 404
    assert v1.list_pod_for_all_namespaces().items == []


def test_custom_objects(kube_emulator, api):
    kube_emulator.emulator.add_resource("scheduling.run.ai", "v2", "queues", "Queue", namespaced=False)
    crd = client.CustomObjectsApi(api)
    body = {
        "apiVersion": "scheduling.run.ai/v2",
        "kind": "Queue",
        "metadata": {"name": "team-a"},
        "spec": {"resources": {"gpu": {"quota": 8}}},
    }
    created = crd.create_cluster_custom_object("scheduling.run.ai", "v2", "queues", body)
    assert created["metadata"]["uid"] and created["spec"]["resources"]["gpu"]["quota"] == 8
    with pytest.raises(client.ApiException) as exc:
        crd.create_cluster_custom_object("scheduling.run.ai", "v2", "queues", body)
    assert exc.value.status == 409
    patched = crd.patch_cluster_custom_object(
        "scheduling.run.ai", "v2", "queues", "team-a", {"spec": {"priority": 100}}
    )
    assert patched["spec"]["priority"] == 100 and patched["metadata"]["generation"] == 2
    listed = crd.list_cluster_custom_object("scheduling.run.ai", "v2", "queues")
    assert listed["kind"] == "QueueList" and [q["metadata"]["name"] for q in listed["items"]] == ["team-a"]
    groups = {g.name for g in client.ApisApi(api).get_api_versions().groups}
    assert "scheduling.run.ai" in groups
    crd.delete_cluster_custom_object("scheduling.run.ai", "v2", "queues", "team-a")
    with pytest.raises(client.ApiException) as exc:
        crd.get_cluster_custom_object("scheduling.run.ai", "v2", "queues", "team-a")
    assert exc.value.status == 404
    with pytest.raises(client.ApiException) as exc:
        crd.list_cluster_custom_object("unknown.example", "v1", "things")
    assert exc.value.status == 404


# --------------------------------------------------------------------------- watch
def test_watch_from_list_resource_version_sees_later_patches(kube_emulator, v1):
    for name in ("n1", "n2", "n3"):
        v1.create_node(_node(name, pool="a"))
    listed = v1.list_node()
    v1.patch_node("n2", {"metadata": {"labels": {"patched": "yes"}}})  # after the list, before the watch

    w = watch.Watch()
    seen = []
    for event in w.stream(v1.list_node, resource_version=listed.metadata.resource_version, timeout_seconds=5):
        seen.append((event["type"], event["object"].metadata.name))
        if len(seen) == 1:
            v1.patch_node("n3", {"metadata": {"labels": {"patched": "live"}}})  # while streaming
        if len(seen) == 2:
            w.stop()
    assert seen == [("MODIFIED", "n2"), ("MODIFIED", "n3")]
    wait_until(lambda: kube_emulator.emulator.watch_count() == 0)  # the server noticed the hang-up


def test_watch_without_resource_version_starts_with_current_state_and_filters(v1):
    v1.create_node(_node("gpu-1", gpu="yes"))
    v1.create_node(_node("cpu-1"))
    w = watch.Watch()
    seen = []
    for event in w.stream(v1.list_node, label_selector="gpu=yes", timeout_seconds=5):
        seen.append((event["type"], event["object"].metadata.name))
        if len(seen) == 1:
            v1.patch_node("cpu-1", {"metadata": {"labels": {"other": "x"}}})  # not selected: not seen
            v1.patch_node("gpu-1", {"metadata": {"labels": {"gpu": None}}})  # leaves the selection
        if len(seen) == 2:
            w.stop()
    assert seen == [("ADDED", "gpu-1"), ("DELETED", "gpu-1")]


def test_watch_with_field_selector_on_pods(v1):
    v1.create_namespaced_pod("default", _pod("a", node="n1"))
    rv = v1.list_namespaced_pod("default").metadata.resource_version
    v1.create_namespaced_pod("default", _pod("b", node="n2"))
    v1.create_namespaced_pod("default", _pod("c", node="n1"))
    events = _take(
        1, v1.list_namespaced_pod, "default", field_selector="spec.nodeName=n1", resource_version=rv, timeout_seconds=5
    )
    assert events == [("ADDED", "c")]


def test_watch_too_old_resource_version_is_410_gone():
    with EmulatorServer(history_size=5) as server, kube_api_client(server.url) as api:
        v1 = client.CoreV1Api(api)
        first = v1.create_node(_node("n0"))
        for i in range(1, 10):
            v1.create_node(_node(f"n{i}"))
        # With timeout_seconds the client does not retry: the ERROR event surfaces as ApiException(410).
        with pytest.raises(client.ApiException) as exc:
            list(
                watch.Watch().stream(v1.list_node, resource_version=first.metadata.resource_version, timeout_seconds=5)
            )
        assert exc.value.status == 410 and exc.value.reason.startswith("Expired: too old resource version")
        # Without it, the client retries once from the same version, then raises the same way.
        with pytest.raises(client.ApiException) as exc:
            next(iter(watch.Watch().stream(v1.list_node, resource_version=first.metadata.resource_version)))
        assert exc.value.status == 410
        # On the wire: HTTP 200 and one ERROR event carrying a 410 Expired Status, like a real apiserver.
        status, body = _raw_get(f"{server.url}/api/v1/nodes?watch=true&resourceVersion=1")
        event = json.loads(body.splitlines()[0])
        assert status == 200 and event["type"] == "ERROR"
        assert event["object"]["code"] == 410 and event["object"]["reason"] == "Expired"
        # A recent enough version still works.
        recent = v1.list_node().metadata.resource_version
        v1.patch_node("n9", {"metadata": {"labels": {"x": "y"}}})
        assert _take(1, v1.list_node, resource_version=recent, timeout_seconds=5) == [("MODIFIED", "n9")]
        assert not server.emulator.internal_errors


def test_compaction_and_expired_watches(kube_emulator, v1):
    v1.create_node(_node("n1"))
    rv = v1.list_node().metadata.resource_version
    v1.create_node(_node("n2"))
    kube_emulator.emulator.compact()
    with pytest.raises(client.ApiException) as exc:
        list(watch.Watch().stream(v1.list_node, resource_version=rv, timeout_seconds=5))
    assert exc.value.status == 410

    w = watch.Watch()
    with pytest.raises(client.ApiException) as exc:
        for _event in w.stream(v1.list_node, timeout_seconds=5):  # ADDED n1, ADDED n2, then expire
            kube_emulator.emulator.expire_watches("nodes")
    assert exc.value.status == 410


def test_watch_timeout_seconds_closes_the_stream(v1):
    v1.create_node(_node("n1"))
    rv = v1.list_node().metadata.resource_version
    started = time.monotonic()
    # the server ends it; a server that ignored timeout_seconds would fail on the client's read timeout instead
    events = list(watch.Watch().stream(v1.list_node, resource_version=rv, timeout_seconds=1, _request_timeout=30))
    assert events == [] and time.monotonic() - started >= 0.9  # not before the timeout


# --------------------------------------------------------------------------- error injection, speed
def test_fail_next_injects_errors(kube_emulator, v1):
    kube_emulator.emulator.fail_next("list", "nodes", status=503, times=2)
    for _ in range(2):
        with pytest.raises(client.ApiException) as exc:
            v1.list_node()
        assert exc.value.status == 503 and _status(exc.value)["reason"] == "ServiceUnavailable"
    assert v1.list_node().items == []
    kube_emulator.emulator.fail_next("create", "pods", status=500, message="etcd is down")
    with pytest.raises(client.ApiException) as exc:
        v1.create_namespaced_pod("default", _pod("p"))
    assert exc.value.status == 500 and _status(exc.value)["message"] == "etcd is down"
    assert v1.list_namespaced_pod("default").items == []  # the failed create stored nothing
    kube_emulator.emulator.fail_next("patch", "pods/status", status=409, reason="Conflict")
    v1.create_namespaced_pod("default", _pod("p"))
    with pytest.raises(client.ApiException) as exc:
        v1.patch_namespaced_pod_status("p", "default", {"status": {"phase": "Running"}})
    assert exc.value.status == 409


def test_kmock_dsl_reactions_still_work(kube_emulator, v1):
    emulator = kube_emulator.emulator
    emulator["list v1/nodes"] << 429  # kmock syntax: answers every matching request from now on
    with pytest.raises(client.ApiException) as exc:
        v1.list_node()
    assert exc.value.status == 429
    assert v1.list_namespace().items  # other requests fall through to the emulator
    # Sliced views work too; they count over kmock's (capped) request log: [1:2] is the 2nd list ever.
    emulator["list v1/namespaces"][1:2] << 503
    with pytest.raises(client.ApiException) as exc:
        v1.list_namespace()
    assert exc.value.status == 503
    assert v1.list_namespace().items


def test_request_log_keeps_only_the_newest_requests(kube_emulator, v1):
    """A user reaction makes kmock scan the log on every request: capped, the scan stays short (how long a
    request takes after many is measured by bench/bench_kubesim.py)."""
    kube_emulator.emulator.request_log_size = 50
    kube_emulator.emulator["list v1/nodes"] << 503
    for _ in range(200):
        v1.read_namespace("default")
    assert [request.id for request in kube_emulator.emulator] == list(range(151, 201))  # kmock's view of the log


def test_direct_api_is_thread_safe():
    server = EmulatorServer()
    url = server.start()
    try:
        server.emulator.create("nodes", _node("direct"))
        with kube_api_client(url) as api:
            assert [n.metadata.name for n in client.CoreV1Api(api).list_node().items] == ["direct"]
        assert server.emulator.get("nodes", "direct")["metadata"]["resourceVersion"]
        assert [n["metadata"]["name"] for n in server.emulator.list("nodes", label_selector="!x")] == ["direct"]
    finally:
        server.stop()
    assert server.loop is None


def test_command_line_serves_the_demo_fleet():
    repo = pathlib.Path(__file__).resolve().parents[2]
    proc = subprocess.Popen(
        [sys.executable, "-m", "kubesim", "--port", "0", "--fleet", "demo"],
        cwd=repo,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:")
        with kube_api_client(url) as api:
            assert len(client.CoreV1Api(api).list_node().items) == 29
    finally:
        proc.terminate()
        assert proc.wait(timeout=PATIENCE) == 0
