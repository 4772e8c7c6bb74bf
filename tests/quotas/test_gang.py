"""Workflows across node pools (docs/admission.md, "Workflows across node pools"; issue #30 points 6 and 8):
every task is charged to, counted in and admitted by its own node pool, the workflow starts when all its parts
fit (gang), preempting any part preempts the whole, and what can never run is refused at submission.

    node pool a100-40gb: 1 node × 4 A100-40GB, no quotas (unmanaged: admits at once)
    node pool a100-80gb: 2 nodes × 4 A100-80GB; research deserves 4 (vision 4), ops none (infer: limit 2)

After every admission pass (celery's task_postrun of quotas.tasks.admission_pass) the invariant is checked:
every task of every in-flight workflow (or reserved part) is counted in exactly its own node pool's allocation.
"""

from __future__ import annotations

import json
from collections import defaultdict
from datetime import timedelta
from io import StringIO

import pytest
from celery.signals import task_postrun
from django.core.management import base, call_command
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rest_framework.test import APIClient

from pools.engine.placement_fit import pod_requests
from quotas.models import NodePool
from quotas.services.admission_passes import admission_pass
from quotas.services.node_pools import charged_node_pool
from quotas.services.state import states
from tests.clirun import run_as_cli
from tests.queries import captured_queries
from tests.quotas import gpu_cluster as gc
from workflows.errors import WorkflowInvalid
from workflows.lifecycle.cancel import cancel
from workflows.models import Task, Workflow, WorkflowPart, WorkflowStatus
from workflows.services import SubmitRequest, submit

Q = WorkflowStatus
GPU = "nvidia.com/gpu"
IN_FLIGHT = (Q.PENDING, Q.WAITING, Q.RUNNING)


@pytest.fixture
def server(db):
    with gc.cluster(a100_40=1, a100_80=2) as server:
        gc.configure(server, ["a100-40", "a100-80"])
        yield server


@pytest.fixture
def users(server):
    users = gc.teams({"research": ["vision"], "ops": ["infer"]})
    gc.set_quotas("a100-80gb", "a100-80", {"research": 4}, {"vision": 4, "infer": {"deserved": 0, "limit": 2}})
    return users


@pytest.fixture
def checked(users):
    """The invariant after every admission pass; the test asserts no violation was seen."""
    seen = {"passes": 0, "violations": []}

    def after_pass(sender=None, **kwargs):
        if getattr(sender, "name", "") == "quotas.tasks.admission_pass":
            seen["passes"] += 1
            seen["violations"] += violations()

    task_postrun.connect(after_pass, weak=False)
    yield seen
    task_postrun.disconnect(after_pass)
    assert seen["passes"] > 0 and seen["violations"] == []


def violations() -> list[str]:
    """Each counted task in its own node pool: per (node pool, project), the GPUs of the tasks charged there of
    in-flight workflows and reserved parts equal what the quota state counts as allocated."""
    found = []
    expected: dict[tuple[str, str], int] = defaultdict(int)
    counted_parts = WorkflowPart.objects.filter(workflow__status__in=IN_FLIGHT) | WorkflowPart.objects.filter(
        workflow__status=Q.QUEUED, admitted_at__isnull=False
    )
    keys = set(counted_parts.values_list("workflow_id", "node_pool"))
    for task in Task.objects.select_related("workflow__pool", "workflow__project").filter(
        workflow__status__in=(*IN_FLIGHT, Q.QUEUED)
    ):
        own = charged_node_pool(task.workflow.pool, task.platform).name
        if task.node_pool != own:
            found.append(f"{task}: charged to {task.node_pool}, its platform's node pool is {own}")
        if (task.workflow_id, task.node_pool) in keys:
            expected[(task.node_pool, task.workflow.project.name)] += int(pod_requests(task.pod).get(GPU, 0))
    for current in states(NodePool.objects.all()).values():
        for row in current.project_rows():
            if row["resource"] == "gpu":
                want = expected.get((current.node_pool.name, row["project"]), 0)
                if row["allocated"] != want:
                    found.append(f"{current.node_pool.name}/{row['project']}: {row['allocated']} counted, {want} asked")
    return found


def spec(name: str, tasks: list[tuple[str, int, str]]) -> dict:
    """Tasks (name, gpus, platform); the first is the lead."""
    return {
        "version": 2,
        "workflow": {
            "name": name,
            "resources": {
                task: {"cpu": 1, "memory": "1Gi", "storage": "1Gi", "gpu": gpus, "platform": platform}
                for task, gpus, platform in tasks
            },
            "tasks": [
                {"name": task, "image": "busybox:1.36", "command": ["sh", "-c", "work"], "resource": task}
                for task, _, _ in tasks
            ],
        },
    }


