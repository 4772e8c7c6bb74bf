"""Container logs: the adapter (`clusters.kube.logs`) over HTTP against kubesim, the service (`workflows.logs`)
with its authorization and notices, the REST API (`/api/workflow/{id}/logs`, `/task/{t}/logs`), and the
exit reason and canceller the lifecycle records."""

from __future__ import annotations

import pytest

from clusters.kube.connection import ConnectionSettings, connect
from clusters.kube.errors import KubeError
from clusters.kube.logs import read_pod_log, stamp_key
from clusters.models import Backend
from kubesim import podlogs
from tests.factories import UserFactory
from tests.polling import wait_until
from tests.workflows.conftest import NAMESPACE, api, pod_of, settle_until, waiting
from workflows import logs
from workflows.errors import WorkflowNotFound
from workflows.lifecycle.cancel import cancel
from workflows.lifecycle.create import create_pods
from workflows.lifecycle.observe import observe

pytestmark = pytest.mark.django_db


@pytest.fixture
def eve(db):
    """No role at all: not even osmo-user's `workflow:Read` on every pool."""
    return UserFactory(username="eve")


def _running(submitted, kube_server, **kwargs):
    """Running tasks whose logs have 3 lines or more: a command the simulated cluster does not run prints a line
    naming it, then a `[simulated] … running, N s` line each second."""
    kwargs.setdefault("command", ("python", "serve.py"))
    workflow = submitted(platform="forever", **kwargs)
    create_pods(workflow.pk)
    for task in workflow.tasks.all():
        wait_until(lambda t=task: len(_log(kube_server, t.pod_name)) >= 3)
    return workflow


def _log(kube_server, pod_name: str) -> list[str]:
    pod = kube_server.emulator.get("pods", pod_name, NAMESPACE) or {}
    if (pod.get("status") or {}).get("phase") != "Running":
        return []
    return podlogs.log_text(pod, podlogs.LogQuery()).splitlines()


# ------------------------------------------------------------------------------------------ the adapter


def test_read_pod_log_tails_and_follows_with_a_cursor(submitted, kube_server, backend):
    task = _running(submitted, kube_server).tasks.get()
    with connect(backend) as kube:
        first = read_pod_log(kube, NAMESPACE, task.pod_name, "t0", tail_lines=2)
        assert len(first) == 2 and all(line.at.endswith("Z") for line in first)
        everything = read_pod_log(kube, NAMESPACE, task.pod_name, "t0")
        assert everything[0].text.startswith("[simulated] python serve.py: not run here")
        # a follower asks for what came after its last line: never a line it has, and the next step in time
        last = stamp_key(everything[-1].at)
        newer = wait_until(lambda: read_pod_log(kube, NAMESPACE, task.pod_name, "t0", since=everything[-1].at))
        assert newer[0].text.startswith("[simulated] ") and all(stamp_key(line.at) > last for line in newer)


def test_read_pod_log_errors_say_what_the_api_server_said(kube_server):
    with connect(ConnectionSettings(name="sim", connection="url", api_url=kube_server.url)) as kube:
        with pytest.raises(KubeError) as gone:
            read_pod_log(kube, "default", "ghost", "main")
        assert gone.value.k8s_status == 404 and 'pods "ghost" not found' in gone.value.reason
    with (
        connect(
            ConnectionSettings(name="off", connection="url", api_url="http://127.0.0.1:9"), timeout=(0.5, 0.5)
        ) as kube,
        pytest.raises(KubeError) as unreachable,
    ):
        read_pod_log(kube, "default", "p", "main")
    assert unreachable.value.k8s_status == 0 and unreachable.value.transient


def test_stamp_key_orders_rfc3339nano_with_trimmed_zeros():
    assert stamp_key("2026-11-26T10:00:01.5Z") > stamp_key("2026-11-26T10:00:01.12Z")
    assert stamp_key("2026-11-26T10:00:01Z") < stamp_key("2026-11-26T10:00:01.000000001Z")


# ------------------------------------------------------------------------------------------ the service


def test_the_submitter_and_pool_readers_see_the_log_others_get_a_404(submitted, kube_server, alice, eve, carol):
    workflow = _running(submitted, kube_server)
    log = logs.task_log(workflow.workflow_id, "t0", alice, tail=2)
    assert log.state == logs.LIVE and log.notice == "" and len(log.lines) == 2 and not log.finished
    assert log.pod == workflow.tasks.get().pod_name and log.container == "t0"
    assert logs.task_log(workflow.workflow_id, "t0", carol).lines  # workflow:* on pool/batch*
    with pytest.raises(WorkflowNotFound):
        logs.task_log(workflow.workflow_id, "t0", eve)
    with pytest.raises(logs.TaskNotFound) as unknown:
        logs.task_log(workflow.workflow_id, "nope", alice)
    assert unknown.value.status == 404 and "its tasks: t0" in unknown.value.reason


