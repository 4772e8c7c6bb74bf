"""Spot interruptions (`workflows.lifecycle.interruption`, docs/workflows.md "Spot interruptions").

Each test does to the simulated cluster, through the Kubernetes API, what the cloud and the kubelet do when a
spot instance is taken back: (a) taint and annotate the node, (b) fail every pod on it with the DisruptionTarget
condition (the status subresource), (c) delete the node. The portal follows through its reconciler (what the
beat task and the watcher's listing run), with Celery eager, so pods are really created and deleted.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml

from clusters.inventory import sync_backend
from clusters.kube.connection import connect
from clusters.machinepools.spec import SPOT_INTERRUPTION_TAINT
from configs import store
from tests.polling import drain_until, wait_until
from tests.workflows.conftest import CLI, NAMESPACE, api, settle_until, spec
from workflows import reconcile
from workflows.lifecycle import observe
from workflows.lifecycle.create import create_pods
from workflows.lifecycle.exits import exit_action
from workflows.lifecycle.interruption import INTERRUPTED_EXIT_CODE, SPOT_REASON
from workflows.models import Task, TaskEvent, TaskStatus, Workflow, WorkflowStatus

STOPPED_AT = "2026-11-26T10:00:00Z"
SPOT_ANNOTATION = "pool-portal.dev/spot-interruption-at"


@pytest.fixture
def spot_pool(pool):
    """Platform `spotty` of pool batch: runs for a few seconds, so a test can interrupt it while it runs and
    its next attempt still completes on its own."""
    store.apply("POD_TEMPLATE", "spotty", {"metadata": {"annotations": {"kubesim/run-seconds": "4"}}}, CLI)
    config = store.show("POOL", "batch")
    config["platforms"]["spotty"] = {"override_pod_template": ["cpu", "spotty"]}
    store.apply("POOL", "batch", config, CLI)
    return pool


@pytest.fixture
def kube(backend):
    return connect(backend)


def running(backend, workflow, run_on_commit) -> Task:
    settle_until(backend, workflow, {WorkflowStatus.RUNNING}, run_on_commit)
    return workflow.tasks.get()


def interrupt(kube, node: str) -> None:
    """What the cloud does to a reclaimed spot node, step by step, through the Kubernetes API."""
    taint(kube, node, annotate=True)
    on_node = kube.json("listing", kube.core.list_pod_for_all_namespaces, field_selector=f"spec.nodeName={node}")
    for pod in on_node["items"]:
        if pod["status"].get("phase") in ("Succeeded", "Failed"):
            continue
        name, namespace = pod["metadata"]["name"], pod["metadata"]["namespace"]
        kube.json("stopping", kube.core.patch_namespaced_pod_status, name, namespace, _stopped(pod))
    kube.json("deleting", kube.core.delete_node, node)


def taint(kube, node: str, *, annotate: bool = False) -> None:
    body: dict = {"spec": {"taints": [{"key": SPOT_INTERRUPTION_TAINT, "value": "true", "effect": "NoSchedule"}]}}
    if annotate:
        body["metadata"] = {"annotations": {SPOT_ANNOTATION: STOPPED_AT}}
    kube.json("tainting", kube.core.patch_node, node, body)


def _stopped(raw: dict, reason: str = "TerminationByKubelet") -> dict:
    status = raw.get("status") or {}
    conditions = [c for c in status.get("conditions") or () if c.get("type") != "DisruptionTarget"]
    conditions.append(
        {
            "type": "DisruptionTarget",
            "status": "True",
            "reason": reason,
            "message": "Pod was terminated in response to imminent node shutdown.",
            "lastTransitionTime": STOPPED_AT,
        }
    )
    containers = []
    for container in status.get("containerStatuses") or ():
        started = ((container.get("state") or {}).get("running") or {}).get("startedAt") or STOPPED_AT
        terminated = {"exitCode": 143, "reason": "Error", "startedAt": started, "finishedAt": STOPPED_AT}
        containers.append({**container, "ready": False, "state": {"terminated": terminated}})
    return {
        "status": {
            "phase": "Failed",
            "reason": "Terminated",
            "message": "Pod was terminated in response to imminent node shutdown (spot interruption).",
            "conditions": conditions,
            "containerStatuses": containers,
        }
    }


def our_pods(kube) -> list[dict]:
    selector = "pool-portal/instance=test-portal"
    return kube.json("listing", kube.core.list_namespaced_pod, NAMESPACE, label_selector=selector)["items"]


def test_exit_action_of_an_interruption_answers_to_3001_then_the_container_code():
    assert exit_action(INTERRUPTED_EXIT_CODE, {}, {}, also=(143,)) == ("FAIL", "the exit status")
    assert exit_action(INTERRUPTED_EXIT_CODE, {"RESCHEDULE": "143"}, {}, also=(143,))[0] == "RESCHEDULE"
    assert exit_action(INTERRUPTED_EXIT_CODE, {}, {"RESCHEDULE": "3001"}, also=(143,)) == (
        "RESCHEDULE",
        "the pool's default_exit_actions",
    )
    # the task's own actions come before the pool's, whichever code they name
    assert exit_action(INTERRUPTED_EXIT_CODE, {"FAIL": "143"}, {"RESCHEDULE": "3001"}, also=(143,))[0] == "FAIL"


def test_reschedule_resubmits_as_a_new_pod_that_completes_on_another_node(
    spot_pool, backend, kube, submitted, run_on_commit
):
    workflow = submitted(spec("spot", platform="spotty", exit_actions={"RESCHEDULE": "143"}))
    run_on_commit(create_pods, workflow.pk)
    task = running(backend, workflow, run_on_commit)
    first_node, first_pod = task.node, task.pod_name

    interrupt(kube, first_node)
    settle_until(backend, workflow, {WorkflowStatus.COMPLETED}, run_on_commit, timeout=20)

    task.refresh_from_db()
    assert (task.status, task.retry_id, task.pod_name) == ("COMPLETED", 1, f"{workflow.workflow_id}-t0-r1")
    assert task.node and task.node != first_node
    assert task.interruptions == [
        {
            "node": first_node,
            "at": datetime(2026, 11, 26, 10, tzinfo=UTC).isoformat(),
            "attempt": 1,
            "pod": first_pod,
            "action": "RESCHEDULE",
            "next_attempt": 2,
        }
    ]
    kinds = list(TaskEvent.objects.filter(task=task).values_list("kind", flat=True))
    assert kinds.count("SPOT_INTERRUPTION") == 1 and kinds.count("RESCHEDULED") == 1 and kinds.count("CREATED") == 2
    message = TaskEvent.objects.get(task=task, kind="RESCHEDULED").message
    said = f"{SPOT_REASON} on node {first_node} at 2026-11-26 10:00:00 UTC"
    assert message.startswith(f"{said}; rescheduled as attempt 2 (exit code 3001, the container's 143; ")
    # one pod per attempt, never two at once: the interrupted one is deleted, the new one is the only one left
    wait_until(lambda: [p["metadata"]["name"] for p in our_pods(kube)] == [task.pod_name], what="the old pod deleted")


def test_without_reschedule_the_task_fails_with_the_reason(spot_pool, backend, kube, submitted, run_on_commit):
    workflow = submitted(spec("spotfail", platform="forever"))
    run_on_commit(create_pods, workflow.pk)
    task = running(backend, workflow, run_on_commit)
    node = task.node

    interrupt(kube, node)
    settle_until(backend, workflow, {WorkflowStatus.FAILED_BACKEND_ERROR}, run_on_commit)

    task.refresh_from_db()
    assert task.status == TaskStatus.FAILED_BACKEND_ERROR and task.retry_id == 0
    assert (task.exit_code, task.exit_reason) == (INTERRUPTED_EXIT_CODE, SPOT_REASON)
    assert task.exit_message.startswith(f"{SPOT_REASON} on node {node} at 2026-11-26 10:00:00 UTC: Terminated")
    assert task.error == (
        f"{SPOT_REASON} on node {node} at 2026-11-26 10:00:00 UTC (exit code 3001, the container's 143; "
        "the exit status: FAIL)"
    )
    assert task.interruptions[0]["action"] == "FAIL" and task.interruptions[0]["next_attempt"] is None
    assert TaskEvent.objects.filter(task=task, kind="RESCHEDULED").count() == 0
    assert len(our_pods(kube)) == 1  # no new attempt


def test_every_task_on_the_node_is_rescheduled_once(spot_pool, backend, kube, submitted, run_on_commit):
    """Two tasks on the interrupted node: each gets its next attempt, one pod each, none twice."""
    workflow = submitted(spec("spotpair", tasks=2, platform="forever", exit_actions={"RESCHEDULE": "3001"}))
    for task in workflow.tasks.all():  # both first attempts on one node
        task.pod["spec"]["nodeSelector"] = {"kubernetes.io/hostname": "cpu-node-0"}
        task.save(update_fields=["pod"])
    run_on_commit(create_pods, workflow.pk)
    wait_until(
        lambda: list(workflow.tasks.values_list("status", "node")) == [("RUNNING", "cpu-node-0")] * 2,
        step=lambda: run_on_commit(reconcile.reconcile_backend, backend.pk),
    )

    interrupt(kube, "cpu-node-0")
    wanted = {f"{workflow.workflow_id}-t0-r1", f"{workflow.workflow_id}-t1-r1"}

    def moved_on() -> bool:
        run_on_commit(reconcile.reconcile_backend, backend.pk)
        return {p["metadata"]["name"] for p in our_pods(kube)} == wanted and all(
            t.status == "RUNNING" for t in workflow.tasks.all()
        )

    wait_until(moved_on, what="both tasks running their second attempt, their first pods deleted")
    for task in workflow.tasks.all():
        assert task.retry_id == 1 and task.node not in ("", "cpu-node-0")
        assert [(i["node"], i["attempt"], i["next_attempt"]) for i in task.interruptions] == [("cpu-node-0", 1, 2)]
        assert TaskEvent.objects.filter(task=task, kind="CREATED").count() == 2
    assert len(our_pods(kube)) == 2


def test_the_pools_default_exit_action_reschedules(spot_pool, backend, kube, submitted, run_on_commit):
    """A spec that says nothing follows its pool's default_exit_actions for 3001."""
    config = store.show("POOL", "batch")
    config["default_exit_actions"] = {"RESCHEDULE": "3001"}
    store.apply("POOL", "batch", config, CLI)
    workflow = submitted(spec("spotpool", platform="forever"))
    run_on_commit(create_pods, workflow.pk)
    node = running(backend, workflow, run_on_commit).node

    interrupt(kube, node)
    wait_until(
        lambda: Task.objects.filter(workflow=workflow).values_list("status", "retry_id").get() == ("RUNNING", 1),
        step=lambda: run_on_commit(reconcile.reconcile_backend, backend.pk),
    )
    message = TaskEvent.objects.get(task__workflow=workflow, kind="RESCHEDULED").message
    assert "(exit code 3001, the container's 143; the pool's default_exit_actions: RESCHEDULE)" in message


