"""Admission on the simulated cluster (docs/admission.md, "Queued workflows"): QUEUED until admitted, admitted
when room frees, preemptible pods labelled so, reclaim following the exit action, the minimum runtime, and the
queue timeout counted from submission.

Node pool a100-80gb: 2 nodes × 4 A100 = 8 GPUs. research deserves 8 (vision 8); ops (infer) deserves none.
"""

from __future__ import annotations

import json
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.utils import timezone
from rest_framework.test import APIClient

from quotas.models import NodePool
from quotas.services.admission_passes import admission_pass, pass_all
from teams.quota_visibility import OTHER_PROJECT
from tests.quotas import gpu_cluster as gc
from workflows import timeouts
from workflows.lifecycle.admit_hold_preempt import PREEMPTED_EXIT_CODE, PREEMPTIBLE_LABEL
from workflows.lifecycle.cancel import cancel
from workflows.models import TaskEvent, Workflow, WorkflowStatus

Q = WorkflowStatus


@pytest.fixture
def server(db):
    with gc.cluster(a100_80=2) as server:
        gc.configure(server, ["a100-80"])
        yield server


@pytest.fixture
def users(server):
    users = gc.teams({"research": ["vision", "nlp"], "ops": ["infer"]})
    gc.set_quotas("a100-80gb", "a100-80", {"research": 8}, {"vision": 8})
    return users


@pytest.fixture
def run(users, django_capture_on_commit_callbacks):
    def submit(project: str, name: str, gpus: int, **options) -> Workflow:
        return gc.submit_gpus(users[project], name, gpus, "a100-80", django_capture_on_commit_callbacks, **options)

    return submit


def fresh(workflow: Workflow) -> Workflow:
    return Workflow.objects.get(pk=workflow.pk)


def api_detail(user, workflow) -> dict:
    client = APIClient()
    client.force_authenticate(user)
    return client.get(f"/api/workflow/{workflow.workflow_id}").json()


def test_an_unmanaged_node_pool_admits_at_once(server, django_capture_on_commit_callbacks):
    users = gc.teams({"ops": ["infer"]})
    workflow = gc.submit_gpus(users["infer"], "free", 4, "a100-80", django_capture_on_commit_callbacks)
    assert (workflow.node_pool, workflow.status, workflow.preemptible) == ("a100-80gb", Q.WAITING, False)
    pod = gc.pod_of(server, workflow.tasks.get())
    assert PREEMPTIBLE_LABEL not in pod["metadata"]["labels"]  # its pod exactly as before quotas


def test_queued_until_room_frees_then_admitted(run, users, server, django_capture_on_commit_callbacks):
    first, second = run("vision", "a", 4), run("vision", "b", 4)
    third = run("vision", "c", 4)
    assert [fresh(w).status for w in (first, second)] == [Q.WAITING, Q.WAITING]
    third = fresh(third)
    assert third.status == Q.QUEUED and not third.tasks.get().pod_created_at
    assert gc.pod_of(server, third.tasks.get()) is None
    assert third.queue_reason["code"] == "FAIR_SHARE"
    assert (
        third.queue_reason["text"]
        == "project vision: 8 of 8 guaranteed A100 GPUs in use; 0 free to borrow; position 1 in the queue"
    )
    answer = api_detail(users["vision"], third)
    assert answer["status"] == "QUEUED"  # the portal says QUEUED; only OSMO's client reads PENDING
    assert answer["queue"]["status"] == "QUEUED" and answer["queue"]["position"] == 1
    assert answer["queue"]["code"] == "FAIR_SHARE" and answer["queue"]["deserved"] == 8
    with django_capture_on_commit_callbacks(execute=True):
        cancel(first.workflow_id)  # a queue event: the node pool's pass runs
    third = fresh(third)
    assert third.status == Q.WAITING and third.queue_reason == {} and not third.preemptible
    assert third.admitted_at is not None
    assert api_detail(users["vision"], third)["queue"] is None