def test_notices_instead_of_errors(submitted, kube_server, backend, alice):
    workflow = submitted()
    assert logs.task_log(workflow.workflow_id, "t0", alice).notice == "No log yet: the task's pod has not been created."
    task = waiting(workflow.tasks.get())  # recorded as created, but the cluster has no such pod
    gone = logs.task_log(workflow.workflow_id, "t0", alice)
    assert gone.state == logs.GONE and f"Pod {NAMESPACE}/{task.pod_name} no longer exists in cluster sim" in gone.notice
    Backend.objects.filter(pk=backend.pk).update(api_url="http://127.0.0.1:9")
    unreachable = logs.task_log(workflow.workflow_id, "t0", alice)
    assert unreachable.state == logs.UNREACHABLE and unreachable.notice.startswith("Cluster sim did not answer")


@pytest.mark.parametrize(
    ("parse", "raw", "field"),
    [
        (logs.parse_tail, "0", "tail"),
        (logs.parse_tail, "ten", "tail"),
        (logs.parse_tail, "5001", "tail"),
        (logs.parse_since, "yesterday", "since"),
    ],
)
def test_bad_parameters_name_the_field(parse, raw, field):
    with pytest.raises(logs.DomainError) as refused:
        parse(raw)
    assert (refused.value.field, refused.value.value, refused.value.status) == (field, raw, 400)


# ------------------------------------------------------------------------------------------ the REST API


def test_api_task_log_and_osmo_logs_path(submitted, kube_server, alice, eve):
    workflow = _running(submitted, kube_server, tasks=2)
    base = f"/api/workflow/{workflow.workflow_id}"
    body = api(alice).get(f"{base}/task/t1/logs?tail=3").json()
    assert body["task"] == "t1" and body["state"] == "live" and len(body["lines"]) == 3
    assert body["cursor"] == body["lines"][-1]["at"]
    for name in ("t0", "t1"):  # both have printed 4 lines (one naming the command, then one a second)
        wait_until(lambda n=name: len(api(alice).get(f"{base}/task/{n}/logs").json()["lines"]) >= 4, interval=0.2)
    text = api(alice).get(f"{base}/logs?last_n_lines=4")
    assert text["Content-Type"].startswith("text/plain")
    lines = text.content.decode().splitlines()
    assert len(lines) == 8 and lines[0].startswith("[t0] ") and lines[-1].startswith("[t1] ")
    # what OSMO's `osmo workflow logs wf --task t1 --retry-id 0 -n 1` sends (NVIDIA/OSMO src/cli/workflow.py)
    only = api(alice).get(f"{base}/logs?last_n_lines=1&task_name=t1&retry_id=0").content.decode().splitlines()
    assert len(only) == 1 and only[0].startswith("[t1] ")
    replaced = api(alice).get(f"{base}/logs?task_name=t1&retry_id=2").content.decode()
    assert replaced == "[t1] (retry 2 is not the current attempt (0): its pod was replaced)\n"
    assert api(alice).get(f"{base}/logs?retry_id=x").json()["field"] == "retry_id"
    hidden = api(eve).get(f"{base}/task/t1/logs")
    assert hidden.status_code == 404, hidden.content
    assert hidden.json()["code"] == "workflow_not_found"
    refused = api(alice).get(f"{base}/task/t1/logs?tail=-3")
    assert refused.status_code == 400 and refused.json()["field"] == "tail"


# ------------------------------------------------------------------------------------------ what ended a task


def test_exit_reason_and_message_are_recorded(submitted, alice, run_on_commit):
    task = waiting(submitted().tasks.get())
    pod = pod_of(task, "Failed", exit_code=137)
    pod["status"]["containerStatuses"][0]["state"]["terminated"].update(reason="OOMKilled", message="out of memory")
    assert observe(task, pod)
    task.refresh_from_db()
    assert (task.exit_code, task.exit_reason, task.exit_message) == (137, "OOMKilled", "out of memory")
    shown = api(alice).get(f"/api/workflow/{task.workflow.workflow_id}").json()["tasks"][0]
    assert (shown["exit_code"], shown["exit_reason"], shown["exit_message"]) == (137, "OOMKilled", "out of memory")


def test_the_canceller_is_recorded(submitted, alice, carol, run_on_commit):
    workflow = submitted()
    assert run_on_commit(cancel, workflow.workflow_id, carol).cancelled_by == "carol"
    assert api(alice).get(f"/api/workflow/{workflow.workflow_id}").json()["cancelled_by"] == "carol"
    other = submitted()
    assert run_on_commit(cancel, other.workflow_id).cancelled_by == "the command line"


def test_a_finished_pod_keeps_its_log_until_deleted(submitted, kube_server, backend, alice, run_on_commit):
    workflow = submitted(platform="exit3")
    run_on_commit(create_pods, workflow.pk)
    settle_until(backend, workflow, {"FAILED"}, run_on_commit)
    log = logs.task_log(workflow.workflow_id, "t0", alice)
    assert log.finished and [line.text for line in log.lines] == ["hi"]  # what `echo hi` printed
