"""Event times are the cluster's: a task's events and times say when things happened in the cluster (pod
creation, the PodScheduled transition, the container's startedAt and finishedAt), not when the portal
applied them, however late that is; an unchanged observation writes nothing; the simulated kubelet dates
its conditions the way a kubelet does."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from clusters.kube.pods import parse_time
from kubesim import EmulatorServer
from tests.polling import drain_until
from tests.queries import captured_queries
from tests.workflows.conftest import NAMESPACE, wait_until
from workflows.lifecycle.create import create_pods
from workflows.lifecycle.observe import apply_pod_event
from workflows.models import TaskEvent, Workflow

WRITES = ("INSERT", "UPDATE", "DELETE")


def _condition(pod: dict, kind: str) -> dict:
    return next(c for c in pod["status"]["conditions"] if c["type"] == kind)


def _finished_pod(kube_server, name: str) -> dict:
    return wait_until(
        lambda: (
            (pod := kube_server.emulator.get("pods", name, NAMESPACE))
            and pod["status"].get("phase") == "Succeeded"
            and pod
        )
    )


@pytest.mark.parametrize("path", ["watch events", "listing"])
def test_a_watcher_that_catches_up_late_records_when_things_happened(submitted, watcher, kube_server, path):
    if path == "watch events":  # the watch is open: the pod's events queue up, unapplied
        drain_until(watcher, lambda: watcher.backends[0].lists >= 1)
    workflow = submitted()
    create_pods(workflow.pk)
    task = workflow.tasks.get()
    pod = _finished_pod(kube_server, task.pod_name)
    finished = parse_time(pod["status"]["containerStatuses"][0]["state"]["terminated"]["finishedAt"])
    ended = max(finished, task.created_at)  # the API's times have whole seconds
    wait_until(lambda: timezone.now() >= ended + timedelta(seconds=1.5))  # the portal is now clearly late
    drain_until(watcher, lambda: Workflow.objects.get(pk=workflow.pk).status == "COMPLETED")

    task.refresh_from_db()
    workflow.refresh_from_db()
    terminated = pod["status"]["containerStatuses"][0]["state"]["terminated"]
    started = parse_time(terminated["startedAt"])
    scheduled = parse_time(_condition(pod, "PodScheduled")["lastTransitionTime"])
    created = parse_time(pod["metadata"]["creationTimestamp"])
    at = dict(TaskEvent.objects.filter(task=task).values_list("kind", "at"))
    assert at["SUBMITTED"] == task.created_at
    # whole seconds: each step at the cluster's time, or (that time not after the step before, as in the second of
    # the submission) one microsecond after the step before: true to the second, distinct, in order
    steps = [("CREATED", created), ("SCHEDULED", scheduled), ("RUNNING", started), ("EXITED", finished)]
    before = at["SUBMITTED"]
    for kind, cluster in steps:
        assert at[kind] == (cluster if cluster > before else before + timedelta(microseconds=1)), kind
        before = at[kind]
    assert (at["RUNNING"], at["EXITED"]) == (task.started_at, task.finished_at)
    assert (workflow.started_at, workflow.finished_at) == (task.started_at, task.finished_at)
    for event in TaskEvent.objects.filter(task=task, kind__in=["RUNNING", "EXITED"]):
        assert event.recorded_at - event.at >= timedelta(seconds=1), "applied late, dated when it happened"


def test_an_unchanged_observation_writes_nothing(submitted, watcher, kube_server):
    workflow = submitted(platform="forever")
    create_pods(workflow.pk)
    task = workflow.tasks.get()
    drain_until(watcher, lambda: TaskEvent.objects.filter(task=task, kind="RUNNING").exists())
    pod = kube_server.emulator.get("pods", task.pod_name, NAMESPACE)
    events = TaskEvent.objects.filter(task=task).count()
    backend_id = workflow.pool.backend_id
    with captured_queries() as queries:
        for event_type in ("MODIFIED", "MODIFIED", "ADDED"):
            assert apply_pod_event(backend_id, event_type, pod) is False
    writes = [sql for sql in queries if sql.lstrip().upper().startswith(WRITES)]
    assert writes == []
    assert TaskEvent.objects.filter(task=task).count() == events


def test_the_simulated_kubelet_dates_conditions_like_a_kubelet():
    """lastTransitionTime changes only when a condition's status does; the times follow the pod's life."""
    with EmulatorServer(fleet="demo", kubelet={"start_delay": 0.05, "run_seconds": 0.1}) as server:
        emulator = server.emulator
        emulator.create(
            "pods",
            {
                "metadata": {"name": "late-starter", "annotations": {"kubesim/start-seconds": "1.2"}},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "main", "image": "busybox"}],
                    "nodeSelector": {"hive.openshift.io/machine-pool": "cpu"},
                },
            },
            "default",
        )
        bound = wait_until(
            lambda: (pod := emulator.get("pods", "late-starter", "default"))["spec"].get("nodeName") and pod
        )
        done = wait_until(
            lambda: (
                (pod := emulator.get("pods", "late-starter", "default"))["status"].get("phase") == "Succeeded" and pod
            )
        )
    scheduled = _condition(bound, "PodScheduled")["lastTransitionTime"]
    assert _condition(done, "PodScheduled")["lastTransitionTime"] == scheduled  # not re-dated when it started
    terminated = done["status"]["containerStatuses"][0]["state"]["terminated"]
    times = [
        parse_time(value)
        for value in (
            done["metadata"]["creationTimestamp"],
            scheduled,
            done["status"]["startTime"],
            terminated["startedAt"],
            terminated["finishedAt"],
        )
    ]
    assert times == sorted(times) and times[1] < times[3]  # started 1.2 s after it was bound
    assert _condition(done, "Ready")["status"] == "False"
    assert parse_time(_condition(done, "Ready")["lastTransitionTime"]) == times[4]
