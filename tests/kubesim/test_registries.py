"""Image pull secrets in the simulated cluster (kubesim.registries), as an API server and a kubelet treat them:
dockerconfigjson Secrets validated over HTTP (the official client), private images pulled only with a matching
pull secret (ErrImagePull, then ImagePullBackOff, then running once the Secret exists), NGC's public catalog
pulled anonymously."""

from __future__ import annotations

import base64
import json

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from kubesim import EmulatorServer
from tests.kubesim.conftest import kube_api_client
from tests.polling import wait_until


@pytest.fixture
def cluster():
    with (
        EmulatorServer(fleet="demo", kubelet={"start_delay": 0.02, "run_seconds": 0.05}) as server,
        kube_api_client(server.url) as api,
    ):
        yield server, client.CoreV1Api(api)
        assert not server.emulator.internal_errors, list(server.emulator.internal_errors)


def pull_secret(name: str, auths: dict | None = None, raw: str | None = None) -> dict:
    config = raw if raw is not None else base64.b64encode(json.dumps({"auths": auths or {}}).encode()).decode()
    return {
        "metadata": {"name": name},
        "type": "kubernetes.io/dockerconfigjson",
        "data": {".dockerconfigjson": config},
    }


def pod(name: str, image: str, secret: str = "") -> dict:
    spec: dict = {"containers": [{"name": "main", "image": image, "resources": {"requests": {"cpu": "10m"}}}]}
    if secret:
        spec["imagePullSecrets"] = [{"name": secret}]
    return {"metadata": {"name": name}, "spec": spec}


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"metadata": {"name": "s"}, "type": "kubernetes.io/dockerconfigjson", "data": {}}, "Required value"),
        (pull_secret("s", raw="not base64!"), "not base64 of JSON"),
        (pull_secret("s", raw=base64.b64encode(b"[1]").decode()), "not a JSON object"),
        ({"metadata": {"name": "s"}, "data": {"a/b": "eA=="}}, "a valid config key"),
    ],
)
def test_an_invalid_secret_is_refused_as_the_api_server_does(cluster, body, message):
    _, v1 = cluster
    with pytest.raises(ApiException) as refused:
        v1.create_namespaced_secret("default", body)
    assert refused.value.status == 422 and message in json.loads(refused.value.body)["message"]


def waiting(v1, name: str) -> str:
    statuses = v1.read_namespaced_pod(name, "default").status.container_statuses or []
    state = statuses[0].state if statuses else None
    return state.waiting.reason if state and state.waiting else ""


def test_a_private_image_waits_without_a_pull_secret_and_starts_once_it_exists(cluster):
    _, v1 = cluster
    v1.create_namespaced_pod("default", pod("private", "nvcr.io/acme/trainer:1", secret="ngc"))
    wait_until(lambda: waiting(v1, "private") == "ImagePullBackOff", timeout=10, interval=0.02)
    assert v1.read_namespaced_pod("private", "default").status.phase == "Pending"
    v1.create_namespaced_secret("default", pull_secret("ngc", {"nvcr.io": {"auth": "eDp5"}}))
    wait_until(lambda: v1.read_namespaced_pod("private", "default").status.phase == "Succeeded", timeout=10)


def test_a_pull_secret_for_another_registry_does_not_help(cluster):
    _, v1 = cluster
    v1.create_namespaced_secret("default", pull_secret("other", {"ghcr.io": {"auth": "eDp5"}}))
    v1.create_namespaced_pod("default", pod("wrong", "nvcr.io/acme/trainer:1", secret="other"))
    wait_until(lambda: waiting(v1, "wrong") in ("ErrImagePull", "ImagePullBackOff"), timeout=10)
    message = v1.read_namespaced_pod("wrong", "default").status.container_statuses[0].state.waiting.message
    assert "unauthorized" in message and "nvcr.io" in message


def test_public_images_need_no_secret(cluster):
    _, v1 = cluster
    v1.create_namespaced_pod("default", pod("public", "nvcr.io/nvidia/pytorch:24.01-py3"))
    v1.create_namespaced_pod("default", pod("hub", "busybox:1.36"))
    for name in ("public", "hub"):
        wait_until(lambda name=name: v1.read_namespaced_pod(name, "default").status.phase == "Succeeded", timeout=10)