def test_over_quota_work_is_preemptible_and_its_pods_say_so(run, server):
    borrowed, owned = run("infer", "borrow", 4), run("vision", "own", 4)
    borrowed, owned = fresh(borrowed), fresh(owned)
    assert (borrowed.preemptible, owned.preemptible) == (True, False)
    pods = {w.workflow_id: gc.pod_of(server, w.tasks.get()) for w in (borrowed, owned)}
    assert pods[borrowed.workflow_id]["metadata"]["labels"][PREEMPTIBLE_LABEL] == "true"
    assert pods[owned.workflow_id]["metadata"]["labels"][PREEMPTIBLE_LABEL] == "false"
    for pod in pods.values():  # the label node pool's selector lands them there
        assert pod["spec"]["nodeSelector"][gc.GPU_PRODUCT_LABEL] == gc.PRODUCTS["a100-80"]
    assert "preemptible" in pods[borrowed.workflow_id]["metadata"]["annotations"]["pool-portal/admission"]


def test_reclaim_requeues_a_rescheduled_workflow_and_fails_the_others(run, server, users):
    stays = run("infer", "old", 4)  # no exit action for 3006: ends FAILED_PREEMPTED
    comes_back = run("infer", "young", 4, reschedule=True)
    assert fresh(stays).preemptible and fresh(comes_back).preemptible
    Workflow.objects.filter(pk=stays.pk).update(admitted_at=timezone.now() - timedelta(hours=2))
    old_pod = comes_back.tasks.get().pod_name
    submitted_at = fresh(comes_back).created_at
    owner = fresh(run("vision", "owner", 8))
    assert owner.status == Q.WAITING and not owner.preemptible  # admitted once the room was reclaimed
    stays, comes_back = fresh(stays), fresh(comes_back)
    assert stays.status == Q.FAILED_PREEMPTED and comes_back.status == Q.QUEUED
    task = stays.tasks.get()
    assert (task.status, task.exit_code) == ("FAILED_PREEMPTED", PREEMPTED_EXIT_CODE)
    for victim in (stays, comes_back):
        assert victim.preemption["code"] == "RECLAIMED" and victim.preemption["by"] == owner.workflow_id
        assert victim.preemption["preemptor_project"] == "vision" and victim.preemption["count"] == 1
        assert victim.preemption["text"].startswith("preempted: project infer was using 8 A100 GPUs over quota")
    again = comes_back.tasks.get()
    assert (again.status, again.retry_id, again.pod_name) == ("PENDING", 1, f"{old_pod}-r1")
    assert comes_back.created_at == submitted_at  # the queue timeout still counts from submission
    assert comes_back.queue_reason["code"] == "FAIR_SHARE"
    assert gc.pod_of(server, task) is None and gc.pod_of(server, type(task)(pod_name=old_pod)) is None
    kinds = list(TaskEvent.objects.filter(task=again).values_list("kind", flat=True))
    assert kinds[-2:] == ["PREEMPTED", "RESCHEDULED"]
    answer = api_detail(users["infer"], stays)
    # infer's researcher is not shown the other project's workflow (docs/access.md, "Quota visibility")
    assert answer["status"] == "FAILED_PREEMPTED" and "by" not in answer["preemption"]
    assert answer["preemption"]["text"] == OTHER_PROJECT
    assert stays.preemption["by"] == owner.workflow_id  # what an admin reads


def test_reclaim_never_stops_a_workflow_younger_than_the_minimum_runtime(run, settings):
    settings.QUOTA_MIN_RUNTIME_SECONDS = 600
    borrowed = run("infer", "borrow", 8)
    owner = fresh(run("vision", "owner", 4))
    assert owner.status == Q.QUEUED and owner.queue_reason["code"] == "NO_CAPACITY"
    assert fresh(borrowed).status == Q.WAITING
    Workflow.objects.filter(pk=borrowed.pk).update(admitted_at=timezone.now() - timedelta(seconds=601))
    report = admission_pass(NodePool.objects.get(name="a100-80gb"))
    assert report.preempted == [borrowed.workflow_id] and report.admitted == [owner.workflow_id]
    assert fresh(borrowed).status == Q.FAILED_PREEMPTED and fresh(owner).status == Q.PENDING


