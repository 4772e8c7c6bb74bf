"""One admission pass (pools.engine.quota_pass): worked examples, reasons, borrowing view, properties."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pools.engine.borrowing import Loan, borrowing_view
from pools.engine.errors import EngineError
from pools.engine.quota_model import Quota, QuotaTree, Resources, TeamQuota
from pools.engine.quota_pass import Admission, PoolState, QueuedWorkflow, run_admission
from pools.engine.reclaim import RunningWorkflow
from tests.unit.quota_builders import G, quota_trees, tree

# Seed 003's A100-80GB pool: 5 nodes × 4 GPUs, owned by R&D (vision 16 + nlp 4); ML-Ops deserves nothing here.
SEED_TREE = tree(
    {"rnd": (20,), "mlops": (0,)},
    {"vision": ("rnd", 16), "nlp": ("rnd", 4), "infer": ("mlops", 0), "serve": ("mlops", 0)},
)


def pool(running=(), queued=(), tree_=SEED_TREE, capacity=20, **options) -> PoolState:
    return PoolState("a100-80", G(capacity), tree_, tuple(running), tuple(queued), gpu_noun="A100 GPUs", **options)


def q(id_, project, gpus, submitted=0.0, priority="NORMAL") -> QueuedWorkflow:
    return QueuedWorkflow(id_, project, G(gpus), submitted, priority)


def r(id_, project, gpus, preemptible=True, runtime=600) -> RunningWorkflow:
    return RunningWorkflow(id_, project, G(gpus), preemptible, runtime)


def reasons(result) -> dict[str, str]:
    return {h.workflow: h.reason.text for h in result.held}


# ------------------------------------------------------------------------------------------------ examples


def test_others_borrow_the_idle_pool_preemptibly():
    result = run_admission(pool(queued=[q("i1", "infer", 8, 1), q("i2", "infer", 8, 2), q("s1", "serve", 4, 3)]))
    assert result.admitted == (
        Admission("i1", "infer", True),
        Admission("i2", "infer", True),
        Admission("s1", "serve", True),
    )
    assert result.held == () and result.preempted == ()


def test_the_owner_reclaims_its_pool_then_its_department_takes_back_the_rest():
    running = [r("i1", "infer", 8, runtime=900), r("i2", "infer", 8, runtime=300), r("s1", "serve", 4, runtime=60)]
    queued = [q("v1", "vision", 8, 1), q("v2", "vision", 8, 2), q("v3", "vision", 4, 3)]
    result = run_admission(pool(running, queued))
    assert result.admitted == ()
    # v1, v2 within vision's deserved 16; v3 takes vision to 20, above its 16, but R&D stays within its 20
    # (the issue's point 2: R&D's unsplit, unused guarantee is its projects' to take back from ML-Ops)
    assert [(v.workflow, v.preemptor) for v in result.preempted] == [("i2", "v1"), ("i1", "v2"), ("s1", "v3")]
    assert [v.reason["strategy"] for v in result.preempted] == ["deserved", "deserved", "department"]
    assert result.preempted[0].reason["code"] == "RECLAIMED"
    assert result.preempted[0].text == (
        "preempted: project infer was using 16 A100 GPUs over quota (deserved 0 A100 GPUs, fair share 0 A100 GPUs); "
        "reclaimed for workflow v1 of project vision, which is within its guaranteed quota"
    )
    assert result.preempted[2].text.endswith(
        "reclaimed for workflow v3 of project vision, whose department rnd is within its guaranteed quota"
    )
    held = {h.workflow: h.reason for h in result.held}
    assert held["v1"].code == "RECLAIMING" and held["v1"].victims == ("i2",)
    assert held["v3"].as_dict() | {"text": ""} == {
        "code": "RECLAIMING",
        "text": "",
        "scope": "department",
        "team": "rnd",
        "resource": "gpu",
        "demand": 4,
        "allocated": 16,
        "deserved": 20,
        "fair_share": 20,
        "limit": None,
        "free": 0,
        "borrowable": 0,
        "position": 3,
        "victims": ["s1"],
    }
    # once the victims are gone, the next pass admits the owner's work: within vision's deserved
    # non-preemptible, above it (the department's share) preemptible
    after = run_admission(pool([], queued))
    assert after.admitted == (
        Admission("v1", "vision", False),
        Admission("v2", "vision", False),
        Admission("v3", "vision", True),
    )


# Issue #30 point 2: R&D deserves 20 A100-80GB GPUs, its projects split 16 + 4, R&D uses 12, ML-Ops borrows 8.
RND_TREE = tree(
    {"rnd": (20,), "mlops": (0,)},
    {"vision": ("rnd", 16), "train": ("rnd", 4), "infer": ("mlops", 0), "serve": ("mlops", 0)},
)


def test_a_project_takes_back_its_departments_unused_guarantee_from_another_department():
    running = [
        r("v", "vision", 8, preemptible=False),
        r("t", "train", 4, preemptible=False),
        r("i1", "infer", 4, runtime=900),
        r("i2", "infer", 4, runtime=300),
    ]
    result = run_admission(pool(running, [q("t2", "train", 4, 1)], tree_=RND_TREE))
    # train goes above its own 4, R&D stays within its 20: ML-Ops' youngest borrower (fewest GPU-hours) goes
    assert [(v.workflow, v.reason["strategy"]) for v in result.preempted] == [("i2", "department")]
    [held] = result.held
    assert held.reason.code == "RECLAIMING" and held.reason.scope == "department"
    assert held.reason.text == (
        "department rnd: within its guaranteed quota (12 of 20 guaranteed A100 GPUs in use); preempting 1 "
        "over-quota workflow(s) of other projects to free 4 A100 GPUs; position 1 in the queue"
    )
    # next pass: admitted preemptible (above train's own deserved); vision may take it back, ML-Ops may not
    after = run_admission(pool(running[:3], [q("t2", "train", 4, 1)], tree_=RND_TREE))
    assert after.admitted == (Admission("t2", "train", True),)
    back = [*running[:3], r("t2", "train", 4)]
    again = run_admission(pool(back, [q("i2", "infer", 4, 0), q("v2", "vision", 8, 2)], tree_=RND_TREE))
    assert [(v.workflow, v.preemptor) for v in again.preempted] == [("t2", "v2"), ("i1", "v2")]


def test_a_department_guarantee_not_split_among_its_projects_is_its_projects_to_take_back():
    unsplit = tree(
        {"rnd": (20,), "mlops": (0,)},
        {"vision": ("rnd", 12), "train": ("rnd", 4), "infer": ("mlops", 0)},
    )
    running = [r("v", "vision", 12, preemptible=False), r("t", "train", 4, False), r("i", "infer", 4)]
    result = run_admission(pool(running, [q("t2", "train", 4, 1)], tree_=unsplit))
    assert [(v.workflow, v.preemptor, v.reason["strategy"]) for v in result.preempted] == [("i", "t2", "department")]
    # a department at its guarantee takes nothing back: train would take R&D to 24 of 20
    full = [r("v", "vision", 16, preemptible=False), r("t", "train", 4, False), r("i", "infer", 4)]
    nothing = run_admission(pool(full, [q("t2", "train", 4, 1)], tree_=unsplit, capacity=24))
    assert nothing.preempted == () and nothing.held[0].reason.code == "FAIR_SHARE"


def test_reclaim_toward_fair_share_between_two_borrowers():
    # Issue #30 point 3, on the Default V100 pool: nobody deserves anything; departments weigh 3 : 2, so of 80
    # GPUs R&D's build gets 48 and ML-Ops' monitor 32. build holds 60, monitor 20 and wants 16 more.
    borrowers = tree({"rnd": (0, None, 3), "mlops": (0, None, 2)}, {"build": ("rnd", 0), "monitor": ("mlops", 0)})
    running = [r(f"b{n}", "build", 4, runtime=600 + n) for n in range(15)]
    running += [r(f"m{n}", "monitor", 4, runtime=600) for n in range(5)]
    queued = [q(f"mq{n}", "monitor", 4, n) for n in range(4)]
    result = run_admission(pool(running, queued, tree_=borrowers, capacity=80))
    shares = result.shares["gpu"].projects
    assert (shares["build"].fair_share, shares["monitor"].fair_share) == (48, 32)
    # build keeps its fair share 48: 3 of its youngest go; monitor rises to its 32 and not beyond
    assert [(v.workflow, v.preemptor, v.reason["strategy"]) for v in result.preempted] == [
        ("b0", "mq0", "fair_share"),
        ("b1", "mq1", "fair_share"),
        ("b2", "mq2", "fair_share"),
    ]
    assert result.preempted[0].text.endswith("which stays within its fair share (reclaim toward fair share)")
    assert {h.workflow: h.reason.code for h in result.held} == {
        "mq0": "RECLAIMING",
        "mq1": "RECLAIMING",
        "mq2": "RECLAIMING",
        "mq3": "FAIR_SHARE",
    }
    assert (result.allocated_after["build"].gpu, result.allocated_after["monitor"].gpu) == (48, 32)
    assert result.held[0].reason.text == (
        "project monitor: 20 A100 GPUs in use, 0 guaranteed; within its fair share of 32: preempting 1 "
        "workflow(s) of projects above their fair share to free 4 A100 GPUs; position 1 in the queue"
    )
    # the minimum runtime protects young workflows: nothing old enough, nothing is stopped
    young = run_admission(pool(running, queued, tree_=borrowers, capacity=80, min_runtime_seconds=3600))
    assert young.preempted == () and young.held[0].reason.code == "NO_CAPACITY"


def test_reclaim_toward_fair_share_between_two_borrowers_of_one_department():
    # Seed 003's A100-40GB pool borrowed by R&D alone: its department is at its fair share (all 20), so a sibling's
    # reclaim only moves room inside it. vision holds 20, nlp asks 3 × 4: fair share 10 each
    owned = tree({"mlops": (20,), "rnd": (0,)}, {"infer": ("mlops", 20), "vision": ("rnd", 0), "nlp": ("rnd", 0)})
    running = [r(f"v{n}", "vision", 4, runtime=600 + n) for n in range(5)]
    queued = [q(f"n{n}", "nlp", 4, n) for n in range(3)]
    result = run_admission(pool(running, queued, tree_=owned, capacity=20))
    assert [(v.workflow, v.preemptor, v.reason["strategy"]) for v in result.preempted] == [
        ("v0", "n0", "fair_share"),
        ("v1", "n1", "fair_share"),
    ]
    assert {h.workflow: h.reason.code for h in result.held} == {
        "n0": "RECLAIMING",
        "n1": "RECLAIMING",
        "n2": "FAIR_SHARE",
    }
    assert (result.allocated_after["vision"].gpu, result.allocated_after["nlp"].gpu) == (12, 8)


def test_within_deserved_is_non_preemptible_and_above_it_preemptible():
    result = run_admission(pool(queued=[q("a", "nlp", 4, 1), q("b", "nlp", 4, 2)]))
    assert result.admitted == (Admission("a", "nlp", False), Admission("b", "nlp", True))


def test_over_quota_off_holds_work_above_deserved():
    result = run_admission(
        pool(queued=[q("a", "nlp", 4, 1), q("b", "nlp", 2, 2), q("c", "infer", 1, 3)], over_quota=False)
    )
    assert result.admitted == (Admission("a", "nlp", False),)
    off = "over-quota is off in node pool a100-80"
    assert reasons(result) == {
        "b": f"project nlp: 4 of 4 guaranteed A100 GPUs in use; {off}; position 1 in the queue",
        "c": f"project infer: 0 of 0 guaranteed A100 GPUs in use; {off}; position 2 in the queue",
    }


def test_limits_of_the_project_and_of_its_department_hold():
    t = tree({"rnd": (4, 6), "mlops": (0,)}, {"vision": ("rnd", 2, 5), "nlp": ("rnd", 2), "infer": ("mlops", 0)})
    result = run_admission(pool(queued=[q("a", "vision", 6, 1), q("b", "nlp", 6, 2), q("c", "nlp", 2, 3)], tree_=t))
    assert result.admitted == (Admission("c", "nlp", False),)
    held = {h.workflow: h.reason for h in result.held}
    assert (held["a"].code, held["a"].scope, held["a"].limit) == ("LIMIT", "project", 5)
    assert (held["b"].code, held["b"].scope, held["b"].team, held["b"].limit) == ("LIMIT", "department", "rnd", 6)
    assert held["a"].text == (
        "project vision: limit of 5 A100 GPUs reached (0 in use, this workflow asks for 6); position 1 in the queue"
    )


def test_a_workflow_bigger_than_the_pool_says_so():
    result = run_admission(pool(queued=[q("huge", "vision", 32)]))
    assert reasons(result) == {
        "huge": "node pool a100-80: asks for 32 A100 GPUs, more than the node pool's 20 A100 GPUs; "
        "position 1 in the queue"
    }


def test_fair_share_bounds_borrowing_and_says_what_is_free_to_borrow():
    # infer and serve both want the idle 20; fair share 10 each (weights 1:1)
    queued = [q("i1", "infer", 8, 1), q("i2", "infer", 8, 2), q("s1", "serve", 10, 3)]
    result = run_admission(pool(queued=queued))
    assert result.admitted == (Admission("i1", "infer", True), Admission("s1", "serve", True))
    assert reasons(result) == {
        "i2": "project infer: 8 A100 GPUs in use, 0 guaranteed; 2 free to borrow; position 1 in the queue"
    }
    assert result.held[0].reason.code == "FAIR_SHARE"


def test_order_is_project_priority_then_workflow_priority_then_submission():
    t = tree({"d": (0,)}, {"low": ("d", 0), "high": ("d", 0, None, 1, 5)})
    queued = [q("a", "low", 1, 1), q("b", "low", 1, 2, "HIGH"), q("c", "high", 1, 3, "LOW"), q("d", "low", 1, 0)]
    result = run_admission(pool(queued=queued, tree_=t, capacity=0))
    assert [(h.workflow, h.reason.position) for h in result.held] == [("c", 1), ("b", 2), ("d", 3), ("a", 4)]


def test_a_guaranteed_workflow_that_cannot_reclaim_keeps_its_room_from_borrowers():
    # vision needs 8 within its deserved; only 4 free and the borrower has run too briefly to be reclaimed
    running = [r("i1", "infer", 16, runtime=10)]
    result = run_admission(pool(running, [q("v", "vision", 8, 1), q("s", "serve", 4, 2)], min_runtime_seconds=60))
    assert result.admitted == () and result.preempted == ()
    held = {h.workflow: h.reason for h in result.held}
    assert held["v"].code == "NO_CAPACITY"
    assert held["v"].text == (
        "project vision: 0 of 16 guaranteed A100 GPUs in use; asks for 8, 4 free in node pool a100-80; "
        "position 1 in the queue"
    )
    assert (held["s"].code, held["s"].free) == ("NO_CAPACITY", 0)


def test_unknown_project_is_an_error():
    with pytest.raises(EngineError, match="project has no quota in this node pool") as error:
        run_admission(pool(queued=[q("x", "ghost", 1)]))
    assert error.value.field == "workflows.x.project"


def test_cpu_and_memory_reasons_speak_cores_and_gib():
    t = QuotaTree(
        (TeamQuota("d", {"cpu": Quota(4000)}),),
        (TeamQuota("p", {"cpu": Quota(4000), "memory": Quota(0)}, department="d"),),
    )
    wf = QueuedWorkflow("w", "p", Resources(0, 1500, 0))
    state = PoolState(
        "cpu", Resources(0, 4500, 2**34), t, (RunningWorkflow("x", "p", Resources(0, 3500, 0), False),), (wf,)
    )
    assert run_admission(state).held[0].reason.text == (
        "project p: 3.5 of 4 guaranteed CPU cores in use; 0.5 free to borrow; position 1 in the queue"
    )


# ------------------------------------------------------------------------------------------------- borrowing


def test_borrowing_view_says_who_borrows_from_whom():
    running = [r("i1", "infer", 8), r("s1", "serve", 4), r("v1", "vision", 4, preemptible=False)]
    view = borrowing_view(run_admission(pool(running)))
    rows = {row.project: (row.deserved, row.allocated, row.borrowed, row.lent, row.idle) for row in view.rows}
    assert rows == {
        "infer": (0, 8, 8, 0, 0),
        "serve": (0, 4, 4, 0, 0),
        # 12 borrowed, nobody-guaranteed capacity 0: lent in proportion to the idle guarantees 12 : 4
        "vision": (16, 4, 0, 9, 3),
        "nlp": (4, 0, 0, 3, 1),
    }
    assert view.loans == (
        Loan("infer", "nlp", 2),
        Loan("infer", "vision", 6),
        Loan("serve", "nlp", 1),
        Loan("serve", "vision", 3),
    )


# ---------------------------------------------------------------------------------------------- properties


@st.composite
def pool_states(draw):
    t, _ = draw(quota_trees())
    names = [p.name for p in t.projects]
    capacity = draw(st.integers(0, 80))
    running, used = [], 0
    for i in range(draw(st.integers(0, 12))):
        gpus = draw(st.integers(1, 8))
        if used + gpus <= capacity:
            running.append(
                RunningWorkflow(
                    f"r{i}", draw(st.sampled_from(names)), G(gpus), draw(st.booleans()), draw(st.integers(0, 900))
                )
            )
            used += gpus
    queued = [
        QueuedWorkflow(
            f"q{i}",
            draw(st.sampled_from(names)),
            G(draw(st.integers(1, 10))),
            float(draw(st.integers(0, 50))),
            draw(st.sampled_from(["HIGH", "NORMAL", "LOW"])),
        )
        for i in range(draw(st.integers(0, 20)))
    ]
    return PoolState(
        "p", G(capacity), t, tuple(running), tuple(queued), draw(st.booleans()), draw(st.sampled_from([0, 300]))
    )


@settings(max_examples=150)
@given(pool_states())
def test_a_pass_respects_capacity_limits_and_guarantees(state):
    result = run_admission(state)
    before, after = result.allocated_before, result.allocated_after
    assert sum(a.gpu for a in after.values()) <= state.capacity.gpu
    guaranteed: dict[str, int] = {}
    demand = {w.id: w.demand.gpu for w in state.queued}
    for admission in result.admitted:
        if admission.preemptible:
            assert state.over_quota
        else:
            guaranteed[admission.project] = guaranteed.get(admission.project, 0) + demand[admission.workflow]
    strategy = {v.preemptor: v.reason["strategy"] for v in result.preempted}
    for hold in result.held:
        if hold.reason.code == "RECLAIMING" and strategy[hold.workflow] == "deserved":
            guaranteed[hold.project] = guaranteed.get(hold.project, 0) + demand[hold.workflow]
    reclaimed: dict[str, int] = {}
    for victim in result.preempted:
        reclaimed[victim.project] = reclaimed.get(victim.project, 0) + victim.usage.gpu
    for project in state.tree.projects:
        quota = project.quota("gpu")
        if project.name in guaranteed:  # non-preemptible work stays within deserved
            kept = before[project.name].gpu - reclaimed.get(project.name, 0)
            assert kept + guaranteed[project.name] <= quota.deserved
        if quota.limit is not None and before[project.name].gpu <= quota.limit:
            assert after[project.name].gpu <= quota.limit
    for department in state.tree.departments:
        limit = department.quota("gpu").limit
        members = [p.name for p in state.tree.projects_of(department.name)]
        if limit is not None and sum(before[m].gpu for m in members) <= limit:
            assert sum(after[m].gpu for m in members) <= limit
    for victim in result.preempted:
        running = next(w for w in state.running if w.id == victim.workflow)
        assert running.preemptible and running.runtime_seconds >= state.min_runtime_seconds
        assert victim.project != victim.preemptor_project
    assert {h.workflow for h in result.held} | {a.workflow for a in result.admitted} == {w.id for w in state.queued}
    assert sorted(h.reason.position for h in result.held) == list(range(1, len(result.held) + 1))


@settings(max_examples=100)
@given(pool_states(), st.randoms(use_true_random=False))
def test_same_inputs_same_answer_whatever_the_input_order(state, rng: random.Random):
    first = run_admission(state)
    shuffled = PoolState(
        state.name,
        state.capacity,
        state.tree,
        tuple(rng.sample(state.running, len(state.running))),
        tuple(rng.sample(state.queued, len(state.queued))),
        state.over_quota,
        state.min_runtime_seconds,
    )
    again = run_admission(shuffled)
    assert set(first.admitted) == set(again.admitted)
    assert set(first.held) == set(again.held)
    assert {v.workflow for v in first.preempted} == {v.workflow for v in again.preempted}
