"""`python -m kubesim --state FILE`: a cluster killed mid-run and started again keeps its pods and finishes them."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

from kubernetes import client

from tests.polling import PATIENCE

from .conftest import kube_api_client, wait_until

POD = {
    "metadata": {
        "name": "survivor",
        "labels": {"app": "x"},
        "annotations": {"kubesim/run-seconds": "3", "kubesim/start-seconds": "0.2"},
    },
    "spec": {
        "containers": [
            {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}
        ]
    },
}


def start(state: Path) -> tuple[subprocess.Popen, str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "kubesim", "--port", "0", "--fleet", "demo", "--kubelet", "--state", str(state)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    return process, process.stdout.readline().strip()


def phase(url: str) -> str:
    with kube_api_client(url) as api:
        return client.CoreV1Api(api).read_namespaced_pod("survivor", "default").status.phase


def test_killed_cluster_keeps_its_pods_and_finishes_them(tmp_path):
    state = tmp_path / "kubesim.json"
    first, url = start(state)
    try:
        assert url.startswith("http://127.0.0.1:")
        with kube_api_client(url) as api:
            client.CoreV1Api(api).create_namespaced_pod("default", POD)
        wait_until(lambda: phase(url) == "Running", timeout=PATIENCE, interval=0.05)
        saved = json.loads(state.read_text())
        assert any(
            p["metadata"]["name"] == "survivor" and p["status"]["phase"] == "Running" for p in saved["objects"]["/pods"]
        )
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait(10)
    second, url = start(state)
    try:
        assert "restored from" in second.stderr.readline()
        with kube_api_client(url) as api:
            nodes = client.CoreV1Api(api).list_node().items
            assert len(nodes) == 29  # the fleet comes from the file, once
            pod = client.CoreV1Api(api).read_namespaced_pod("survivor", "default")
            assert pod.status.phase in ("Running", "Succeeded") and pod.spec.node_name
        wait_until(lambda: phase(url) == "Succeeded", timeout=PATIENCE, interval=0.05)
    finally:
        second.terminate()
        second.wait(10)
    assert second.returncode == 0


def test_unreadable_state_file_is_refused_with_its_name(tmp_path):
    state = tmp_path / "kubesim.json"
    state.write_text("{not json")
    process = subprocess.run(
        [sys.executable, "-m", "kubesim", "--port", "0", "--state", str(state)],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert process.returncode == 2
    assert f"cannot load the state file {state}" in process.stderr and "Traceback" not in process.stderr