@pytest.fixture
def run(users, django_capture_on_commit_callbacks):
    def submit_tasks(project: str, name: str, tasks: list[tuple[str, int, str]]) -> Workflow:
        with django_capture_on_commit_callbacks(execute=True):
            result = submit(SubmitRequest(pool="gpu", spec=spec(name, tasks), who=users[project]))
        return Workflow.objects.get(workflow_id=result.workflow_id)

    return submit_tasks


def fresh(workflow: Workflow) -> Workflow:
    return Workflow.objects.get(pk=workflow.pk)


def shown(node_pool: str) -> dict[str, dict]:
    """`quota show NODE_POOL --format json`, GPU rows by project."""
    out = StringIO()
    call_command("quota", "show", node_pool, "--format", "json", stdout=out)
    return {row["project"]: row for row in json.loads(out.getvalue())["projects"] if row["resource"] == "gpu"}


def mixed(gpus: int = 1) -> list[tuple[str, int, str]]:
    """The demo's shape: the lead on the unmanaged node pool, two workers on the managed one."""
    return [("lead", 1, "a100-40"), ("worker-a", gpus, "a100-80"), ("worker-b", gpus, "a100-80")]


def test_each_task_is_charged_to_its_own_node_pool_and_counted_there(
    run, checked, server, django_capture_on_commit_callbacks
):
    first = fresh(run("infer", "mixed", mixed()))
    assert first.node_pool == "a100-40gb" and first.status == Q.WAITING  # the lead's, as OSMO shapes it
    assert {t.name: t.node_pool for t in first.tasks.all()} == {
        "lead": "a100-40gb",
        "worker-a": "a100-80gb",
        "worker-b": "a100-80gb",
    }
    parts = {p.node_pool: p for p in first.parts.all()}
    assert parts["a100-80gb"].requests["gpu"] == 2 and parts["a100-40gb"].requests["gpu"] == 1
    assert parts["a100-80gb"].preemptible and not parts["a100-40gb"].preemptible  # infer deserves none there
    assert first.preemptible  # as a whole: one part is
    assert shown("a100-80gb")["infer"]["allocated"] == 2
    worker = gc.pod_of(server, first.tasks.get(name="worker-a"))
    assert worker["spec"]["nodeSelector"][gc.GPU_PRODUCT_LABEL] == gc.PRODUCTS["a100-80"]

    second = fresh(run("infer", "mixed", mixed()))  # its workers would exceed infer's limit of 2 there
    assert second.status == Q.QUEUED and gc.pod_of(server, second.tasks.get(name="lead")) is None
    assert second.queue_reason["code"] == "LIMIT"
    assert second.queue_reason["text"].startswith("task worker-a, worker-b in node pool a100-80gb: ")
    assert second.queue_reason["part"] == {"node_pool": "a100-80gb", "tasks": ["worker-a", "worker-b"]}
    assert second.parts.get(node_pool="a100-40gb").admitted_at is not None  # admitted at once: reserved
    row = shown("a100-80gb")["infer"]
    assert (row["allocated"], row["queued"]) == (2, 2)

    with django_capture_on_commit_callbacks(execute=True):
        cancel(first.workflow_id)  # the room frees in both node pools: their passes run
    second = fresh(second)
    assert second.status == Q.WAITING and second.queue_reason == {}
    assert all(gc.pod_of(server, task) for task in second.tasks.all())
    assert shown("a100-80gb")["infer"]["allocated"] == 2


def test_neither_part_starts_until_both_fit(run, checked, server, django_capture_on_commit_callbacks):
    gc.set_quotas("a100-40gb", "a100-40", {"research": 4}, {"vision": 4}, over_quota=False)
    holder = fresh(run("vision", "holder", [("all", 4, "a100-40")]))
    assert holder.status == Q.WAITING and not holder.preemptible
    gang = fresh(run("vision", "gang", [("small", 2, "a100-40"), ("big", 2, "a100-80")]))
    assert gang.status == Q.QUEUED
    assert not any(gc.pod_of(server, task) for task in gang.tasks.all())  # neither part started
    reserved = gang.parts.get(node_pool="a100-80gb")
    assert reserved.admitted_at is not None and not reserved.preemptible  # within vision's deserved 4
    assert gang.parts.get(node_pool="a100-40gb").admitted_at is None
    assert gang.queue_reason["text"].startswith("task small in node pool a100-40gb: ")
    assert shown("a100-80gb")["vision"]["allocated"] == 2  # the reservation holds its room
    assert gang.tasks.get(name="big").events.filter(kind="RESERVED").exists()

    with django_capture_on_commit_callbacks(execute=True):
        cancel(holder.workflow_id)
    gang = fresh(gang)
    assert gang.status == Q.WAITING and gang.queue_reason == {} and gang.admitted_at is not None
    pods = {task.name: gc.pod_of(server, task) for task in gang.tasks.all()}
    assert pods["small"]["spec"]["nodeSelector"][gc.GPU_PRODUCT_LABEL] == gc.PRODUCTS["a100-40"]
    assert pods["big"]["spec"]["nodeSelector"][gc.GPU_PRODUCT_LABEL] == gc.PRODUCTS["a100-80"]


