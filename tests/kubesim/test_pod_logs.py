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


def test_a_command_not_run_here_is_named_with_a_marker_each_second_and_its_exit(kube_emulator, v1):
    _finished_pod(kube_emulator.emulator, "train", 10, code=137, reason="OOMKilled")
    lines = v1.read_namespaced_pod_log("train", "default").splitlines()
    assert len(lines) == 1 + 10 + 1  # what it is, one per second, the exit
    assert lines[0] == "[simulated] busybox: the image's own command, not run here"
    assert lines[1] == "[simulated] busybox: running, 1 s" and lines[10] == "[simulated] busybox: running, 10 s"
    assert lines[-1] == "[simulated] exited with code 137 (OOMKilled)"
    assert not any("loss=" in line or "gpu_util" in line for line in lines)  # never made-up metrics
    assert v1.read_namespaced_pod_log("train", "default").splitlines() == lines  # deterministic


def test_tail_since_and_timestamps(kube_emulator, v1):
    _finished_pod(kube_emulator.emulator, "train", 10)
    tail = v1.read_namespaced_pod_log("train", "default", tail_lines=2, timestamps=True).splitlines()
    assert tail[0] == "2026-11-26T10:00:10.000000000Z [simulated] busybox: running, 10 s"
    assert tail[1].endswith(" [simulated] exited with code 0 (Completed)")
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
    assert [line.split(" ")[-2:] for line in response.data.decode().splitlines()] == [
        ["8", "s"],
        ["9", "s"],
        ["10", "s"],
        ["0", "(Completed)"],
    ]


def test_a_running_container_logs_up_to_now_and_since_seconds(kube_emulator, v1):
    kube_emulator.emulator.create("pods", _pod("serve"), "default")
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 20))
    kube_emulator.emulator.set_status("pods", "serve", _status({"running": {"startedAt": started}}), "default")
    lines = v1.read_namespaced_pod_log("serve", "default").splitlines()
    assert 1 + 19 <= len(lines) <= 1 + 21 and lines[-1].startswith("[simulated] busybox: running, ")
    recent = v1.read_namespaced_pod_log("serve", "default", since_seconds=5).splitlines()
    assert 4 <= len(recent) <= 6 and all(line.startswith("[simulated] busybox: running, ") for line in recent)


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
        assert lines[0] == "[simulated] busybox: the image's own command, not run here"
        assert lines[1:3] == ["[simulated] busybox: running, 1 s", "[simulated] busybox: running, 2 s"]  # followed
        assert lines[-1] == "[simulated] exited with code 137 (OOMKilled)"


def _ran(name: str, container: dict, run_seconds: float = 0.2, **spec) -> tuple[str, list[str]]:
    """Run one pod with `container` on a simulated cluster with a kubelet: its phase and its log."""
    with (
        EmulatorServer(fleet="demo", kubelet={"start_delay": 0, "run_seconds": run_seconds}) as server,
        kube_api_client(server.url) as api,
    ):
        v1 = client.CoreV1Api(api)
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name},
            "spec": {"containers": [{"name": "main", "image": "busybox:1.36", **container}], **spec},
        }
        v1.create_namespaced_pod("default", pod)
        wait_until(lambda: v1.read_namespaced_pod(name, "default").status.phase in ("Succeeded", "Failed"))
        return v1.read_namespaced_pod(name, "default").status.phase, v1.read_namespaced_pod_log(
            name, "default"
        ).splitlines()


def test_echo_prints_its_text_as_the_shell_expands_it():
    """The docs' hello example: `sh -c "echo hello from {{workflow_id}}"` (rendered) prints that line, only."""
    container = {
        "command": ["sh", "-c"],
        "args": ['echo hello from $(WORKFLOW_ID) on "$HOSTNAME"; printf "%s=%d\\n" tasks 2'],
        "env": [{"name": "WORKFLOW_ID", "value": "hello-1"}],
    }
    assert _ran("hello-1-say-hello", container) == ("Succeeded", ["hello from hello-1 on hello-1-say-hello", "tasks=2"])


def test_exit_codes_follow_the_command():
    assert _ran("exits", {"command": ["sh", "-c", "echo before; exit 3; echo after"]}) == ("Failed", ["before"])
    assert _ran("fails", {"command": ["sh", "-c", "false && echo never"]}) == ("Failed", [])
    assert _ran("goes-on", {"command": ["sh", "-c", "false; echo next"]}) == ("Succeeded", ["next"])


def test_known_commands_print_what_they_would():
    assert _ran("host-1", {"command": ["hostname"]}) == ("Succeeded", ["host-1"])
    phase, lines = _ran("env-1", {"command": ["env"], "env": [{"name": "MODEL", "value": "resnet"}]})
    assert "MODEL=resnet" in lines and "HOSTNAME=env-1" in lines
    gpu = {"resources": {"limits": {"nvidia.com/gpu": "1"}}}
    phase, lines = _ran("smi-1", {"command": ["nvidia-smi"], **gpu}, tolerations=[{"operator": "Exists"}])
    assert (
        phase == "Succeeded" and "NVIDIA-SMI" in lines[1] and len([line for line in lines if "00000000:" in line]) == 1
    )
    assert _ran("smi-0", {"command": ["nvidia-smi"]}) == ("Failed", ["No devices were found"])


def test_anything_else_prints_its_command_line_and_a_marker():
    phase, lines = _ran("train-1", {"command": ["python", "train.py", "--epochs", "3"]}, run_seconds=1.5)
    assert phase == "Succeeded"
    assert lines[0] == (
        "[simulated] python train.py --epochs 3: not run here "
        "(the simulated cluster runs echo, printf, sleep, hostname, env, cat, nvidia-smi)"
    )
    assert lines[1] == "[simulated] python train.py --epochs 3: running, 1 s"
    assert lines[-1] == "[simulated] exited with code 0 (Completed)"