def test_with_no_retry_left_a_reschedule_fails_and_says_so(spot_pool, backend, kube, submitted, run_on_commit):
    workflow = submitted(spec("spotlast", platform="forever", exit_actions={"RESCHEDULE": "3001"}))
    task = workflow.tasks.get()  # as if two attempts had been interrupted before (the limit is 2 in tests)
    task.pod_name = task.pod["metadata"]["name"] = f"{workflow.workflow_id}-t0-r2"
    Task.objects.filter(pk=task.pk).update(retry_id=2, pod_name=task.pod_name, pod=task.pod)
    run_on_commit(create_pods, workflow.pk)
    node = running(backend, workflow, run_on_commit).node

    interrupt(kube, node)
    settle_until(backend, workflow, {WorkflowStatus.FAILED_BACKEND_ERROR}, run_on_commit)

    task.refresh_from_db()
    assert (task.exit_reason, task.retry_id) == (SPOT_REASON, 2)
    assert "the task's exitActions: RESCHEDULE, but all 2 retries are used: FAIL" in task.error
    assert task.interruptions[0]["attempt"] == 3 and task.interruptions[0]["action"] == "FAIL"


def test_a_pod_deleted_with_its_node_is_recognized_from_the_inventory(
    spot_pool, backend, kube, submitted, run_on_commit
):
    """The pod vanishes with its node before the portal saw it fail: the inventory still knew the taint."""
    workflow = submitted(spec("spotgone", platform="forever", exit_actions={"RESCHEDULE": "3001"}))
    run_on_commit(create_pods, workflow.pk)
    task = running(backend, workflow, run_on_commit)
    node = task.node
    taint(kube, node)
    sync_backend(backend.pk)  # the inventory reads the taint; the node then goes, its pod with it
    kube.json("deleting", kube.core.delete_namespaced_pod, task.pod_name, NAMESPACE)
    kube.json("deleting", kube.core.delete_node, node)
    wait_until(lambda: not our_pods(kube))

    run_on_commit(reconcile.reconcile_backend, backend.pk)

    task.refresh_from_db()
    assert (task.retry_id, task.interruptions[0]["node"]) == (1, node)
    assert task.status in (TaskStatus.PENDING, TaskStatus.WAITING, TaskStatus.RUNNING)
    assert TaskEvent.objects.filter(task=task, kind="POD_LOST").count() == 0