def test_preempting_a_part_preempts_the_whole_workflow(run, checked, server, django_capture_on_commit_callbacks):
    gc.set_quotas("a100-80gb", "a100-80", {"research": 8}, {"vision": 8})
    borrower = fresh(run("infer", "borrow", [("lead", 1, "a100-40"), ("w1", 4, "a100-80"), ("w2", 4, "a100-80")]))
    assert borrower.status == Q.WAITING and borrower.parts.get(node_pool="a100-80gb").preemptible
    lead_pod = borrower.tasks.get(name="lead").pod_name
    Workflow.objects.filter(pk=borrower.pk).update(admitted_at=timezone.now() - timedelta(hours=2))
    owner = fresh(run("vision", "owner", [("o1", 4, "a100-80"), ("o2", 4, "a100-80")]))
    borrower = fresh(borrower)
    assert owner.status == Q.WAITING and not owner.preemptible
    assert borrower.status == Q.FAILED_PREEMPTED
    assert borrower.preemption["code"] == "RECLAIMED" and borrower.preemption["by"] == owner.workflow_id
    assert borrower.preemption["node_pool"] == "a100-80gb"
    # the whole gang went, its lead in the unmanaged node pool too
    assert set(borrower.tasks.values_list("status", flat=True)) == {"FAILED_PREEMPTED"}
    assert server.emulator.get("pods", lead_pod, gc.NAMESPACE) is None or _deleting(server, lead_pod)
    assert shown("a100-80gb")["infer"]["allocated"] == 0


def _deleting(server, name: str) -> bool:
    pod = server.emulator.get("pods", name, gc.NAMESPACE)
    return bool(pod and pod["metadata"].get("deletionTimestamp"))


def test_a_released_reservation_waits_again_in_every_node_pool(
    run, checked, server, django_capture_on_commit_callbacks
):
    gc.set_quotas("a100-40gb", "a100-40", {"research": 4}, {"vision": 4}, over_quota=False)
    gc.set_quotas("a100-80gb", "a100-80", {"research": 8}, {"vision": 8})
    holder = fresh(run("vision", "holder", [("all", 4, "a100-40")]))
    gang = fresh(run("infer", "gang", [("w", 4, "a100-80"), ("x", 1, "a100-40")]))  # infer: nothing guaranteed
    assert gang.status == Q.QUEUED and gang.parts.get(node_pool="a100-80gb").preemptible  # reserved, borrowed
    owner = fresh(run("vision", "owner", [("o1", 4, "a100-80"), ("o2", 4, "a100-80")]))
    gang = fresh(gang)
    assert owner.status == Q.WAITING  # the reservation was reclaimed at once: it ran nothing
    assert gang.status == Q.QUEUED and not gang.parts.filter(admitted_at__isnull=False).exists()
    assert gang.preemption["released"] and gang.preemption["by"] == owner.workflow_id
    assert holder.pk  # still holds a100-40gb


@pytest.fixture
def cli(capsys, monkeypatch):
    monkeypatch.setattr(base.connections, "close_all", lambda: None)  # keep the test's transaction
    return lambda *args: run_as_cli(capsys, "workflows", "workflow", *args)


NEVER = {
    "too big": (
        spec("huge", [("lead", 1, "a100-40"), ("giant", 8, "a100-80")]),
        "task giant asks 8 gpu; the largest node of node pool a100-80gb offers 4",
    ),
    "over the limit": (
        spec("greedy", [("lead", 1, "a100-40"), ("a", 2, "a100-80"), ("b", 1, "a100-80")]),
        "node pool a100-80gb: the workflow asks 3 gpu (tasks a, b); project infer's hard limit there is 2",
    ),
}


@pytest.mark.parametrize("case", sorted(NEVER))
def test_what_can_never_run_is_refused_at_submission_with_the_numbers_rest(users, case):
    document, reason = NEVER[case]
    client = APIClient()
    client.force_authenticate(users["infer"])
    answer = client.post("/api/pool/gpu/workflow", document, format="json")
    assert answer.status_code == 400, answer.content
    body = answer.json()
    assert reason in body["reason"] or reason in json.dumps(body), body
    assert not Workflow.objects.exists() and not WorkflowPart.objects.exists()  # nothing written
    checked = client.post("/api/pool/gpu/workflow?validation_only=true", document, format="json")
    assert checked.status_code == 400 and reason in json.dumps(checked.json())  # not VALID either


