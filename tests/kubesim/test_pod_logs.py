"""The simulated cluster's pod log (`/api/v1/namespaces/{ns}/pods/{name}/log`), through the official client."""

from __future__ import annotations

import time

import pytest
from kubernetes import client

from kubesim import EmulatorServer

from .conftest import kube_api_client, wait_until

T0 = "2026-11-26T10:00:00Z"
T0_EPOCH = 1795687200  # T0 as seconds since the epoch


def _pod(name: str, containers=("main",), annotations=None) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "annotations": annotations or {}},
        "spec": {"nodeName": "h100-node-0", "containers": [{"name": c, "image": "busybox"} for c in containers]},
    }


def _status(state: dict, container: str = "main") -> dict:
    phase = "Running" if "running" in state else ("Succeeded" if "terminated" in state else "Pending")
    return {"phase": phase, "containerStatuses": [{"name": container, "state": state}]}


def _finished_pod(emulator, name: str, seconds: int, code: int = 0, reason: str = "Completed") -> None:
    emulator.create("pods", _pod(name), "default")
    finished = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(T0_EPOCH + seconds))
    state = {"terminated": {"exitCode": code, "reason": reason, "startedAt": T0, "finishedAt": finished}}
    emulator.set_status("pods", name, _status(state), "default")


def test_a_finished_container_printed_one_line_per_second_and_its_exit(kube_emulator, v1):
    _finished_pod(kube_emulator.emulator, "train", 10, code=137, reason="OOMKilled")
    lines = v1.read_namespaced_pod_log("train", "default").splitlines()
    assert len(lines) == 3 + 10 + 1  # start-up, one per second, the exit
    assert lines[0] == "starting on node h100-node-0"
    assert lines[3].startswith("step 1 loss=") and lines[12].startswith("step 10 loss=")
    assert lines[-1] == "exiting with code 137 (OOMKilled)"
    assert v1.read_namespaced_pod_log("train", "default").splitlines() == lines  # deterministic


def test_tail_since_and_timestamps(kube_emulator, v1):
    _finished_pod(kube_emulator.emulator, "train", 10)
    tail = v1.read_namespaced_pod_log("train", "default", tail_lines=2, timestamps=True).splitlines()
    assert tail[0] == "2026-11-26T10:00:10.000000000Z step 10 " + tail[0].split(" step 10 ")[1]
    assert tail[1].endswith(" exiting with code 0 (Completed)")
    assert v1.read_namespaced_pod_log("train", "default", tail_lines=0) == ""
    # sinceTime (the client has no argument for it: the raw query, as the portal's adapter may send it)
    api = v1.api_client
    response = api.call_api(
        *api.param_serialize(
            "GET",
            "/api/v1/namespaces/default/pods/train/log",
            query_params=[("sinceTime", "2026-11-26T10:00:08Z")],
            auth_settings=[],
        )
    )
    response.read()
    assert [line.split(" ")[0] for line in response.data.decode().splitlines()] == ["step", "step", "step", "exiting"]


def test_a_running_container_logs_up_to_now_and_since_seconds(kube_emulator, v1):
    kube_emulator.emulator.create("pods", _pod("serve"), "default")
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 20))
    kube_emulator.emulator.set_status("pods", "serve", _status({"running": {"startedAt": started}}), "default")
    lines = v1.read_namespaced_pod_log("serve", "default").splitlines()
    assert 3 + 19 <= len(lines) <= 3 + 21 and lines[-1].startswith("step ")
    recent = v1.read_namespaced_pod_log("serve", "default", since_seconds=5).splitlines()
    assert 4 <= len(recent) <= 6 and all(line.startswith("step ") for line in recent)


def test_errors_are_the_api_servers(kube_emulator, v1):
    emulator = kube_emulator.emulator
    emulator.create("pods", _pod("pair", containers=("main", "sidecar")), "default")
    emulator.create("pods", _pod("waiting"), "default")
    emulator.set_status("pods", "waiting", _status({"waiting": {"reason": "ErrImagePull"}}), "default")
    cases = [
        ("ghost", None, {}, 404, 'pods \\"ghost\\" not found'),
        ("pair", None, {}, 400, "a container name must be specified for pod pair, choose one of: [main sidecar]"),
        ("pair", "other", {}, 400, "container other is not valid for pod pair"),
        ("waiting", None, {}, 400, 'container \\"main\\" in pod \\"waiting\\" is waiting to start: ErrImagePull'),
        ("waiting", None, {"tail_lines": -1}, 400, 'tailLines: Invalid value: \\"-1\\"'),
    ]
    for name, container, extra, status, message in cases:
        with pytest.raises(client.ApiException) as raised:
            v1.read_namespaced_pod_log(name, "default", container=container, **extra)
        assert raised.value.status == status
        assert message in raised.value.body


def test_follow_streams_new_lines_until_the_container_ends():
    with (
        EmulatorServer(fleet="demo", kubelet={"start_delay": 0, "run_seconds": 2.5}) as server,
        kube_api_client(server.url) as api,
    ):
        v1 = client.CoreV1Api(api)
        pod = _pod("train", annotations={"kubesim/exit-code": "137", "kubesim/exit-reason": "OOMKilled"})
        del pod["spec"]["nodeName"]  # the simulated scheduler binds it
        v1.create_namespaced_pod("default", pod)
        wait_until(lambda: v1.read_namespaced_pod("train", "default").status.phase == "Running")
        stream = v1.read_namespaced_pod_log("train", "default", follow=True, _preload_content=False)
        lines = [line.decode() for line in stream.stream() for line in line.splitlines() if line]
        assert lines[0].startswith("starting on node ")
        assert [line.split(" ")[0] for line in lines[3:5]] == ["step", "step"]  # printed while it was followed
        assert lines[-1] == "exiting with code 137 (OOMKilled)"