def test_a_pod_the_drain_evicted_from_a_tainted_node_is_an_interruption(
    spot_pool, backend, kube, submitted, run_on_commit
):
    """The termination handler drains through the Eviction API: the pod ends Failed with DisruptionTarget
    (EvictionByEvictionAPI), as since Kubernetes 1.27, not with the kubelet's TerminationByKubelet."""
    workflow = submitted(spec("drained", platform="forever", exit_actions={"RESCHEDULE": "3001"}))
    run_on_commit(create_pods, workflow.pk)
    task = running(backend, workflow, run_on_commit)
    node = task.node
    taint(kube, node)
    raw = kube.json("reading", kube.core.read_namespaced_pod, task.pod_name, NAMESPACE)
    evicted = _stopped(raw, "EvictionByEvictionAPI")
    kube.json("stopping", kube.core.patch_namespaced_pod_status, task.pod_name, NAMESPACE, evicted)

    run_on_commit(reconcile.reconcile_backend, backend.pk)

    task.refresh_from_db()
    assert [(i["node"], i["action"]) for i in task.interruptions] == [(node, "RESCHEDULE")]
    assert task.retry_id == 1 and task.exit_code != 143


def test_an_evicted_pod_whose_node_went_unseen_is_an_interruption(spot_pool, backend, kube, submitted, run_on_commit):
    """The watcher hears the evicted pod's deletion after its node is gone, and the inventory never saw the taint
    (a notice shorter than a resync): the pod's own DisruptionTarget condition says what happened, not POD_LOST."""
    workflow = submitted(spec("unseen", platform="forever", exit_actions={"RESCHEDULE": "3001"}))
    run_on_commit(create_pods, workflow.pk)
    task = running(backend, workflow, run_on_commit)
    node = task.node
    raw = kube.json("reading", kube.core.read_namespaced_pod, task.pod_name, NAMESPACE)
    marked = {"status": {"conditions": _stopped(raw, "EvictionByEvictionAPI")["status"]["conditions"]}}
    raw = kube.json("marking", kube.core.patch_namespaced_pod_status, task.pod_name, NAMESPACE, marked)
    kube.json("deleting", kube.core.delete_namespaced_pod, task.pod_name, NAMESPACE)
    kube.json("deleting", kube.core.delete_node, node)

    assert run_on_commit(observe.apply_pod_event, backend.pk, "DELETED", raw)  # what the watcher hears

    task.refresh_from_db()
    assert [(i["node"], i["action"]) for i in task.interruptions] == [(node, "RESCHEDULE")]
    assert TaskEvent.objects.filter(task=task, kind="POD_LOST").count() == 0
    assert task.interruptions[0]["at"] == datetime(2026, 11, 26, 10, tzinfo=UTC).isoformat()  # the condition's time


