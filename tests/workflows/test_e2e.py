"""End to end: the REST API, a real Celery worker on Redis, the simulated cluster (kubesim with its kubelet),
and the pod watcher of `watch_workflows`. Waits are deadlines on the database or the emulator, never sleeps."""

from __future__ import annotations

import pytest
from django.utils import timezone

from tests.polling import drain_until
from tests.workflows.conftest import NAMESPACE, api, spec, wait_until
from workflows import tasks as jobs
from workflows.models import Task, TaskEvent, Workflow

pytestmark = pytest.mark.django_db(transaction=True)


def submit(user, document, **query) -> Workflow:
    url = "/api/pool/batch/workflow" + ("?" + "&".join(f"{k}={v}" for k, v in query.items()) if query else "")
    response = api(user).post(url, {"file": document} if isinstance(document, str) else document, format="json")
    assert response.status_code == 200, response.json()
    return Workflow.objects.get(workflow_id=response.json()["workflow_id"])


def run(task) -> dict:
    """A periodic task through the worker, with its report (beat runs them with ignore_result)."""
    return task.apply_async(ignore_result=False).get(timeout=20)


def status_of(workflow) -> str:
    return Workflow.objects.get(pk=workflow.pk).status


def our_pods(kube_server) -> list[dict]:
    return kube_server.emulator.list("pods", NAMESPACE, label_selector="pool-portal/instance=test-portal")


def test_submit_runs_to_completion(redis_worker, watcher, kube_server, pool, alice):
    yaml_text = (
        "version: 2\nworkflow:\n  name: hello\n  resources: {default: {cpu: 100m, memory: 64Mi}}\n"
        "  tasks:\n  - {name: say, image: busybox:1.36, command: [echo, '{{workflow_id}}']}\n"
    )
    workflow = submit(alice, yaml_text)
    task = workflow.tasks.get()
    assert task.pod["spec"]["containers"][0]["command"] == ["echo", workflow.workflow_id]
    pod = wait_until(lambda: kube_server.emulator.get("pods", task.pod_name, NAMESPACE))
    labels = {**task.pod["metadata"]["labels"], "pool-portal/instance": "test-portal"}
    assert pod["metadata"]["labels"] == labels
    assert {key: pod["spec"][key] for key in task.pod["spec"]} == task.pod["spec"]  # the merged template, exactly
    # the platform's selector, and the node pool's that confines it (docs/quotas.md, "Confinement")
    assert pod["spec"]["nodeSelector"] == {
        "hive.openshift.io/machine-pool": "cpu",
        "pool-portal/node-pool": "sim-default",
    }
    drain_until(watcher, lambda: status_of(workflow) == "COMPLETED", timeout=20)
    task.refresh_from_db()
    assert (task.status, task.exit_code) == ("COMPLETED", 0) and task.node.startswith("cpu-node-")
    workflow.refresh_from_db()
    assert workflow.started_at <= workflow.finished_at <= timezone.now()
    kinds = list(TaskEvent.objects.filter(task=task).values_list("kind", flat=True))
    assert kinds == ["SUBMITTED", "CREATED", "SCHEDULED", "RUNNING", "EXITED"]
    body = api(alice).get(f"/api/workflow/{workflow.workflow_id}/events").json()
    assert [e["kind"] for e in body["events"]] == kinds


def test_a_group_ends_with_its_lead_and_its_server_pod_is_deleted(redis_worker, watcher, kube_server, pool, alice):
    """The client/server pattern: the server never exits; the lead client finishing completes the workflow."""
    yaml_text = (
        "version: 2\nworkflow:\n  name: clientserver\n"
        "  resources:\n    default: {cpu: 100m, memory: 64Mi}\n"
        "    server: {cpu: 100m, memory: 64Mi, platform: forever}\n"
        "  groups:\n  - name: pair\n    tasks:\n"
        "    - {name: client, lead: true, image: busybox:1.36, command: [sh, -c, 'true']}\n"
        "    - {name: server, resource: server, image: busybox:1.36, command: [sleep, infinity]}\n"
    )
    workflow = submit(alice, yaml_text)
    drain_until(watcher, lambda: status_of(workflow) == "COMPLETED", timeout=20)
    assert dict(workflow.tasks.values_list("name", "status")) == {"client": "COMPLETED", "server": "CANCELLED"}
    server = workflow.tasks.get(name="server")
    wait_until(lambda: server.pod_name not in {p["metadata"]["name"] for p in our_pods(kube_server)})


def test_cancel_deletes_the_pods(redis_worker, watcher, kube_server, pool, alice):
    workflow = submit(alice, spec("long", tasks=2, platform="forever"))
    drain_until(watcher, lambda: status_of(workflow) == "RUNNING", timeout=20)
    response = api(alice).post(f"/api/workflow/{workflow.workflow_id}/cancel", {"message": "enough"}, format="json")
    assert response.status_code == 200 and response.json()["status"] == "FAILED_CANCELED"
    wait_until(lambda: not our_pods(kube_server))
    assert set(workflow.tasks.values_list("status", flat=True)) == {"CANCELLED"}
    again = api(alice).post(f"/api/workflow/{workflow.workflow_id}/cancel", {}, format="json")
    assert again.status_code == 409 and again.json()["code"] == "workflow_finished"


