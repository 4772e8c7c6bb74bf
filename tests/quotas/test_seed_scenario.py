"""Seed 003 (Run:ai node pools), replayed on the simulated cluster: 20 nodes × 4 V100, 5 × 4 A100-40GB (ML-Ops'
inference node pool), 5 × 4 A100-80GB (R&D's training node pool), node pools labelled by GPU product; two
departments of four projects each. Each department owns (deserves) its A100 node pool; the other department
borrows it while it is idle, over quota; then the owner's submissions reclaim it. Every workflow's end state,
every preemption and its reason are asserted.

    node pool   capacity   deserved (GPUs)
    v100        80         mlops 40, rnd 40 (each of their eight projects 10)
    a100-40gb   20         mlops 20 (infer 8, serve 8, monitor 4)
    a100-80gb   20         rnd 20 (vision 8, nlp 8, speech 4)
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from tests.quotas import gpu_cluster as gc
from workflows.lifecycle.admit_hold_preempt import PREEMPTED_EXIT_CODE, PREEMPTIBLE_LABEL
from workflows.lifecycle.cancel import cancel
from workflows.models import Workflow

TEAMS = {"mlops": ["infer", "serve", "monitor", "label"], "rnd": ["vision", "nlp", "speech", "robotics"]}


@pytest.fixture
def seed(db, django_capture_on_commit_callbacks):
    with gc.cluster(v100=20, a100_40=5, a100_80=5) as server:
        gc.configure(server, ["v100", "a100-40", "a100-80"])
        users = gc.teams(TEAMS)
        gc.set_quotas(
            "v100", "v100", {"mlops": 40, "rnd": 40}, {p: 10 for projects in TEAMS.values() for p in projects}
        )
        gc.set_quotas("a100-40gb", "a100-40", {"mlops": 20}, {"infer": 8, "serve": 8, "monitor": 4})
        gc.set_quotas("a100-80gb", "a100-80", {"rnd": 20}, {"vision": 8, "nlp": 8, "speech": 4})

        def submit(project: str, name: str, gpus: int, platform: str, **options) -> str:
            workflow = gc.submit_gpus(
                users[project], name, gpus, platform, django_capture_on_commit_callbacks, **options
            )
            return workflow.workflow_id

        yield server, submit


def state() -> dict[str, tuple]:
    """workflow id → (status, preemptible, node pool)."""
    return {
        w.workflow_id: (w.status, w.preemptible, w.node_pool) for w in Workflow.objects.order_by("created_at", "id")
    }


def started_minutes_ago(*workflow_ids: str) -> None:
    """Admitted one minute apart, the first the oldest (so "youngest first" has an order to follow)."""
    now = timezone.now()
    for age, workflow_id in enumerate(reversed(workflow_ids), start=1):
        Workflow.objects.filter(workflow_id=workflow_id).update(admitted_at=now - timedelta(minutes=age))


def preempted(workflow_id: str) -> tuple[str, str]:
    """(for whom, why) of a preempted workflow."""
    reason = Workflow.objects.get(workflow_id=workflow_id).preemption
    return reason["by"], reason["text"]


def reclaimed(project: str, using: int, fair: int, by: str, by_project: str) -> str:
    return (
        f"preempted: project {project} was using {using} A100 GPUs over quota "
        f"(deserved 0 A100 GPUs, fair share {fair} A100 GPUs); "
        f"reclaimed for workflow {by} of project {by_project}, which is within its guaranteed quota"
    )


def test_seed_scenario(seed, django_capture_on_commit_callbacks):
    server, submit = seed
    # -- 1. work on the V100s: within deserved (non-preemptible), and robotics' third above it (preemptible)
    for project, count in (("speech", 2), ("monitor", 2), ("robotics", 3)):
        for i in range(count):
            submit(project, f"{project}-v{i}", 4, "v100")
    # -- 2. R&D borrows ML-Ops' idle A100-40GB node pool; ML-Ops borrows R&D's idle A100-80GB one: all preemptible
    borrowed_40 = [submit("vision", f"vision-b{i}", 4, "a100-40", reschedule=True) for i in range(3)]
    borrowed_40 += [submit("nlp", f"nlp-b{i}", 4, "a100-40") for i in range(2)]
    borrowed_80 = [submit("infer", f"infer-b{i}", 4, "a100-80", reschedule=(i == 4)) for i in range(5)]
    assert all(state()[w][:2] == ("WAITING", True) for w in borrowed_40 + borrowed_80)
    started_minutes_ago(*borrowed_40)
    started_minutes_ago(*borrowed_80)
    # -- 3. ML-Ops reclaims its node pool: infer is within its 8 deserved GPUs
    infer_o0 = submit("infer", "infer-o0", 4, "a100-40")
    infer_o1 = submit("infer", "infer-o1", 4, "a100-40")
    # -- 4. R&D reclaims its node pool: vision and nlp within their 8 deserved GPUs each
    vision_o0 = submit("vision", "vision-o0", 4, "a100-80")
    vision_o1 = submit("vision", "vision-o1", 4, "a100-80")
    nlp_o0 = submit("nlp", "nlp-o0", 4, "a100-80")

    # every preemption: the youngest workflow of the project furthest above its fair share, for whom and why
    assert preempted("vision-b2-1") == (infer_o0, reclaimed("vision", 12, 8, infer_o0, "infer"))
    assert preempted("nlp-b1-1") == (infer_o1, reclaimed("nlp", 8, 6, infer_o1, "infer"))
    assert preempted("infer-b4-1") == (vision_o0, reclaimed("infer", 20, 16, vision_o0, "vision"))
    assert preempted("infer-b3-1") == (vision_o1, reclaimed("infer", 16, 12, vision_o1, "vision"))
    assert preempted("infer-b2-1") == (nlp_o0, reclaimed("infer", 12, 8, nlp_o0, "nlp"))
    reclaimed_ids = {"vision-b2-1", "nlp-b1-1", "infer-b4-1", "infer-b3-1", "infer-b2-1"}
    assert set(Workflow.objects.exclude(preemption={}).values_list("workflow_id", flat=True)) == reclaimed_ids
    # exit action RESCHEDULE (vision-b*, infer-b4): queued again, waiting for their fair share
    queued = {w.workflow_id: w.queue_reason for w in Workflow.objects.filter(status="QUEUED")}
    assert {w: r["text"] for w, r in queued.items()} == {
        "vision-b2-1": "project vision: 8 A100 GPUs in use, 0 guaranteed; 0 free to borrow; position 1 in the queue",
        "infer-b4-1": "project infer: 8 A100 GPUs in use, 0 guaranteed; 0 free to borrow; position 1 in the queue",
    }
    assert {r["code"] for r in queued.values()} == {"FAIR_SHARE"}
    for workflow_id in ("nlp-b1-1", "infer-b3-1", "infer-b2-1"):  # no exit action for 3006: they end
        task = Workflow.objects.get(workflow_id=workflow_id).tasks.get()
        assert (task.status, task.exit_code) == ("FAILED_PREEMPTED", PREEMPTED_EXIT_CODE)
        assert gc.pod_of(server, task) is None  # its pod was deleted
    requeued = Workflow.objects.get(workflow_id="infer-b4-1").tasks.get()
    assert (requeued.status, requeued.retry_id, requeued.pod_name) == ("PENDING", 1, "infer-b4-1-main-r1")
    assert gc.pod_of(server, type(requeued)(pod_name="infer-b4-1-main")) is None

    # -- 5. R&D frees room: the borrower queued again is admitted again, preemptible
    with django_capture_on_commit_callbacks(execute=True):
        cancel(vision_o0)
    assert state() == {
        "speech-v0-1": ("WAITING", False, "v100"),
        "speech-v1-1": ("WAITING", False, "v100"),
        "monitor-v0-1": ("WAITING", False, "v100"),
        "monitor-v1-1": ("WAITING", False, "v100"),
        "robotics-v0-1": ("WAITING", False, "v100"),
        "robotics-v1-1": ("WAITING", False, "v100"),
        "robotics-v2-1": ("WAITING", True, "v100"),  # above deserved; nobody reclaims the V100s
        "vision-b0-1": ("WAITING", True, "a100-40gb"),
        "vision-b1-1": ("WAITING", True, "a100-40gb"),
        "vision-b2-1": ("QUEUED", False, "a100-40gb"),
        "nlp-b0-1": ("WAITING", True, "a100-40gb"),
        "nlp-b1-1": ("FAILED_PREEMPTED", True, "a100-40gb"),
        "infer-b0-1": ("WAITING", True, "a100-80gb"),
        "infer-b1-1": ("WAITING", True, "a100-80gb"),
        "infer-b2-1": ("FAILED_PREEMPTED", True, "a100-80gb"),
        "infer-b3-1": ("FAILED_PREEMPTED", True, "a100-80gb"),
        "infer-b4-1": ("WAITING", True, "a100-80gb"),
        "infer-o0-1": ("WAITING", False, "a100-40gb"),
        "infer-o1-1": ("WAITING", False, "a100-40gb"),
        "vision-o0-1": ("CANCELLED", False, "a100-80gb"),
        "vision-o1-1": ("WAITING", False, "a100-80gb"),
        "nlp-o0-1": ("WAITING", False, "a100-80gb"),
    }
    back = Workflow.objects.get(workflow_id="infer-b4-1")
    assert back.preemption["by"] == vision_o0 and back.queue_reason == {}  # its history stays
    pod = gc.pod_of(server, back.tasks.get())
    assert pod["metadata"]["labels"][PREEMPTIBLE_LABEL] == "true"
    assert pod["spec"]["nodeSelector"][gc.GPU_PRODUCT_LABEL] == gc.PRODUCTS["a100-80"]
    owner = gc.pod_of(server, Workflow.objects.get(workflow_id=nlp_o0).tasks.get())
    assert owner["metadata"]["labels"][PREEMPTIBLE_LABEL] == "false"
    # the owners hold their node pools: every running A100 workflow fits the capacity
    for node_pool in ("a100-40gb", "a100-80gb"):
        running = Workflow.objects.filter(node_pool=node_pool, status="WAITING")
        assert sum(w.requests["gpu"] for w in running) <= 20