@pytest.mark.parametrize("case", sorted(NEVER))
def test_what_can_never_run_is_refused_at_submission_with_the_numbers_cli(users, case, cli, tmp_path):
    document, reason = NEVER[case]
    path = tmp_path / "spec.yaml"
    path.write_text(json.dumps(document))
    code, out, err = cli("submit", str(path), "--pool", "gpu", "--user", "infer-user")
    assert code != 0 and reason in err, (out, err)
    assert not Workflow.objects.exists() and not WorkflowPart.objects.exists()


def test_several_problems_are_all_listed(users):
    document = spec("both", [("giant", 8, "a100-80"), ("a", 4, "a100-80")])  # 12 asked, limit 2, node of 4
    client = APIClient()
    client.force_authenticate(users["infer"])
    body = client.post("/api/pool/gpu/workflow", document, format="json").json()
    problems = json.dumps(body)
    assert "task giant asks 8 gpu" in problems and "project infer's hard limit there is 2" in problems, body


# ------------------------------------------------------------------ property: random gangs, passes in any order

TASK = st.tuples(st.integers(1, 4), st.sampled_from(["a100-40", "a100-80"]))
WORKLOAD = st.lists(
    st.tuples(st.sampled_from(["vision", "infer"]), st.lists(TASK, min_size=1, max_size=3)), min_size=1, max_size=6
)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(workload=WORKLOAD, order=st.permutations(["a100-40gb", "a100-80gb"]), finish=st.integers(0, 5))
def test_any_workload_keeps_every_part_counted_once_and_every_gang_whole(users, workload, order, finish):
    """Random multi-pool workflows, passes in either order, one admitted workflow finishing: every task counted
    in exactly its own node pool; a workflow runs only with all its parts admitted; a queued one has a part
    that waits; infer's hard limit of 2 in a100-80gb and each node pool's capacity hold."""
    gc.set_quotas("a100-40gb", "a100-40", {"research": 4}, {"vision": 2})
    Workflow.objects.all().delete()
    for index, (project, tasks) in enumerate(workload):
        named = [(f"t{i}", gpus, platform) for i, (gpus, platform) in enumerate(tasks)]
        try:
            submit(SubmitRequest(pool="gpu", spec=spec(f"w{index}", named), who=users[project]))
        except WorkflowInvalid:
            continue  # above infer's limit: refused, nothing written
        for name in order:
            admission_pass(NodePool.objects.get(name=name))
    running = list(Workflow.objects.filter(status__in=IN_FLIGHT).order_by("pk"))
    if running:
        Workflow.objects.filter(pk=running[finish % len(running)].pk).update(status=Q.COMPLETED)
        for name in order:
            admission_pass(NodePool.objects.get(name=name))
    assert violations() == []
    for workflow in Workflow.objects.prefetch_related("parts"):
        admitted = [p.admitted_at is not None for p in workflow.parts.all()]
        if workflow.status in IN_FLIGHT:
            assert all(admitted), workflow
        elif workflow.status == Q.QUEUED:
            assert not all(admitted), workflow
    for current in states(NodePool.objects.all()).values():
        used = sum(row["allocated"] for row in current.project_rows() if row["resource"] == "gpu")
        assert used <= current.capacity["gpu"], current.node_pool.name
        if current.node_pool.name == "a100-80gb":
            assert (
                next(r for r in current.project_rows() if r["project"] == "infer" and r["resource"] == "gpu")[
                    "allocated"
                ]
                <= 2
            )


def test_submission_queries_do_not_grow_with_tasks(users, django_capture_on_commit_callbacks):
    """Inside the test's transaction the charges are not cached (as inside any transaction): each platform
    used costs its charge's queries, so both workflows use the same two platforms (production caches them:
    tests/quotas/test_charging_cache.py)."""

    def submitted(name: str, tasks: list[tuple[str, int, str]]) -> int:
        with django_capture_on_commit_callbacks(execute=False), captured_queries() as queries:
            submit(SubmitRequest(pool="gpu", spec=spec(name, tasks), who=users["vision"]))
        return len(queries)

    submitted("warm", [("a", 1, "a100-40"), ("b", 1, "a100-80")])  # roles, epochs and charges cached
    few = submitted("few", [("a", 1, "a100-40"), ("b", 1, "a100-80")])
    many = submitted("many", [(f"t{i}", 1, ("a100-40", "a100-80")[i % 2]) for i in range(8)])
    assert few == many, (few, many)
    assert Workflow.objects.get(workflow_id="many-1").parts.count() == 2