def test_queue_timeout_counts_from_submission(run, django_capture_on_commit_callbacks):
    run("vision", "full", 8)
    waiting = fresh(run("vision", "late", 4, queue_timeout="1h"))
    assert waiting.status == Q.QUEUED
    assert timeouts.enforce() == {"queue_timeouts": 0, "exec_timeouts": 0}
    Workflow.objects.filter(pk=waiting.pk).update(created_at=timezone.now() - timedelta(minutes=61))
    with django_capture_on_commit_callbacks(execute=True):
        assert timeouts.enforce()["queue_timeouts"] == 1
    waiting = fresh(waiting)
    assert waiting.status == Q.FAILED_QUEUE_TIMEOUT
    assert waiting.error.startswith("queue timeout: not admitted 1h after submission (last: project vision: 8 of 8")
    assert waiting.tasks.get().status == "FAILED_QUEUE_TIMEOUT"


def explain(*args: str) -> str:
    out = StringIO()
    call_command("workflow", "explain", *args, stdout=out, stderr=StringIO())
    return out.getvalue()


def test_workflow_explain_says_why_it_waits_and_why_it_was_preempted(run):
    borrowed = run("infer", "borrow", 8)
    owner = run("vision", "owner", 4)
    held = run("vision", "more", 8)
    text = explain(held.workflow_id)
    assert text.splitlines()[:4] == [
        f"workflow {held.workflow_id}: QUEUED",
        "project: vision",
        "node pool: a100-80gb",
        "priority: NORMAL",
    ]
    assert text.splitlines()[4:] == [
        "confined to node pool a100-80gb: its pods select nvidia.com/gpu.product=NVIDIA-A100-SXM4-80GB",
        "waiting: project vision: 4 of 8 guaranteed A100 GPUs in use; 0 free to borrow; position 1 in the queue",
        "numbers (gpu): demand 8, allocated 4, deserved 8, fair share 8, free 4, borrowable 0",
        "position in the queue of node pool a100-80gb: 1",
    ]
    data = json.loads(explain(held.workflow_id, "--format", "json"))
    assert data["queue"]["code"] == fresh(held).queue_reason["code"] and data["queue"]["position"] == 1
    assert data["queue"]["reason"] == fresh(held).queue_reason["text"]
    victim = explain(borrowed.workflow_id)
    assert victim.splitlines()[0] == f"workflow {borrowed.workflow_id}: FAILED_PREEMPTED"
    assert (
        f"preempted for workflow {owner.workflow_id}: preempted: project infer was using 8 A100 GPUs over quota"
        in victim
    )
    assert json.loads(explain(owner.workflow_id, "--format", "json"))["queue"] is None


def test_exit_actions_may_name_osmos_reserved_codes_such_as_preempted():
    from configs.errors import ConfigError
    from configs.validators import normalize_exit_actions

    assert normalize_exit_actions({"reschedule": "3006"}) == {"RESCHEDULE": "3006"}
    assert normalize_exit_actions({"FAIL": "1-10,3000-3006,4000", "COMPLETE": 1001}) == {
        "FAIL": "1-10,3000-3006,4000",
        "COMPLETE": "1001",
    }
    for bad in ("256", "3007", "2999-3006", "255-3000"):
        with pytest.raises(ConfigError, match="outside the exit code range 0-255"):
            normalize_exit_actions({"RESCHEDULE": bad})


def test_the_periodic_pass_skips_a_node_pool_with_nothing_new(run, django_capture_on_commit_callbacks):
    def due() -> object:  # the clock once the node pool's admission period has passed since its last pass
        return timezone.now() + timedelta(hours=2)

    run("vision", "a", 8)
    waiting = run("vision", "b", 4)  # held by its submission's pass, which changed nothing else
    assert fresh(waiting).status == Q.QUEUED
    with django_capture_on_commit_callbacks(execute=True):
        report = pass_all(now=due())
    assert (report["node_pools"], report["skipped"], report["held"]) == (1, 1, 0)
    # the queue changed behind the passes' back (no event): the periodic pass decides again
    Workflow.objects.filter(pk=waiting.pk).update(priority="HIGH")
    with django_capture_on_commit_callbacks(execute=True):
        report = pass_all(now=due())
    assert (report["node_pools"], report["skipped"], report["held"]) == (1, 0, 1)
    assert fresh(waiting).queue_reason["code"] == "FAIR_SHARE"
    with django_capture_on_commit_callbacks(execute=True):
        assert pass_all(now=due())["skipped"] == 1
