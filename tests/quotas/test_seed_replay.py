"""Seed 003 (Run:ai node pools) replayed as one flowing scenario on the simulated cluster, with every point of
issue #30, its end states, each preemption and its recorded reason. After every admission pass (celery's
task_postrun of quotas.tasks.admission_pass, and each pass the test runs itself) the invariants are checked:

* the non-preemptible allocation of each project and department is at most its deserved quota, per node pool;
* no pod runs outside its node pool (read from kubesim: the node each pod is bound to, once it has decided);
* each task is counted once, in its own node pool (tests.quotas.test_gang.violations).

    node pool      nodes               deserved GPUs
    sim-default    20 × 4 V100         mlops 40, rnd 40; each of their eight projects 10
    a100-40gb      5 × 4 A100-40GB     mlops 20: infer 8, serve 8, monitor 4
    a100-80gb      5 × 4 A100-80GB     rnd 20: train 8, vision 8 (4 not split among its projects); label: limit 4

Time moves through the node pools' own settings (min_runtime_seconds, admission_seconds), never by sleeping.
"""

from __future__ import annotations

import json
from collections import defaultdict
from datetime import timedelta
from io import StringIO

import pytest
from celery.signals import task_postrun
from django.core.management import call_command
from django.utils import timezone
from rest_framework.test import APIClient

from clusters import inventory
from clusters.models import Backend
from configs import store
from configs.errors import ConfigError
from quotas.models import Quota
from quotas.services.admission_passes import pass_all
from tests.polling import wait_until
from tests.quotas import gpu_cluster as gc
from tests.quotas.confinement import assert_no_pod_outside_its_node_pool, bound_pods
from tests.quotas.test_confinement import placed
from tests.quotas.test_gang import shown, violations
from tests.quotas.test_gang import spec as gang_spec
from tests.quotas.test_seed_scenario import started_minutes_ago
from workflows.lifecycle.cancel import cancel
from workflows.models import Task, Workflow, WorkflowPart, WorkflowStatus
from workflows.services import SubmitRequest
from workflows.services import submit as submit_workflow

Q = WorkflowStatus
TEAMS = {"mlops": ["infer", "serve", "monitor", "label"], "rnd": ["build", "train", "vision", "nlp"]}
DEFAULT = "sim-default"
COUNTED = (Q.PENDING, Q.WAITING, Q.RUNNING)


def quotas(node_pool: str, departments: dict, projects: dict, **settings) -> None:
    """GPU quotas (`{team: deserved}` or `{team: {"deserved", "limit", "weight"}}`) and admission settings of a
    node pool, written through the config store as every door writes them."""

    def gpu(value) -> dict:
        return {"gpu": value if isinstance(value, dict) else {"deserved": value}}

    document = {
        **store.show("NODE_POOL", node_pool),
        "departments": {name: gpu(value) for name, value in departments.items()},
        "projects": {name: gpu(value) for name, value in projects.items()},
        **settings,
    }
    store.apply("NODE_POOL", node_pool, document, gc.CLI)


def set_settings(node_pool: str, **settings) -> None:
    store.apply("NODE_POOL", node_pool, {**store.show("NODE_POOL", node_pool), **settings}, gc.CLI)


def over_deserved() -> list[str]:
    """Non-preemptible GPUs above deserved, per (node pool, project) and (node pool, department)."""
    held: dict[tuple[str, str], int] = defaultdict(int)
    counted = WorkflowPart.objects.filter(preemptible=False).filter(
        workflow__status__in=COUNTED
    ) | WorkflowPart.objects.filter(preemptible=False, workflow__status=Q.QUEUED, admitted_at__isnull=False)
    for node_pool, project, department, requests in counted.values_list(
        "node_pool", "workflow__project__name", "workflow__project__department__name", "requests"
    ):
        held[(node_pool, project)] += int(requests.get("gpu", 0))
        held[(node_pool, f"department {department}")] += int(requests.get("gpu", 0))
    deserved = {}
    for row in Quota.objects.filter(resource="gpu").values(
        "node_pool__name", "project__name", "department__name", "deserved"
    ):
        team = row["project__name"] or f"department {row['department__name']}"
        deserved[(row["node_pool__name"], team)] = row["deserved"]
    return [
        f"{node_pool}/{team}: {gpus} GPUs non-preemptible, deserved {deserved.get((node_pool, team), 0)}"
        for (node_pool, team), gpus in sorted(held.items())
        if gpus > deserved.get((node_pool, team), 0)
    ]


