"""`workflows.lifecycle`, `.reconcile` and `.timeouts` against the simulated cluster, called directly (Celery in
eager mode for what they enqueue). The end-to-end runs through a real worker are in test_e2e.py."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from clusters.kube import pods
from clusters.kube.connection import connect
from clusters.kube.errors import KubeError
from configs import store
from portal.errors import PermissionDenied
from tests.workflows.conftest import CLI, NAMESPACE, spec, wait_until
from workflows import lifecycle, reconcile, timeouts
from workflows.errors import WorkflowFinished
from workflows.lifecycle import derive_status, exit_action, exit_codes
from workflows.models import Task, TaskEvent, TaskStatus, Workflow
from workflows.services import SubmitRequest, submit


@pytest.fixture
def submitted(pool, alice, django_capture_on_commit_callbacks):
    """Submit a workflow (pods not created yet: the enqueue after commit is captured, not run)."""

    def make(document=None, **kwargs) -> Workflow:
        with django_capture_on_commit_callbacks(execute=False):
            result = submit(SubmitRequest(pool="batch", spec=document or spec(**kwargs), who=alice))
        return Workflow.objects.get(workflow_id=result.workflow_id)

    return make


@pytest.fixture
def run_on_commit(django_capture_on_commit_callbacks):
    """Run what lifecycle enqueues after commit (Celery is eager in tests without a broker)."""

    def call(fn, *args, **kwargs):
        with django_capture_on_commit_callbacks(execute=True):
            return fn(*args, **kwargs)

    return call


def events(workflow) -> list[tuple[str, str]]:
    return list(TaskEvent.objects.filter(task__workflow=workflow).order_by("at", "id").values_list("task__name", "kind"))


def settle_until(backend, workflow, statuses, run_on_commit, timeout=10.0) -> Workflow:
    """Reconcile (what the beat task does) until the workflow reaches one of `statuses`."""
    def done():
        run_on_commit(reconcile.reconcile_backend, backend.pk)
        workflow.refresh_from_db()
        return workflow.status in statuses
    wait_until(done, timeout=timeout, interval=0.05)
    return workflow


# ------------------------------------------------------------------------------------------ creation


def test_pod_is_the_stored_manifest_plus_the_instance_label(submitted, kube_server, backend):
    workflow = submitted()
    task = workflow.tasks.get()
    kube_server.emulator.clear_request_log()
    result = lifecycle.create_pods(workflow.pk)
    assert (result.created, result.adopted, result.failed) == (1, 0, 0)
    posted = [r for r in kube_server.emulator._requests if r.method == "POST" and r.url.path.endswith("/pods")]
    expected = {**task.pod, "metadata": {**task.pod["metadata"],
                                         "labels": {**task.pod["metadata"]["labels"],
                                                    "pool-portal/instance": "test-portal"}}}
    assert posted[-1].data == expected
    # typed substitution gives JSON numbers; they go out as they are (the typed client would refuse them)
    assert expected["spec"]["containers"][0]["resources"]["requests"]["cpu"] == 0.1
    stored = kube_server.emulator.get("pods", task.pod_name, NAMESPACE)
    assert stored["metadata"]["labels"] == expected["metadata"]["labels"]
    assert stored["spec"]["containers"] == task.pod["spec"]["containers"]
    assert stored["spec"]["nodeSelector"] == {"hive.openshift.io/machine-pool": "cpu"}
    task.refresh_from_db()
    assert task.status == TaskStatus.WAITING and task.pod_uid == stored["metadata"]["uid"] and task.pod_created_at
    assert events(workflow) == [("t0", "SUBMITTED"), ("t0", "CREATED")]
    assert Workflow.objects.get(pk=workflow.pk).status == "WAITING"


def test_creating_twice_creates_one_pod_and_one_event(submitted, kube_server, backend):
    workflow = submitted(tasks=3)
    lifecycle.create_pods(workflow.pk)
    again = lifecycle.create_pods(workflow.pk)
    assert (again.created, again.adopted) == (0, 0)
    assert len(kube_server.emulator.list("pods", NAMESPACE)) == 3
    assert [kind for _, kind in events(workflow)].count("CREATED") == 3


def test_a_worker_that_died_after_the_post_is_recovered(submitted, kube_server, backend):
    """The pod was created but the row still says PENDING (worker killed before the UPDATE): a redelivered
    message adopts the pod instead of failing or creating another."""
    workflow = submitted()
    task = workflow.tasks.get()
    with connect(backend) as kube:
        pods.create_pod(kube, NAMESPACE, lifecycle.manifest(task))
    result = lifecycle.create_pods(workflow.pk)
    assert (result.created, result.adopted) == (0, 1)
    assert len(kube_server.emulator.list("pods", NAMESPACE)) == 1
    assert Task.objects.get(pk=task.pk).status in (TaskStatus.WAITING, TaskStatus.RUNNING, TaskStatus.COMPLETED)
    assert "adopted" in TaskEvent.objects.get(task=task, kind="CREATED").message


def test_a_4xx_fails_the_task_with_the_api_message_and_is_not_retried(submitted, kube_server, backend):
    workflow = submitted()
    kube_server.emulator.fail_next("create", "pods", status=403, message='pods is forbidden: exceeded quota: gpu')
    result = lifecycle.create_pods(workflow.pk)
    assert result.failed == 1
    task = workflow.tasks.get()
    assert task.status == TaskStatus.FAILED_BACKEND_ERROR
    assert "HTTP 403" in task.error and "exceeded quota: gpu" in task.error
    workflow.refresh_from_db()
    assert workflow.status == "FAILED_BACKEND_ERROR" and workflow.finished_at and "exceeded quota" in workflow.error
    assert kube_server.emulator.list("pods", NAMESPACE) == []


def test_someone_elses_pod_of_the_same_name_fails_the_task(submitted, kube_server, backend, alice, run_on_commit):
    workflow = submitted()
    task = workflow.tasks.get()
    kube_server.emulator.create("namespaces", {"metadata": {"name": NAMESPACE}})
    kube_server.emulator.create("pods", {"metadata": {"name": task.pod_name, "labels": {"app": "theirs"}},
                                         "spec": {"containers": [{"name": "x", "image": "x"}]}}, NAMESPACE)
    lifecycle.create_pods(workflow.pk)
    task.refresh_from_db()
    assert task.status == TaskStatus.FAILED_BACKEND_ERROR and "is not this task's" in task.error
    run_on_commit(lifecycle.cancel, workflow.workflow_id, alice, force=True)  # cleans up ours only
    assert kube_server.emulator.get("pods", task.pod_name, NAMESPACE) is not None


def test_a_transient_error_propagates_and_leaves_the_task_pending(submitted, kube_server, backend):
    workflow = submitted(tasks=2)
    lifecycle.create_pods(workflow.pk)  # both created
    second = submitted(name="again", tasks=2)
    kube_server.emulator.fail_next("create", "pods", status=503)
    with pytest.raises(KubeError) as caught:
        lifecycle.create_pods(second.pk)
    assert caught.value.transient
    assert set(second.tasks.values_list("status", flat=True)) == {TaskStatus.PENDING}
    lifecycle.create_pods(second.pk)
    assert set(second.tasks.values_list("status", flat=True)) <= {TaskStatus.WAITING, TaskStatus.RUNNING}


def test_retries_exhausted_fail_the_pending_tasks(submitted, backend):
    workflow = submitted()
    assert lifecycle.fail_pending(workflow.pk, "gave up after 9 attempts: HTTP 503") == 1
    workflow.refresh_from_db()
    assert workflow.status == "FAILED_BACKEND_ERROR" and "gave up after 9 attempts" in workflow.error


# ------------------------------------------------------------------------------------------ status flow


def test_status_flows_back_from_the_pod(submitted, kube_server, backend, run_on_commit):
    workflow = submitted()
    lifecycle.create_pods(workflow.pk)
    settle_until(backend, workflow, {"COMPLETED"}, run_on_commit)
    task = workflow.tasks.get()
    assert task.status == TaskStatus.COMPLETED and task.exit_code == 0
    assert task.node.startswith("cpu-node-") and task.started_at and task.finished_at
    assert workflow.started_at and workflow.finished_at
    kinds = [kind for _, kind in events(workflow)]
    assert kinds == ["SUBMITTED", "CREATED", "SCHEDULED", "RUNNING", "EXITED"]
    exited = TaskEvent.objects.get(task=task, kind="EXITED").message
    assert exited.startswith("exited with code 0: COMPLETED")


def test_observations_are_idempotent_and_may_skip_states(submitted, backend):
    workflow = submitted()
    task = workflow.tasks.select_related("workflow__pool").get()
    Task.objects.filter(pk=task.pk).update(status=TaskStatus.WAITING, pod_created_at=timezone.now())
    task.refresh_from_db()
    done = _pod(task, "Succeeded", exit_code=0)
    assert lifecycle.observe(task, done) is True
    assert lifecycle.observe(Task.objects.select_related("workflow__pool").get(pk=task.pk), done) is False
    kinds = [kind for _, kind in events(workflow)]
    assert kinds == ["SUBMITTED", "SCHEDULED", "RUNNING", "EXITED"]
    workflow.refresh_from_db()
    assert workflow.status == "COMPLETED"


def test_unschedulable_reason_is_an_event_once_per_reason(submitted, kube_server, backend, run_on_commit):
    workflow = submitted(platform="nowhere")
    lifecycle.create_pods(workflow.pk)
    task = workflow.tasks.get()
    wait_until(lambda: run_on_commit(reconcile.reconcile_backend, backend.pk) and
               Task.objects.get(pk=task.pk).error.startswith("Unschedulable"))
    for _ in range(3):
        run_on_commit(reconcile.reconcile_backend, backend.pk)
    unschedulable = TaskEvent.objects.filter(task=task, kind="UNSCHEDULABLE")
    assert unschedulable.count() == 1
    assert "didn't match Pod's node affinity/selector" in unschedulable.get().message
    assert Task.objects.get(pk=task.pk).status == TaskStatus.WAITING


def _pod(task: Task, phase: str, exit_code: int | None = None, node: str = "cpu-node-0") -> dict:
    status: dict = {"phase": phase, "startTime": "2026-01-01T00:00:00Z"}
    if exit_code is not None:
        status["containerStatuses"] = [{"name": lifecycle.container_of(task), "state": {"terminated": {
            "exitCode": exit_code, "startedAt": "2026-01-01T00:00:01Z", "finishedAt": "2026-01-01T00:00:09Z"}}}]
    return {"metadata": {"name": task.pod_name, "namespace": task.namespace, "uid": f"uid-{task.pod_name}"},
            "spec": {"nodeName": node}, "status": status}


def _waiting(task: Task) -> Task:
    Task.objects.filter(pk=task.pk).update(status=TaskStatus.WAITING, pod_created_at=timezone.now())
    return Task.objects.select_related("workflow__pool").get(pk=task.pk)


@pytest.mark.parametrize(("code", "task_actions", "pool_actions", "expected"), [
    (0, {}, {}, ("COMPLETE", "the exit status")),
    (3, {}, {}, ("FAIL", "the exit status")),
    (3, {"COMPLETE": "0,3"}, {}, ("COMPLETE", "the task's exitActions")),
    (3, {"RESCHEDULE": "1-10,16"}, {"FAIL": "3"}, ("RESCHEDULE", "the task's exitActions")),
    (3, {"RESCHEDULE": "16"}, {"COMPLETE": "3"}, ("COMPLETE", "the pool's default_exit_actions")),
    (None, {"COMPLETE": "0-255"}, {}, ("FAIL", "the exit status")),
])
def test_exit_action_precedence(code, task_actions, pool_actions, expected):
    assert exit_action(code, task_actions, pool_actions) == expected


def test_exit_codes_parse_ranges():
    assert exit_codes("0,1-3, 16") == {0, 1, 2, 3, 16}


def test_fail_exit_action_fails_the_task(submitted, backend):
    workflow = submitted(exit_actions={"FAIL": "0"})
    task = _waiting(workflow.tasks.get())
    lifecycle.observe(task, _pod(task, "Succeeded", exit_code=0))
    task.refresh_from_db()
    assert task.status == TaskStatus.FAILED and "the task's exitActions: FAIL" in task.error
    workflow.refresh_from_db()
    assert workflow.status == "FAILED"


def test_reschedule_recreates_with_the_next_retry_name_up_to_the_limit(submitted, backend, pool, run_on_commit,
                                                                        monkeypatch):
    from workflows import tasks as jobs

    enqueued = []
    monkeypatch.setattr(jobs.create_pods, "delay", lambda pk: enqueued.append(pk))
    monkeypatch.setattr(jobs.delete_pods, "delay", lambda *args: enqueued.append(("delete", args[1])))
    workflow = submitted(exit_actions={"RESCHEDULE": "3"})
    task = workflow.tasks.get()
    names = [task.pod_name]
    for retry in (1, 2):  # WORKFLOW_MAX_RETRIES_PER_TASK is 2 in these tests
        task = _waiting(task)
        run_on_commit(lifecycle.observe, task, _pod(task, "Failed", exit_code=3))
        task.refresh_from_db()
        assert (task.status, task.retry_id) == (TaskStatus.PENDING, retry)
        assert task.pod_name == f"{workflow.workflow_id}-t0-r{retry}" == task.pod["metadata"]["name"]
        names.append(task.pod_name)
        assert enqueued[-2:] == [("delete", [[NAMESPACE, names[-2]]]), workflow.pk]
    task = _waiting(task)
    run_on_commit(lifecycle.observe, task, _pod(task, "Failed", exit_code=3))
    task.refresh_from_db()
    assert task.status == TaskStatus.FAILED and "all 2 retries are used" in task.error
    assert [kind for _, kind in events(workflow)].count("RESCHEDULED") == 2
    message = TaskEvent.objects.filter(task=task, kind="RESCHEDULED").first().message
    assert message == (f"exited with code 3; the task's exitActions: RESCHEDULE: retry 1 of 2 as pod "
                       f"{workflow.workflow_id}-t0-r1")
    assert Workflow.objects.get(pk=workflow.pk).status == "FAILED"


def _with_template_on_cpu(name: str, body: dict) -> None:
    """Add a pod template to the `cpu` platform of pool batch (through the config service, as admins do)."""
    store.apply("POD_TEMPLATE", name, body, CLI)
    config = store.show("POOL", "batch")
    config["platforms"]["cpu"]["override_pod_template"] = ["cpu", name]
    store.apply("POOL", "batch", config, CLI)


def test_each_attempt_is_resolved_again_with_its_retry_id(submitted, backend, pool, run_on_commit, deleted_pods):
    _with_template_on_cpu("attempt", {"spec": {"containers": [
        {"name": "{{USER_CONTAINER_NAME}}", "env": [{"name": "ATTEMPT", "value": "{{WF_RETRY_ID}}"}]}]}})
    workflow = submitted(exit_actions={"RESCHEDULE": "3"})
    task = workflow.tasks.get()

    def attempt(pod: dict) -> str:
        return next(e["value"] for e in pod["spec"]["containers"][0]["env"] if e["name"] == "ATTEMPT")

    assert attempt(task.pod) == "0"
    first = task.pod
    task = _waiting(task)
    run_on_commit(lifecycle.observe, task, _pod(task, "Failed", exit_code=3))
    task.refresh_from_db()
    assert (task.retry_id, attempt(task.pod), task.pod["metadata"]["name"]) == (1, "1", f"{workflow.workflow_id}-t0-r1")
    assert {k: v for k, v in task.pod["spec"].items() if k != "containers"} == \
        {k: v for k, v in first["spec"].items() if k != "containers"}


def test_a_retry_whose_platform_is_gone_runs_the_first_attempts_pod(submitted, backend, pool, run_on_commit,
                                                                   deleted_pods):
    workflow = submitted(exit_actions={"RESCHEDULE": "3"}, platform="exit3")
    task = _waiting(workflow.tasks.get())
    first = task.pod
    config = store.show("POOL", "batch")
    del config["platforms"]["exit3"]
    store.apply("POOL", "batch", config, CLI)
    run_on_commit(lifecycle.observe, task, _pod(task, "Failed", exit_code=3))
    task.refresh_from_db()
    assert task.retry_id == 1
    assert task.pod == {**first, "metadata": {**first["metadata"], "name": f"{workflow.workflow_id}-t0-r1"}}
    message = TaskEvent.objects.get(task=task, kind="RESCHEDULED").message
    assert message.endswith("(with the first attempt's pod: the task no longer resolves: "
                            "platform: platform exit3 of pool batch no longer exists (value: 'exit3'))")


def test_pool_default_exit_actions_apply(submitted, backend, pool):
    pool.default_exit_actions = {"COMPLETE": "3"}
    pool.save(update_fields=["default_exit_actions"])
    workflow = submitted()
    task = _waiting(workflow.tasks.get())
    lifecycle.observe(task, _pod(task, "Failed", exit_code=3))
    assert Task.objects.get(pk=task.pk).status == TaskStatus.COMPLETED


def test_one_failure_stops_the_siblings(submitted, backend, run_on_commit, monkeypatch):
    from workflows import tasks as jobs

    deleted = []
    monkeypatch.setattr(jobs.delete_pods, "delay", lambda backend_pk, targets, why: deleted.append((targets, why)))
    workflow = submitted(tasks=3)
    first, second, third = (_waiting(t) for t in workflow.tasks.order_by("id"))
    run_on_commit(lifecycle.observe, first, _pod(first, "Failed", exit_code=1))
    statuses = dict(workflow.tasks.values_list("name", "status"))
    assert statuses == {"t0": "FAILED", "t1": "CANCELLED", "t2": "CANCELLED"}
    assert TaskEvent.objects.get(task=second, kind="STOPPED").message == "stopped: task t0 ended FAILED"
    assert deleted == [([[NAMESPACE, second.pod_name], [NAMESPACE, third.pod_name]], "stopped")]
    workflow.refresh_from_db()
    assert workflow.status == "FAILED" and workflow.error.startswith("task t0: exited with code 1")


def grouped(ignore_non_lead_status: bool | None = None) -> dict:
    """One group: lead `client`, non-leads `server` and `sidecar`."""
    group: dict = {"name": "g", "tasks": [
        {"name": name, "image": "busybox:1.36", "command": ["sh", "-c", "true"], **({"lead": True} if lead else {})}
        for name, lead in (("client", True), ("server", False), ("sidecar", False))]}
    if ignore_non_lead_status is not None:
        group["ignoreNonleadStatus"] = ignore_non_lead_status
    return {"version": 2, "workflow": {"name": "grouped", "groups": [group],
                                       "resources": {"default": {"cpu": 0.1, "memory": "64Mi", "storage": "64Mi"}}}}


@pytest.fixture
def deleted_pods(monkeypatch) -> list:
    from workflows import tasks as jobs

    deleted: list = []
    monkeypatch.setattr(jobs.delete_pods, "delay", lambda backend_pk, targets, why: deleted.append((targets, why)))
    return deleted


def test_in_a_group_only_the_lead_counts_and_its_end_stops_the_rest(submitted, backend, run_on_commit, deleted_pods):
    workflow = submitted(grouped())
    client, server, sidecar = (_waiting(workflow.tasks.get(name=n)) for n in ("client", "server", "sidecar"))
    assert all(t.ignore_non_lead_status for t in (client, server, sidecar))
    run_on_commit(lifecycle.observe, sidecar, _pod(sidecar, "Failed", exit_code=1))
    workflow.refresh_from_db()
    assert workflow.status == "RUNNING"  # a non-lead failing decides nothing
    assert dict(workflow.tasks.values_list("name", "status")) == {
        "client": "WAITING", "server": "WAITING", "sidecar": "FAILED"}
    run_on_commit(lifecycle.observe, client, _pod(client, "Succeeded", exit_code=0))
    assert dict(workflow.tasks.values_list("name", "status")) == {
        "client": "COMPLETED", "server": "CANCELLED", "sidecar": "FAILED"}
    assert TaskEvent.objects.get(task=server, kind="STOPPED").message == \
        "stopped: lead task client of group g ended COMPLETED"
    assert deleted_pods == [([[NAMESPACE, server.pod_name]], "stopped")]
    workflow.refresh_from_db()
    assert (workflow.status, workflow.error) == ("COMPLETED", "")


def test_a_failing_lead_fails_the_workflow_and_stops_its_group(submitted, backend, run_on_commit, deleted_pods):
    workflow = submitted(grouped())
    client, server, sidecar = (_waiting(workflow.tasks.get(name=n)) for n in ("client", "server", "sidecar"))
    run_on_commit(lifecycle.observe, client, _pod(client, "Failed", exit_code=2))
    assert dict(workflow.tasks.values_list("name", "status")) == {
        "client": "FAILED", "server": "CANCELLED", "sidecar": "CANCELLED"}
    workflow.refresh_from_db()
    assert workflow.status == "FAILED" and workflow.error.startswith("task client: exited with code 2")


def test_without_ignore_non_lead_status_every_task_of_the_group_counts(submitted, backend, run_on_commit,
                                                                       deleted_pods):
    workflow = submitted(grouped(ignore_non_lead_status=False))
    client, server, sidecar = (_waiting(workflow.tasks.get(name=n)) for n in ("client", "server", "sidecar"))
    assert not any(t.ignore_non_lead_status for t in (client, server, sidecar))
    run_on_commit(lifecycle.observe, client, _pod(client, "Succeeded", exit_code=0))
    workflow.refresh_from_db()
    assert workflow.status == "RUNNING"  # the lead is done; the others still run and still count
    run_on_commit(lifecycle.observe, sidecar, _pod(sidecar, "Failed", exit_code=1))
    assert dict(workflow.tasks.values_list("name", "status")) == {
        "client": "COMPLETED", "server": "CANCELLED", "sidecar": "FAILED"}
    workflow.refresh_from_db()
    assert workflow.status == "FAILED" and workflow.error.startswith("task sidecar:")


def test_a_pod_deleted_behind_our_back_fails_the_task(submitted, kube_server, backend, run_on_commit):
    workflow = submitted(platform="forever")
    lifecycle.create_pods(workflow.pk)
    task = workflow.tasks.get()
    settle_until(backend, workflow, {"RUNNING"}, run_on_commit)
    kube_server.emulator.delete("pods", task.pod_name, NAMESPACE)
    run_on_commit(reconcile.reconcile_backend, backend.pk)
    task.refresh_from_db()
    assert task.status == TaskStatus.FAILED_BACKEND_ERROR and "no longer exists" in task.error
    assert TaskEvent.objects.filter(task=task, kind="POD_LOST").count() == 1


def test_reconcile_requeues_pending_workflows_whose_message_was_lost(submitted, backend, settings, monkeypatch):
    from workflows import tasks as jobs

    settings.WORKFLOW_PENDING_GRACE_SECONDS = 60
    enqueued = []
    monkeypatch.setattr(jobs.create_pods, "delay", enqueued.append)
    fresh, old = submitted(name="fresh"), submitted(name="old")
    Task.objects.filter(workflow=old).update(created_at=timezone.now() - timedelta(minutes=5))
    result = reconcile.reconcile_backend(backend.pk)
    assert result["requeued"] == 1 and enqueued == [old.pk]
    assert fresh.tasks.get().status == TaskStatus.PENDING


@pytest.mark.parametrize(("statuses", "expected"), [
    ([], "PENDING"),
    (["PENDING", "PENDING"], "PENDING"),
    (["PENDING", "WAITING"], "WAITING"),
    (["WAITING", "RUNNING"], "RUNNING"),
    (["COMPLETED", "WAITING"], "RUNNING"),
    (["COMPLETED", "COMPLETED"], "COMPLETED"),
    (["COMPLETED", "CANCELLED"], "CANCELLED"),
    (["CANCELLED", "FAILED_EXEC_TIMEOUT"], "FAILED_EXEC_TIMEOUT"),
])
def test_workflow_status_is_derived_from_tasks(statuses, expected):
    assert derive_status(statuses) == expected


# ------------------------------------------------------------------------------------------ cancel


def test_cancel_deletes_pods_and_marks_unfinished_tasks(submitted, kube_server, backend, alice, run_on_commit):
    workflow = submitted(platform="forever", tasks=2)
    lifecycle.create_pods(workflow.pk)
    assert len(kube_server.emulator.list("pods", NAMESPACE)) == 2
    cancelled = run_on_commit(lifecycle.cancel, workflow.workflow_id, alice, message="wrong data")
    assert cancelled.status == "CANCELLED" and cancelled.finished_at
    assert set(workflow.tasks.values_list("status", flat=True)) == {"CANCELLED"}
    assert kube_server.emulator.list("pods", NAMESPACE) == []
    assert TaskEvent.objects.filter(task__workflow=workflow, kind="CANCELLED").first().message == \
        "cancelled by alice: wrong data"
    with pytest.raises(WorkflowFinished) as caught:
        lifecycle.cancel(workflow.workflow_id, alice)
    assert (caught.value.status, caught.value.code) == (409, "workflow_finished")
    assert run_on_commit(lifecycle.cancel, workflow.workflow_id, alice, force=True).status == "CANCELLED"


def test_cancel_is_for_the_submitter_or_workflow_cancel_on_the_pool(submitted, bob, carol):
    workflow = submitted()
    with pytest.raises(PermissionDenied) as caught:
        lifecycle.cancel(workflow.workflow_id, bob)
    assert caught.value.status == 403 and "bob may not cancel" in caught.value.reason
    assert lifecycle.cancel(workflow.workflow_id, carol).status == "CANCELLED"  # osmo-batch: workflow:* on batch*


def test_a_pod_created_after_cancel_is_deleted(submitted, kube_server, backend, alice, run_on_commit, monkeypatch):
    """Cancel lands while create_pods is between its POST and its UPDATE: the pod is deleted, not adopted."""
    workflow = submitted()
    real_create = pods.create_pod

    def create_then_cancel(kube, namespace, manifest):
        outcome = real_create(kube, namespace, manifest)
        lifecycle.cancel(workflow.workflow_id, alice)
        return outcome

    monkeypatch.setattr(pods, "create_pod", create_then_cancel)
    run_on_commit(lifecycle.create_pods, workflow.pk)
    assert workflow.tasks.get().status == TaskStatus.CANCELLED
    assert kube_server.emulator.list("pods", NAMESPACE) == []


# ------------------------------------------------------------------------------------------ timeouts


def test_queue_timeout(submitted, kube_server, backend, run_on_commit):
    workflow = submitted(platform="parked", timeout={"queue_timeout": "30s", "exec_timeout": "1h"})
    lifecycle.create_pods(workflow.pk)
    task = workflow.tasks.get()
    assert run_on_commit(timeouts.enforce) == {"queue_timeouts": 0, "exec_timeouts": 0}
    report = run_on_commit(timeouts.enforce, now=timezone.now() + timedelta(seconds=31))
    assert report == {"queue_timeouts": 1, "exec_timeouts": 0}
    task.refresh_from_db()
    assert task.status == TaskStatus.FAILED_QUEUE_TIMEOUT
    assert task.error.startswith("queue timeout: not running 30s after its pod was created")
    assert kube_server.emulator.list("pods", NAMESPACE) == []
    workflow.refresh_from_db()
    assert workflow.status == "FAILED_QUEUE_TIMEOUT"


def test_exec_timeout(submitted, kube_server, backend, run_on_commit):
    workflow = submitted(platform="forever", timeout={"exec_timeout": "1m"})
    lifecycle.create_pods(workflow.pk)
    settle_until(backend, workflow, {"RUNNING"}, run_on_commit)
    report = run_on_commit(timeouts.enforce, now=timezone.now() + timedelta(seconds=61))
    assert report == {"queue_timeouts": 0, "exec_timeouts": 1}
    task = workflow.tasks.get()
    assert task.status == TaskStatus.FAILED_EXEC_TIMEOUT and task.error == "exec timeout: still running after 1m"
    assert kube_server.emulator.list("pods", NAMESPACE) == []
    assert Workflow.objects.get(pk=workflow.pk).status == "FAILED_EXEC_TIMEOUT"


# ------------------------------------------------------------------------------------------ reaper


def test_reaper_deletes_orphans_and_old_finished_pods_only(submitted, kube_server, backend, run_on_commit):
    running = submitted(name="running", platform="forever")
    finished = submitted(name="finished", platform="forever")
    lifecycle.create_pods(running.pk)
    lifecycle.create_pods(finished.pk)
    Workflow.objects.filter(pk=finished.pk).update(status="COMPLETED", finished_at=timezone.now())
    Task.objects.filter(workflow=finished).update(status="COMPLETED")
    orphan = {"metadata": {"name": "ghost-1-t0", "labels": {"pool-portal/instance": "test-portal"}},
              "spec": {"containers": [{"name": "t0", "image": "x"}]}}
    foreign = {"metadata": {"name": "theirs-1-t0", "labels": {"pool-portal/instance": "another-portal"}},
               "spec": {"containers": [{"name": "t0", "image": "x"}]}}
    kube_server.emulator.create("pods", orphan, NAMESPACE)
    kube_server.emulator.create("pods", foreign, NAMESPACE)
    assert reconcile.reap_backend(backend.pk) == 1  # the orphan; the finished one is kept for its retention
    names = {p["metadata"]["name"] for p in kube_server.emulator.list("pods", NAMESPACE)}
    assert names == {"running-1-t0", "finished-1-t0", "theirs-1-t0"}
    later = timezone.now() + timedelta(seconds=301)
    assert reconcile.reap_backend(backend.pk, now=later) == 1
    names = {p["metadata"]["name"] for p in kube_server.emulator.list("pods", NAMESPACE)}
    assert names == {"running-1-t0", "theirs-1-t0"}
    assert reconcile.run_locked("reaper-test", reconcile.reap_all)["deleted"] == 0


def test_a_second_backend_on_the_same_cluster_reaps_nothing_of_the_first(submitted, kube_server, backend,
                                                                           run_on_commit):
    """Backend rows may share a cluster (say one per namespace): each lists every pod of this portal there."""
    from clusters.models import Backend
    from configs import store
    from tests.workflows.conftest import CLI

    store.apply("BACKEND", "sim-team-b", {"namespace": "team-b", "api_url": kube_server.url}, CLI)
    twin = Backend.objects.get(name="sim-team-b")
    workflow = submitted(platform="forever")
    lifecycle.create_pods(workflow.pk)
    assert reconcile.reap_backend(twin.pk) == 0
    assert run_on_commit(reconcile.reconcile_backend, twin.pk)["tasks"] == 0
    assert len(kube_server.emulator.list("pods", NAMESPACE)) == 1


def test_periodic_jobs_do_not_overlap(transactional_db):
    """Another process (here: another thread, with its own database session) holds the lock: skip."""
    import threading

    from django.db import connection

    held, release = threading.Event(), threading.Event()

    def holder():
        try:
            with reconcile.singleton("workflows:x") as got:
                assert got
                held.set()
                release.wait(10)
        finally:
            connection.close()

    thread = threading.Thread(target=holder)
    thread.start()
    try:
        assert held.wait(10)
        assert reconcile.run_locked("x", lambda: {"ran": True}) == {"skipped": True}
    finally:
        release.set()
        thread.join(10)
    assert reconcile.run_locked("x", lambda: {"ran": True}) == {"ran": True}