def test_queue_and_exec_timeouts(redis_worker, watcher, kube_server, pool, alice):
    queued = submit(alice, spec("queued", platform="parked", timeout={"queue_timeout": "1s"}))
    running = submit(alice, spec("running", platform="forever", timeout={"exec_timeout": "1s"}))
    drain_until(watcher, lambda: status_of(running) == "RUNNING" and status_of(queued) == "WAITING", timeout=20)
    wait_until(
        lambda: (
            run(jobs.enforce_timeouts)
            and {status_of(queued), status_of(running)} == {"FAILED_QUEUE_TIMEOUT", "FAILED_EXEC_TIMEOUT"}
        ),
        timeout=20,
        interval=0.25,
    )
    wait_until(lambda: not our_pods(kube_server))
    assert queued.tasks.get().status == "FAILED_QUEUE_TIMEOUT" and running.tasks.get().status == "FAILED_EXEC_TIMEOUT"


def test_exit_actions_fail_or_reschedule(redis_worker, watcher, kube_server, pool, alice):
    failing = submit(alice, spec("failing", platform="exit3"))
    retried = submit(alice, spec("retried", platform="exit3", exit_actions={"RESCHEDULE": "3"}))
    drain_until(watcher, lambda: status_of(failing) == "FAILED" and status_of(retried) == "FAILED", timeout=30)
    assert failing.tasks.get().exit_code == 3
    task = retried.tasks.get()
    assert (task.retry_id, task.pod_name) == (2, f"{retried.workflow_id}-t0-r2")  # the limit is 2 in tests
    assert "all 2 retries are used" in task.error
    assert TaskEvent.objects.filter(task=task, kind="RESCHEDULED").count() == 2
    assert TaskEvent.objects.filter(task=task, kind="CREATED").count() == 3
    wait_until(
        lambda: (
            {p["metadata"]["name"] for p in our_pods(kube_server)}
            == {f"{failing.workflow_id}-t0", f"{retried.workflow_id}-t0-r2"}
        )
    )  # old attempts deleted


def test_cluster_outage_during_submission_is_retried(redis_worker, kube_server, pool, alice):
    kube_server.emulator.fail_next("create", "pods", status=503, times=2)
    workflow = submit(alice, spec("outage", platform="forever"))
    task = workflow.tasks.get()
    wait_until(lambda: Task.objects.get(pk=task.pk).status != "PENDING", timeout=20)
    assert len(our_pods(kube_server)) == 1
    posts = [r for r in kube_server.emulator if r.method == "POST" and r.url.path.endswith("/pods")]
    assert len(posts) == 4  # two 503s, a 404 (the namespace did not exist: it was created), then the pod
    assert kube_server.emulator.get("namespaces", NAMESPACE) is not None
    assert TaskEvent.objects.filter(task=task, kind="CREATED").count() == 1


def test_redelivered_create_is_idempotent(redis_worker, kube_server, pool, alice):
    """A worker killed mid-task has its message redelivered (acks_late): running it again, even twice at
    once, still leaves one pod and one CREATED event per task."""
    workflow = submit(alice, spec("redelivered", tasks=3, platform="forever"))
    results = [jobs.create_pods.apply_async((workflow.pk,)) for _ in range(3)]
    for result in results:
        result.get(timeout=20)
    wait_until(lambda: set(workflow.tasks.values_list("status", flat=True)) <= {"WAITING", "RUNNING"})
    assert len(our_pods(kube_server)) == 3
    assert TaskEvent.objects.filter(task__workflow=workflow, kind="CREATED").count() == 3


def test_reaper_deletes_an_orphan_pod(redis_worker, kube_server, pool, alice):
    kube_server.emulator.create("namespaces", {"metadata": {"name": NAMESPACE}})
    kube_server.emulator.create(
        "pods",
        {
            "metadata": {
                "name": "gone-7-t0",
                "labels": {"pool-portal/instance": "test-portal", "pool-portal/workflow": "gone-7"},
            },
            "spec": {"containers": [{"name": "t0", "image": "x"}]},
        },
        NAMESPACE,
    )
    report = run(jobs.reap_pods)
    assert report["deleted"] == 1 and report["errors"] == []
    assert our_pods(kube_server) == []


def test_reconciliation_catches_up_without_the_watcher(redis_worker, kube_server, pool, alice):
    workflow = submit(alice, spec("unwatched"))
    wait_until(lambda: kube_server.emulator.get("pods", f"{workflow.workflow_id}-t0", NAMESPACE))
    wait_until(lambda: run(jobs.reconcile_workflows) and status_of(workflow) == "COMPLETED", timeout=20, interval=0.2)