def settled(server) -> dict:
    """Wait until kubesim has decided every pod of an in-flight task (bound, or Unschedulable), so the check
    that follows sees where each landed (tests.quotas.test_confinement.placed)."""
    names = Task.objects.filter(workflow__status__in=COUNTED).values_list("pod_name", flat=True)
    created = [name for name in names if server.emulator.get("pods", name, gc.NAMESPACE)]
    return wait_until(lambda: placed(server, created), what="pods bound") if created else {}


def invariants(server) -> list[str]:
    settled(server)
    found = over_deserved() + violations()
    try:
        assert_no_pod_outside_its_node_pool(server, gc.NAMESPACE)
    except AssertionError as escaped:
        found.append(f"escaped: {escaped}")
    return found


@pytest.fixture
def seed(db, django_capture_on_commit_callbacks):
    with gc.cluster(v100=20, a100_40=5, a100_80=5) as server:
        with django_capture_on_commit_callbacks(execute=True):  # the node-pool labels are patched after commit
            gc.configure(server, ["v100", "a100-40", "a100-80"], carve=["a100-40", "a100-80"], unpinned=("any",))
        inventory.sync_backend(Backend.objects.get(name="sim").pk)  # the labels, read back
        users = gc.teams(TEAMS)
        every = {p: 10 for projects in TEAMS.values() for p in projects}
        quotas(DEFAULT, {"mlops": 40, "rnd": 40}, every, min_runtime_seconds=0)
        quotas("a100-40gb", {"mlops": 20}, {"infer": 8, "serve": 8, "monitor": 4}, min_runtime_seconds=0)
        late = {"min_runtime_seconds": 3600, "admission_seconds": 60}  # borrowers spared for an hour at first
        quotas("a100-80gb", {"rnd": 20}, {"train": 8, "vision": 8, "label": {"deserved": 0, "limit": 4}}, **late)
        seen = {"passes": 0, "violations": []}

        def after_pass(sender=None, **kwargs):
            if getattr(sender, "name", "") == "quotas.tasks.admission_pass":
                seen["passes"] += 1
                seen["violations"] += invariants(server)

        task_postrun.connect(after_pass, weak=False)
        try:
            yield server, users, seen
        finally:
            task_postrun.disconnect(after_pass)


def reclaimed(project: str, using: int, fair: int, by: str, by_project: str, why: str) -> str:
    return (
        f"preempted: project {project} was using {using} A100 GPUs over quota (deserved 0 A100 GPUs, fair share "
        f"{fair} A100 GPUs); reclaimed for workflow {by} of project {by_project}, {why}"
    )


OWNER = "which is within its guaranteed quota"
FAIR = "which stays within its fair share (reclaim toward fair share)"


