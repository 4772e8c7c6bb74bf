"""Several simulated clusters behind one port (``EmulatorServer(clusters=...)``, what ``--fleet demo-clusters``
serves): each answers the official client under ``/clusters/<name>`` with its own objects, watches included."""

from __future__ import annotations

import pytest
from kubernetes import client, watch

from kubesim import EmulatorServer
from kubesim.fleet import GPU_PRODUCT_LABEL, demo_cluster_fleet

from .conftest import kube_api_client


@pytest.fixture
def two_clusters():
    clusters = {name: EmulatorServer(fleet=demo_cluster_fleet(name)) for name in ("gpu-cluster-01", "default")}
    with EmulatorServer(host="127.0.0.1", port=0, clusters=clusters) as server:
        yield server
        for cluster in clusters.values():
            assert not cluster.emulator.internal_errors, list(cluster.emulator.internal_errors)


def names(v1: client.CoreV1Api, **query) -> list[str]:
    return sorted(node.metadata.name for node in v1.list_node(**query).items)


def test_each_cluster_answers_under_its_path_with_its_own_nodes(two_clusters):
    gpu, default = two_clusters.clusters["gpu-cluster-01"], two_clusters.clusters["default"]
    assert gpu.url == f"{two_clusters.url}/clusters/gpu-cluster-01"
    with kube_api_client(gpu.url) as gpu_api, kube_api_client(default.url) as default_api:
        gpu_v1, default_v1 = client.CoreV1Api(gpu_api), client.CoreV1Api(default_api)
        assert names(default_v1) == ["a100-node-3", "l40s-node-4"]
        assert len(names(gpu_v1)) == 9 and "l40s-node-4" not in names(gpu_v1)
        a100 = f"{GPU_PRODUCT_LABEL}=NVIDIA-A100-SXM4-80GB"  # the query string reaches the cluster unchanged
        assert names(gpu_v1, label_selector=a100) == ["a100-node-0", "a100-node-1", "a100-node-2"]
        assert names(default_v1, label_selector=a100) == ["a100-node-3"]
        default_v1.create_namespace({"metadata": {"name": "osmo-workflows"}})
        default_v1.create_namespaced_config_map("osmo-workflows", {"metadata": {"name": "only-here"}})
        assert [m.metadata.name for m in default_v1.list_namespaced_config_map("osmo-workflows").items] == ["only-here"]
        assert "osmo-workflows" not in [n.metadata.name for n in gpu_v1.list_namespace().items]
        assert client.VersionApi(gpu_api).get_code().git_version  # discovery, outside /api, is routed too


def test_a_watch_through_a_cluster_path_sees_only_that_cluster(two_clusters):
    gpu, default = two_clusters.clusters["gpu-cluster-01"], two_clusters.clusters["default"]
    with kube_api_client(default.url) as api:
        v1 = client.CoreV1Api(api)
        version = v1.list_node().metadata.resource_version
        gpu.emulator.create("nodes", {"metadata": {"name": "elsewhere"}})
        default.emulator.create("nodes", {"metadata": {"name": "here"}})
        stream = watch.Watch().stream(v1.list_node, resource_version=version, timeout_seconds=2)
        seen = [(event["type"], event["object"].metadata.name) for event in stream]
    assert seen == [("ADDED", "here")]


@pytest.mark.parametrize("base", ["", "/clusters/nowhere", "/clusters"])
def test_a_path_outside_the_clusters_is_not_found_and_names_them(two_clusters, base):
    with kube_api_client(two_clusters.url + base) as api, pytest.raises(client.ApiException) as raised:
        client.CoreV1Api(api).list_node()
    assert raised.value.status == 404
    assert "/clusters/gpu-cluster-01, /clusters/default" in str(raised.value.body)


def test_a_cluster_of_a_server_is_started_by_that_server():
    cluster = EmulatorServer()
    EmulatorServer(clusters={"one": cluster})
    with pytest.raises(RuntimeError, match="served by its server"):
        cluster.start()


def test_an_api_outage_answers_503_ends_watches_and_keeps_the_objects(two_clusters):
    """`down()`: the cluster's API server is gone (503 to everything, its open watches end); the other cluster
    still answers, and after `up()` the objects are those it had, with what changed meanwhile (etcd kept them)."""
    gpu, default = two_clusters.clusters["gpu-cluster-01"], two_clusters.clusters["default"]
    with kube_api_client(default.url) as api, kube_api_client(gpu.url) as gpu_api:
        v1 = client.CoreV1Api(api)
        version = v1.list_node().metadata.resource_version
        default.down()
        with pytest.raises(client.ApiException) as raised:
            v1.list_node()
        assert raised.value.status == 503
        stream = watch.Watch().stream(v1.list_node, resource_version=version, timeout_seconds=2)
        with pytest.raises(client.ApiException) as raised:
            list(stream)
        assert raised.value.status == 503 and default.refused_while_down == 2
        assert len(names(client.CoreV1Api(gpu_api))) == 9
        default.emulator.create("nodes", {"metadata": {"name": "joined-meanwhile"}})  # the cluster goes on
        default.up()
        assert names(v1) == ["a100-node-3", "joined-meanwhile", "l40s-node-4"]