def test_a_failed_pod_on_a_healthy_node_is_no_interruption(spot_pool, backend, kube, submitted, run_on_commit):
    """A DisruptionTarget pod whose node is there and untainted ended for another reason: its exit code decides."""
    workflow = submitted(spec("notspot", platform="forever", exit_actions={"RESCHEDULE": "3001"}))
    run_on_commit(create_pods, workflow.pk)
    task = running(backend, workflow, run_on_commit)
    raw = kube.json("reading", kube.core.read_namespaced_pod, task.pod_name, NAMESPACE)
    kube.json("stopping", kube.core.patch_namespaced_pod_status, task.pod_name, NAMESPACE, _stopped(raw))
    settle_until(backend, workflow, {WorkflowStatus.FAILED}, run_on_commit)
    task.refresh_from_db()
    assert (task.exit_code, task.interruptions, task.retry_id) == (143, [], 0)


def test_the_api_cli_and_workflow_page_say_what_happened(
    spot_pool, backend, kube, submitted, run_on_commit, alice, client
):
    workflow = submitted(spec("spotshow", platform="spotty", exit_actions={"RESCHEDULE": "143"}))
    run_on_commit(create_pods, workflow.pk)
    node = running(backend, workflow, run_on_commit).node
    interrupt(kube, node)
    settle_until(backend, workflow, {WorkflowStatus.COMPLETED}, run_on_commit, timeout=20)

    body = api(alice).get(f"/api/workflow/{workflow.workflow_id}").json()
    (task,) = body["tasks"]
    assert task["retry_id"] == 1
    assert task["interruptions"][0] | {"at": None} == {
        "node": node,
        "at": None,
        "attempt": 1,
        "pod": f"{workflow.workflow_id}-t0",
        "action": "RESCHEDULE",
        "next_attempt": 2,
    }

    client.force_login(alice)
    page = client.get(f"/workflows/{workflow.workflow_id}/").content.decode()
    assert "Spot interruption</b> on node" in page and f">{node}</span>" in page
    assert "(attempt 1); rescheduled as attempt 2" in page
    assert 'data-kind="SPOT_INTERRUPTION"' in page

    from io import StringIO

    from django.core.management import call_command

    out = StringIO()
    call_command("workflow", "show", workflow.workflow_id, stdout=out)
    assert (
        f"task t0: spot interruption on node {node} at 2026-11-26T10:00:00+00:00 "
        f"(attempt 1, pod {workflow.workflow_id}-t0); rescheduled as attempt 2"
    ) in out.getvalue()