def test_seed_replay(seed, django_capture_on_commit_callbacks):
    server, users, seen = seed
    capture = django_capture_on_commit_callbacks

    def submit(project: str, name: str, gpus: int, platform: str) -> str:
        return gc.submit_gpus(users[project], name, gpus, platform, capture).workflow_id

    def submit_tasks(project: str, name: str, tasks: list) -> str:
        with capture(execute=True):
            return submit_workflow(
                SubmitRequest(pool="gpu", spec=gang_spec(name, tasks), who=users[project])
            ).workflow_id

    def periodic_pass(now) -> None:
        """The periodic pass as the clock `now` stands (the node pools' admission_seconds say which are due)."""
        with capture(execute=True):
            pass_all(now)
        seen["passes"] += 1
        seen["violations"].extend(invariants(server))

    def status(*ids: str) -> dict:
        return {w.workflow_id: (w.status, w.preemptible) for w in Workflow.objects.filter(workflow_id__in=ids)}

    def preemption(workflow_id: str) -> tuple:
        reason = Workflow.objects.get(workflow_id=workflow_id).preemption
        return reason["by"], reason["strategy"], reason["node_pool"], reason["text"]

    def waits(workflow_id: str) -> tuple:
        reason = Workflow.objects.get(workflow_id=workflow_id).queue_reason
        return reason["code"], reason["text"]

    def api(project: str) -> APIClient:
        client = APIClient()
        client.force_authenticate(users[project])
        return client

    # 1. a platform without selector (`any`) is charged to the Default and lands on a V100, never on an A100
    #    (kubesim binds to the first fitting node by name: an escaped pod would take a100-40-node-0)
    anywhere = submit("label", "anywhere", 4, "any")
    assert status(anywhere) == {anywhere: (Q.WAITING, False)}
    pod = Workflow.objects.get(workflow_id=anywhere).tasks.get().pod_name
    assert wait_until(lambda: bound_pods(server, gc.NAMESPACE).get(pod), timeout=30) == "v100-node-0"
    assert seen["violations"] == [], seen["violations"]  # the invariants held after every pass so far

    # 2. per-task charging: the lead on the Default, the worker on a100-80gb, each counted in its own node pool
    mixed = submit_tasks("label", "mixed", [("lead", 1, "any"), ("worker", 4, "a100-80")])
    assert {t.name: t.node_pool for t in Workflow.objects.get(workflow_id=mixed).tasks.all()} == {
        "lead": DEFAULT,
        "worker": "a100-80gb",
    }
    assert (shown(DEFAULT)["label"]["allocated"], shown("a100-80gb")["label"]["allocated"]) == (5, 4)
    with capture(execute=True):
        cancel(mixed)
    assert (shown(DEFAULT)["label"]["allocated"], shown("a100-80gb")["label"]["allocated"]) == (4, 0)
    assert seen["violations"] == [], seen["violations"]  # the invariants held after every pass so far

    # 3. ML-Ops borrows R&D's idle a100-80gb: all five preemptible (it deserves none there)
    borrowed = [submit("infer", f"infer-b{i}", 4, "a100-80") for i in range(5)]
    assert set(status(*borrowed).values()) == {(Q.WAITING, True)}
    started_minutes_ago(*borrowed)  # minutes old: the node pool's minimum runtime (an hour) spares them
    assert seen["violations"] == [], seen["violations"]  # the invariants held after every pass so far

    # 4. R&D takes back what it owns. train (within its deserved 8) waits while the borrowers are younger than
    #    the node pool's min_runtime_seconds; the admin lowers it, and the next periodic pass (admission_seconds
    #    later) reclaims: project reclaim (DESERVED), then build (deserves none) takes quota R&D holds but has
    #    not split among its projects (DEPARTMENT reclaim)
    train = submit("train", "train-o0", 4, "a100-80")
    assert waits(train) == (
        "NO_CAPACITY",
        "project train: 0 of 8 guaranteed A100 GPUs in use; asks for 4, 0 free in node pool a100-80gb; "
        "position 1 in the queue",
    )
    set_settings("a100-80gb", min_runtime_seconds=0)
    periodic_pass(timezone.now())  # not due yet: its last pass was just now
    assert status(train) == {train: (Q.QUEUED, False)}
    periodic_pass(timezone.now() + timedelta(seconds=61))  # one admission period later
    assert status(train) == {train: (Q.WAITING, False)}
    build = submit("build", "build-o0", 4, "a100-80")
    assert status(build) == {build: (Q.WAITING, True)}  # above build's own guarantee: a sibling may take it back
    assert preemption("infer-b4-1") == (
        train,
        "deserved",
        "a100-80gb",
        reclaimed("infer", 20, 16, train, "train", OWNER),
    )
    assert preemption("infer-b3-1") == (
        build,
        "department",
        "a100-80gb",
        reclaimed("infer", 16, 12, build, "build", "whose department rnd is within its guaranteed quota"),
    )
    assert seen["violations"] == [], seen["violations"]  # the invariants held after every pass so far

    # 5. two borrowers of ML-Ops' idle a100-40gb (weights 1:1, fair share 10 each): nlp reclaims from vision
    #    toward its fair share, and stops there; vision keeps its own (no back and forth)
    vision_b = [submit("vision", f"vision-b{i}", 4, "a100-40") for i in range(5)]
    started_minutes_ago(*vision_b)
    nlp_b = [submit("nlp", f"nlp-b{i}", 4, "a100-40") for i in range(3)]
    assert preemption("vision-b4-1") == (
        nlp_b[0],
        "fair_share",
        "a100-40gb",
        reclaimed("vision", 20, 16, nlp_b[0], "nlp", FAIR),
    )
    assert preemption("vision-b3-1") == (
        nlp_b[1],
        "fair_share",
        "a100-40gb",
        reclaimed("vision", 16, 12, nlp_b[1], "nlp", FAIR),
    )
    assert waits(nlp_b[2]) == (
        "FAIR_SHARE",
        "project nlp: 8 A100 GPUs in use, 0 guaranteed; 0 free to borrow; position 1 in the queue",
    )
    assert [(shown("a100-40gb")[p]["allocated"], shown("a100-40gb")[p]["fair_share"]) for p in ("vision", "nlp")] == [
        (12, 10),
        (8, 10),
    ]
    assert seen["violations"] == [], seen["violations"]  # the invariants held after every pass so far

    # 6. ML-Ops' owners take a100-40gb back (each within its deserved: non-preemptible)
    with capture(execute=True):
        cancel(nlp_b[2])
    owners = [submit(p, f"{p}-o{i}", 4, "a100-40") for p, i in (("infer", 0), ("infer", 1), ("serve", 0))]
    owners += [submit("serve", "serve-o1", 4, "a100-40"), submit("monitor", "monitor-o0", 4, "a100-40")]
    assert set(status(*owners).values()) == {(Q.WAITING, False)}
    taken = {w: preemption(w)[:3] for w in (*vision_b[:3], *nlp_b[:2])}
    # nlp's two are taken by infer-o1 and serve-o1, the one that lost less work first: which of the two ran for
    # less is the simulated cluster's timing (start times a second apart either way on a busy machine)
    nlp_takers = {taken.pop("nlp-b0-1"), taken.pop("nlp-b1-1")}
    assert nlp_takers == {("infer-o1-1", "deserved", "a100-40gb"), ("serve-o1-1", "deserved", "a100-40gb")}
    assert taken == {
        "vision-b2-1": ("infer-o0-1", "deserved", "a100-40gb"),
        "vision-b1-1": ("serve-o0-1", "deserved", "a100-40gb"),
        "vision-b0-1": ("monitor-o0-1", "deserved", "a100-40gb"),
    }
    assert seen["violations"] == [], seen["violations"]  # the invariants held after every pass so far

    # 7. QUEUED in lists and REST; then priority orders the surplus: nlp, raised to 5, goes before vision
    late_vision, late_nlp = submit("vision", "vision-late", 4, "a100-40"), submit("nlp", "nlp-late", 4, "a100-40")
    listed = api("vision").get("/api/workflow").json()["workflows"]
    assert {w["workflow_id"]: w["status"] for w in listed}[late_vision] == "QUEUED"
    assert api("vision").get(f"/api/workflow/{late_vision}").json()["status"] == "QUEUED"
    out = StringIO()
    call_command("workflow", "list", "--status", "QUEUED", stdout=out)
    assert {line.split()[0] for line in out.getvalue().splitlines()[1:]} == {late_vision, late_nlp}
    assert [Workflow.objects.get(workflow_id=w).queue_reason["position"] for w in (late_vision, late_nlp)] == [1, 2]
    call_command("team", "update", "nlp", "--priority", "5", stdout=StringIO())
    periodic_pass(timezone.now() + timedelta(hours=1))
    assert [Workflow.objects.get(workflow_id=w).queue_reason["position"] for w in (late_vision, late_nlp)] == [2, 1]
    with capture(execute=True):
        cancel("monitor-o0-1")  # 4 GPUs of ML-Ops' guarantee idle: the surplus
    assert status(late_vision, late_nlp) == {late_vision: (Q.QUEUED, False), late_nlp: (Q.WAITING, True)}
    assert seen["violations"] == [], seen["violations"]  # the invariants held after every pass so far

    # 8. refused, with the reason, writing nothing: a colliding node-pool label, a task no node holds, a request
    #    above the hard limit, a scheduler's label, an NVIDIA runtime variable
    with pytest.raises(ConfigError, match="node pool a100-80gb already selects these nodes"):
        store.apply(
            "NODE_POOL",
            "a100-80gb-again",
            {"backend": "sim", "selector": store.show("NODE_POOL", "a100-80gb")["selector"]},
            gc.CLI,
        )
    before = Workflow.objects.count()
    refusals = {
        "too big": (
            gang_spec("huge", [("giant", 8, "a100-80")]),
            "task giant asks 8 gpu; the largest node of node pool a100-80gb offers 4",
        ),
        "limit": (
            gang_spec("greedy", [("a", 4, "a100-80"), ("b", 4, "a100-80")]),
            "project label's hard limit there is 4",
        ),
    }
    for document, reason in refusals.values():
        answer = api("label").post("/api/pool/gpu/workflow", document, format="json")
        assert answer.status_code == 400 and reason in json.dumps(answer.json()), answer.json()
    labelled = gc.spec("sneaky", 4, "v100")
    labelled["workflow"]["labels"] = {"kai.scheduler/queue": "rnd-train"}
    answer = api("label").post("/api/pool/gpu/workflow", labelled, format="json")
    assert answer.status_code == 400 and answer.json()["value"] == "kai.scheduler/queue", answer.json()
    assert "set only by the portal" in answer.json()["reason"]
    sees_all = gc.spec("sees-all", 0, "v100")
    sees_all["workflow"]["tasks"][0]["environment"] = {"NVIDIA_VISIBLE_DEVICES": "all"}
    answer = api("label").post("/api/pool/gpu/workflow", sees_all, format="json")
    assert answer.status_code == 400 and answer.json()["value"] == "NVIDIA_VISIBLE_DEVICES", answer.json()
    assert Workflow.objects.count() == before
    assert seen["violations"] == [], seen["violations"]  # the invariants held after every pass so far

    # the end: every workflow's state, every preemption, every pod on its own node pool's nodes
    assert {w.workflow_id: (w.status, w.preemptible, w.node_pool) for w in Workflow.objects.all()} == END
    assert set(Workflow.objects.exclude(preemption={}).values_list("workflow_id", flat=True)) == PREEMPTED
    running = [t.pod_name for t in Task.objects.filter(workflow__status=Q.WAITING)]
    wait_until(lambda: set(running) <= set(bound_pods(server, gc.NAMESPACE)), timeout=30)
    assert assert_no_pod_outside_its_node_pool(server, gc.NAMESPACE) == len(running)
    assert not invariants(server)
    assert seen["passes"] > 10 and seen["violations"] == []


