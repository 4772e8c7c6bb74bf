"""Exit actions and retries (`workflows.lifecycle.exits`): COMPLETE / FAIL / RESCHEDULE, each attempt resolved
again."""

from __future__ import annotations

import pytest

from configs import store
from tests.workflows.conftest import CLI, NAMESPACE, events, pod_of, waiting
from workflows.lifecycle.exits import exit_action, exit_codes
from workflows.lifecycle.observe import observe
from workflows.models import Task, TaskEvent, TaskStatus, Workflow


@pytest.mark.parametrize(
    ("code", "task_actions", "pool_actions", "expected"),
    [
        (0, {}, {}, ("COMPLETE", "the exit status")),
        (3, {}, {}, ("FAIL", "the exit status")),
        (3, {"COMPLETE": "0,3"}, {}, ("COMPLETE", "the task's exitActions")),
        (3, {"RESCHEDULE": "1-10,16"}, {"FAIL": "3"}, ("RESCHEDULE", "the task's exitActions")),
        (3, {"RESCHEDULE": "16"}, {"COMPLETE": "3"}, ("COMPLETE", "the pool's default_exit_actions")),
        (None, {"COMPLETE": "0-255"}, {}, ("FAIL", "the exit status")),
    ],
)
def test_exit_action_precedence(code, task_actions, pool_actions, expected):
    assert exit_action(code, task_actions, pool_actions) == expected


def test_exit_codes_parse_ranges():
    assert exit_codes("0,1-3, 16") == {0, 1, 2, 3, 16}


def test_fail_exit_action_fails_the_task(submitted, backend):
    workflow = submitted(exit_actions={"FAIL": "0"})
    task = waiting(workflow.tasks.get())
    observe(task, pod_of(task, "Succeeded", exit_code=0))
    task.refresh_from_db()
    assert task.status == TaskStatus.FAILED and "the task's exitActions: FAIL" in task.error
    workflow.refresh_from_db()
    assert workflow.status == "FAILED"


def test_reschedule_recreates_with_the_next_retry_name_up_to_the_limit(
    submitted, backend, pool, run_on_commit, monkeypatch
):
    from workflows import tasks as jobs

    enqueued = []
    monkeypatch.setattr(jobs.create_pods, "delay", lambda pk: enqueued.append(pk))
    monkeypatch.setattr(jobs.delete_pods, "delay", lambda *args: enqueued.append(("delete", args[1])))
    workflow = submitted(exit_actions={"RESCHEDULE": "3"})
    task = workflow.tasks.get()
    names = [task.pod_name]
    for retry in (1, 2):  # WORKFLOW_MAX_RETRIES_PER_TASK is 2 in these tests
        task = waiting(task)
        run_on_commit(observe, task, pod_of(task, "Failed", exit_code=3))
        task.refresh_from_db()
        assert (task.status, task.retry_id) == (TaskStatus.PENDING, retry)
        assert task.pod_name == f"{workflow.workflow_id}-t0-r{retry}" == task.pod["metadata"]["name"]
        names.append(task.pod_name)
        assert enqueued[-2:] == [("delete", [[NAMESPACE, names[-2]]]), workflow.pk]
    task = waiting(task)
    run_on_commit(observe, task, pod_of(task, "Failed", exit_code=3))
    task.refresh_from_db()
    assert task.status == TaskStatus.FAILED and "all 2 retries are used" in task.error
    assert [kind for _, kind in events(workflow)].count("RESCHEDULED") == 2
    message = TaskEvent.objects.filter(task=task, kind="RESCHEDULED").first().message
    assert message == (
        f"exited with code 3; the task's exitActions: RESCHEDULE: retry 1 of 2 as pod {workflow.workflow_id}-t0-r1"
    )
    assert Workflow.objects.get(pk=workflow.pk).status == "FAILED"


def _with_template_on_cpu(name: str, body: dict) -> None:
    """Add a pod template to the `cpu` platform of pool batch (through the config service, as admins do)."""
    store.apply("POD_TEMPLATE", name, body, CLI)
    config = store.show("POOL", "batch")
    config["platforms"]["cpu"]["override_pod_template"] = ["cpu", name]
    store.apply("POOL", "batch", config, CLI)


def test_each_attempt_is_resolved_again_with_its_retry_id(submitted, backend, pool, run_on_commit, deleted_pods):
    _with_template_on_cpu(
        "attempt",
        {
            "spec": {
                "containers": [
                    {"name": "{{USER_CONTAINER_NAME}}", "env": [{"name": "ATTEMPT", "value": "{{WF_RETRY_ID}}"}]}
                ]
            }
        },
    )
    workflow = submitted(exit_actions={"RESCHEDULE": "3"})
    task = workflow.tasks.get()

    def attempt(pod: dict) -> str:
        return next(e["value"] for e in pod["spec"]["containers"][0]["env"] if e["name"] == "ATTEMPT")

    assert attempt(task.pod) == "0"
    first = task.pod
    task = waiting(task)
    run_on_commit(observe, task, pod_of(task, "Failed", exit_code=3))
    task.refresh_from_db()
    assert (task.retry_id, attempt(task.pod), task.pod["metadata"]["name"]) == (1, "1", f"{workflow.workflow_id}-t0-r1")
    assert {k: v for k, v in task.pod["spec"].items() if k != "containers"} == {
        k: v for k, v in first["spec"].items() if k != "containers"
    }


def test_a_retry_whose_platform_is_gone_runs_the_first_attempts_pod(
    submitted, backend, pool, run_on_commit, deleted_pods
):
    workflow = submitted(exit_actions={"RESCHEDULE": "3"}, platform="exit3")
    task = waiting(workflow.tasks.get())
    first = task.pod
    config = store.show("POOL", "batch")
    del config["platforms"]["exit3"]
    store.apply("POOL", "batch", config, CLI)
    run_on_commit(observe, task, pod_of(task, "Failed", exit_code=3))
    task.refresh_from_db()
    assert task.retry_id == 1
    assert task.pod == {**first, "metadata": {**first["metadata"], "name": f"{workflow.workflow_id}-t0-r1"}}
    message = TaskEvent.objects.get(task=task, kind="RESCHEDULED").message
    assert message.endswith(
        "(with the first attempt's pod: the task no longer resolves: "
        "platform: platform exit3 of pool batch no longer exists (value: 'exit3'))"
    )


def test_pool_default_exit_actions_apply(submitted, backend, pool):
    pool.default_exit_actions = {"COMPLETE": "3"}
    pool.save(update_fields=["default_exit_actions"])
    workflow = submitted()
    task = waiting(workflow.tasks.get())
    observe(task, pod_of(task, "Failed", exit_code=3))
    assert Task.objects.get(pk=task.pk).status == TaskStatus.COMPLETED