def test_the_page_names_a_spot_interruption_that_failed_the_task(
    spot_pool, backend, kube, submitted, run_on_commit, alice, client
):
    workflow = submitted(spec("spotpage", platform="forever"))
    run_on_commit(create_pods, workflow.pk)
    node = running(backend, workflow, run_on_commit).node
    interrupt(kube, node)
    settle_until(backend, workflow, {WorkflowStatus.FAILED_BACKEND_ERROR}, run_on_commit)

    client.force_login(alice)
    page = client.get(f"/workflows/{workflow.workflow_id}/").content.decode()
    assert f"<b>Spot interruption on node {node}</b>" in page  # the task's ending
    assert "(attempt 1); the task failed" in page
    assert f"{SPOT_REASON}</span>" in page  # the exit column's badge
    assert Workflow.objects.get(pk=workflow.pk).status == WorkflowStatus.FAILED_BACKEND_ERROR


@pytest.mark.django_db(transaction=True)
def test_end_to_end_through_the_watcher_and_a_worker(redis_worker, watcher, spot_pool, backend, kube, alice):
    """The deployed path: the pod watcher sees the pod fail, a real Celery worker creates the next attempt."""
    document = spec("spote2e", platform="spotty", exit_actions={"RESCHEDULE": "143"})
    response = api(alice).post("/api/pool/batch/workflow", document, format="json")
    workflow = Workflow.objects.get(workflow_id=response.json()["workflow_id"])
    task = workflow.tasks.get()
    drain_until(watcher, lambda: Task.objects.get(pk=task.pk).status == TaskStatus.RUNNING, timeout=20)
    node = Task.objects.get(pk=task.pk).node

    interrupt(kube, node)
    drain_until(watcher, lambda: Workflow.objects.get(pk=workflow.pk).status == WorkflowStatus.COMPLETED, timeout=30)

    task.refresh_from_db()
    assert (task.retry_id, task.interruptions[0]["node"], task.interruptions[0]["next_attempt"]) == (1, node, 2)
    wait_until(lambda: [p["metadata"]["name"] for p in our_pods(kube)] == [task.pod_name])


def test_the_docs_example_reschedules_an_interruption(spot_pool, submitted):
    """docs/workflows.md, "Spot interruptions": its spec submits as written and reschedules on 3001 and 143."""
    page = (Path(__file__).resolve().parents[2] / "docs" / "workflows.md").read_text()
    section = page.split("## Spot interruptions", 1)[1].split("\n## ", 1)[0]
    document = yaml.safe_load(re.search(r"```yaml\n(.*?)```", section, re.S).group(1))
    task = submitted(document).tasks.get()
    for codes in ((143,), (None,)):
        assert exit_action(INTERRUPTED_EXIT_CODE, task.exit_actions, {}, also=codes)[0] == "RESCHEDULE"
    assert exit_action(143, task.exit_actions, {})[0] == "RESCHEDULE"