PREEMPTED = {"infer-b4-1", "infer-b3-1", *(f"vision-b{i}-1" for i in range(5)), "nlp-b0-1", "nlp-b1-1"}
END = {  # workflow → (status, preemptible, node pool of its lead task); pods never finish (kubesim/never-finish)
    "anywhere-1": ("WAITING", False, "sim-default"),
    "mixed-1": ("CANCELLED", True, "sim-default"),
    "infer-b0-1": ("WAITING", True, "a100-80gb"),
    "infer-b1-1": ("WAITING", True, "a100-80gb"),
    "infer-b2-1": ("WAITING", True, "a100-80gb"),
    "infer-b3-1": ("FAILED_PREEMPTED", True, "a100-80gb"),
    "infer-b4-1": ("FAILED_PREEMPTED", True, "a100-80gb"),
    "train-o0-1": ("WAITING", False, "a100-80gb"),
    "build-o0-1": ("WAITING", True, "a100-80gb"),
    "vision-b0-1": ("FAILED_PREEMPTED", True, "a100-40gb"),
    "vision-b1-1": ("FAILED_PREEMPTED", True, "a100-40gb"),
    "vision-b2-1": ("FAILED_PREEMPTED", True, "a100-40gb"),
    "vision-b3-1": ("FAILED_PREEMPTED", True, "a100-40gb"),
    "vision-b4-1": ("FAILED_PREEMPTED", True, "a100-40gb"),
    "nlp-b0-1": ("FAILED_PREEMPTED", True, "a100-40gb"),
    "nlp-b1-1": ("FAILED_PREEMPTED", True, "a100-40gb"),
    "nlp-b2-1": ("CANCELLED", False, "a100-40gb"),
    "infer-o0-1": ("WAITING", False, "a100-40gb"),
    "infer-o1-1": ("WAITING", False, "a100-40gb"),
    "serve-o0-1": ("WAITING", False, "a100-40gb"),
    "serve-o1-1": ("WAITING", False, "a100-40gb"),
    "monitor-o0-1": ("CANCELLED", False, "a100-40gb"),
    "vision-late-1": ("QUEUED", False, "a100-40gb"),
    "nlp-late-1": ("WAITING", True, "a100-40gb"),
}
