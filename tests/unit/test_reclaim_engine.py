"""Reclaim (pools.engine.reclaim): victim choice, and no oscillation over replayed admission passes."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from pools.engine.fairshare import fair_shares
from pools.engine.quota_model import QuotaTree, Resources
from pools.engine.quota_pass import PassResult, PoolState, QueuedWorkflow
from pools.engine.reclaim import ReclaimContext, RunningWorkflow, choose_victims
from tests.unit.quota_builders import G, Replay, quota_trees, tree

TREE = tree(
    {"rnd": (16,), "mlops": (0,)},
    {"vision": ("rnd", 12), "nlp": ("rnd", 4), "infer": ("mlops", 0), "serve": ("mlops", 0)},
)


def context(running, queued_requests, *, min_runtime=0, t: QuotaTree = TREE, capacity=16) -> ReclaimContext:
    allocated = {p.name: Resources() for p in t.projects}
    for w in running:
        allocated[w.project] = allocated[w.project] + w.usage
    requests = {name: allocated[name] + G(queued_requests.get(name, 0)) for name in allocated}
    shares = fair_shares(G(capacity), t, requests)
    deserved = {p.name: G(p.quota("gpu").deserved) for p in t.projects}
    return ReclaimContext(G(capacity), shares, deserved, allocated, min_runtime)


def r(id_, project, gpus, runtime, preemptible=True) -> RunningWorkflow:
    return RunningWorkflow(id_, project, G(gpus), preemptible, runtime)


def victims(need, running, *, queued=None, **options) -> list[str] | None:
    chosen = choose_victims(G(need), "new", "vision", running, context(running, queued or {"vision": need}, **options))
    return None if chosen is None else [v.workflow for v in chosen]


def strategy_context(strategy, running, queued_requests, t: QuotaTree, capacity: int) -> ReclaimContext:
    base = context(running, queued_requests, t=t, capacity=capacity)
    department_of = {p.name: p.department for p in t.projects}
    department_allocated = {d.name: Resources() for d in t.departments}
    for name, usage in base.allocated.items():
        department_allocated[department_of[name]] += usage
    return replace(
        base,
        strategy=strategy,
        department_of=department_of,
        department_deserved={d.name: G(d.quota("gpu").deserved) for d in t.departments},
        department_allocated=department_allocated,
    )


def test_the_victims_that_lose_the_fewest_gpu_hours():
    running = [
        r("i-old", "infer", 4, 900),
        r("i-new", "infer", 4, 100),
        r("i-mid", "infer", 2, 500),
        r("s", "serve", 2, 10),
    ]
    # every one is above its project's deserved 0; 4 GPUs cost i-new 400 GPU-seconds, the cheapest whole cover
    assert victims(4, running, queued={"vision": 12}) == ["i-new"]
    # 6 GPUs: serve's young 2 + i-new (420 GPU-seconds) would be cheaper, but serve holds only its fair share
    # of 2: victims whose project keeps its fair share come first, infer's i-new + i-mid (1,400)
    assert victims(6, running, queued={"vision": 12}) == ["i-new", "i-mid"]
    # when those cannot free the need, any over-quota victim, the fewest GPU-hours: s + i-new + i-old (4,020
    # GPU-seconds), not i-new + i-mid + i-old (5,000)
    assert victims(10, running, queued={"vision": 12}) == ["s", "i-new", "i-old"]


def test_an_old_exact_fit_beats_a_young_workflow_twice_too_big():
    # youngest-first would stop the 8-GPU one (8 × 100 = 800 GPU-seconds); the 4-GPU one loses 4 × 150 = 600
    running = [r("big-young", "infer", 8, 100), r("small-old", "infer", 4, 150)]
    assert victims(4, running) == ["small-old"]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.integers(1, 6), st.integers(0, 2000)), min_size=1, max_size=7),
    st.integers(1, 12),
)
def test_no_victim_set_of_the_same_candidates_is_cheaper_when_one_workflow_suffices(workflows, need):
    # against brute force: the choice is never beaten by a single workflow, and is never dearer than
    # youngest-first (the rule it replaces)
    running = [r(f"w{i}", "infer", gpus, runtime) for i, (gpus, runtime) in enumerate(workflows)]
    t = tree({"rnd": (16,), "mlops": (0,)}, {"vision": ("rnd", 16), "infer": ("mlops", 0)})
    chosen = victims(need, running, t=t, queued={"vision": 16})  # infer's fair share is 0: any may go
    if sum(g for g, _ in workflows) < need:
        assert chosen is None
        return
    cost = {w.id: w.usage.gpu * w.runtime_seconds for w in running}
    total = sum(cost[c] for c in chosen)
    assert sum(w.usage.gpu for w in running if w.id in chosen) >= need
    assert all(total <= cost[w.id] for w in running if w.usage.gpu >= need)
    youngest, freed = [], 0
    for w in sorted(running, key=lambda w: (w.runtime_seconds, w.id)):
        if freed < need:
            youngest.append(w.id)
            freed += w.usage.gpu
    assert total <= sum(cost[c] for c in youngest)


def test_just_enough_drops_victims_the_others_cover():
    # infer's youngest (1 GPU) goes first, then serve's 8 covers the need alone: the 1-GPU victim is spared
    running = [r("i-big", "infer", 6, 900), r("i-small", "infer", 1, 10), r("s", "serve", 8, 50)]
    assert victims(8, running, queued={"vision": 12}) == ["s"]


def test_min_runtime_protects_young_workflows():
    running = [r("young", "infer", 8, 30), r("old", "infer", 8, 600)]
    assert victims(8, running, min_runtime=60) == ["old"]
    assert victims(16, running, min_runtime=60) is None  # not enough: nothing is stopped


def test_never_non_preemptible_never_own_project_never_a_project_within_deserved():
    running = [
        r("guaranteed", "infer", 4, 900, preemptible=False),
        r("mine", "vision", 4, 900),
        r("nlp-at-deserved", "nlp", 4, 900),  # preemptible but nlp is not above its deserved 4
    ]
    assert victims(4, running) is None


def test_victims_carry_their_reason():
    running = [r("i", "infer", 8, 900)]
    [victim] = choose_victims(G(8), "new", "vision", running, context(running, {"vision": 8}))
    assert victim.reason == {
        "code": "RECLAIMED",
        "strategy": "deserved",
        "project": "infer",
        "resource": "gpu",
        "allocated": 8,
        "deserved": 0,
        "fair_share": 8,
        "usage": 8,
        "runtime_seconds": 900,
        "preemptor": "new",
        "preemptor_project": "vision",
        "text": victim.text,
    }
    assert victim.preemptor == "new" and victim.usage == G(8)


# ---------------------------------------------------------------------------------------------- no oscillation


def test_the_seed_scenario_replays_to_a_fixpoint_without_preempting_back():
    # ML-Ops borrows the whole R&D pool; then R&D's owner submits and reclaims it.
    t = tree(
        {"rnd": (20,), "mlops": (0,)},
        {"vision": ("rnd", 16), "nlp": ("rnd", 4), "infer": ("mlops", 0), "serve": ("mlops", 0)},
    )
    borrowers = tuple(QueuedWorkflow(f"i{n}", "infer", G(4), n) for n in range(4)) + (
        QueuedWorkflow("s0", "serve", G(4), 5),
    )
    replay = Replay(PoolState("a100-80", G(20), t, queued=borrowers)).run()
    assert {w.id for w in replay.state.running} == {"i0", "i1", "i2", "i3", "s0"}
    owners = (QueuedWorkflow("v0", "vision", G(8), 10), QueuedWorkflow("v1", "vision", G(8), 11))
    replay.state = PoolState("a100-80", G(20), t, replay.state.running, owners)
    replay.run()
    running = {w.id: w.preemptible for w in replay.state.running}
    assert running["v0"] is False and running["v1"] is False
    # fair shares with the owner back: vision 16, the 4 left split by ML-Ops' projects 2 : 2. infer (16 in
    # use) is furthest above its share: all four go (same age, same GPU-hours: by id); serve keeps its 4
    assert sorted(replay.preemptions) == [("i0", "v0"), ("i1", "v0"), ("i2", "v1"), ("i3", "v1")]
    # rescheduled work is queued again with its submission time (the queue timeout counts from it)
    assert {w.id: w.submitted for w in replay.state.queued} == {"i0": 0, "i1": 1, "i2": 2, "i3": 3}
    assert_no_oscillation(replay)


def assert_no_oscillation(replay: Replay) -> None:
    victims_ = [victim for victim, _ in replay.preemptions]
    assert len(victims_) == len(set(victims_)), f"a workflow was preempted twice: {replay.preemptions}"
    pairs = set(replay.preemptions)
    assert not any((b, a) in pairs for a, b in pairs), f"two workflows preempted each other: {pairs}"


@st.composite
def replays(draw):
    t, _ = draw(quota_trees(max_departments=3, max_projects=3, weight_zero=False, limits=draw(st.booleans())))
    names = [p.name for p in t.projects]
    least = min(p.quota("gpu").deserved for p in t.projects)
    borrowers = [p.name for p in t.projects if p.quota("gpu").deserved == least]
    # capacity near the guarantees, work in waves: borrowers fill the pool, owners come back and reclaim
    capacity = max(4, sum(d.quota("gpu").deserved for d in t.departments) + draw(st.integers(-4, 8)))
    waves = []
    for wave in range(draw(st.integers(2, 3))):
        # first the borrowers (least guaranteed), then anyone: owners come back and reclaim
        pick = borrowers if wave == 0 else names
        senders = draw(st.lists(st.sampled_from(pick), min_size=1, max_size=3, unique=True))
        waves.append(
            tuple(
                QueuedWorkflow(
                    f"w{wave}-{i}", draw(st.sampled_from(senders)), G(draw(st.integers(1, 6))), wave * 100 + i
                )
                for i in range(draw(st.integers(1, 12)))
            )
        )
    return PoolState("p", G(capacity), t, over_quota=True, min_runtime_seconds=draw(st.sampled_from([0, 120]))), waves


def check_invariants(state: PoolState, result: PassResult) -> None:
    """After every pass: the promises the pass keeps (docs/admission.md, "Reclaim")."""
    t = state.tree
    deserved = {team.name: team.quota("gpu").deserved for team in (*t.departments, *t.projects)}
    department_of = {p.name: p.department for p in t.projects}
    demand = {w.id: w.demand.gpu for w in state.queued}
    locked: dict[str, int] = {}
    for workflow in state.running:
        if not workflow.preemptible and workflow.id not in {v.workflow for v in result.preempted}:
            locked[workflow.project] = locked.get(workflow.project, 0) + workflow.usage.gpu
    for admission in result.admitted:
        if not admission.preemptible:
            locked[admission.project] = locked.get(admission.project, 0) + demand[admission.workflow]
    # non-preemptible allocation of each project and department ≤ its deserved quota
    for project, gpus in locked.items():
        assert gpus <= deserved[project], (project, gpus)
    for department in t.departments:
        gpus = sum(g for p, g in locked.items() if department_of[p] == department.name)
        assert gpus <= deserved[department.name], (department.name, gpus)
    # reclaim toward fair share keeps the ordering by saturation: the preemptor's project ends at or below its
    # fair share, the victim's at or above its own
    shares, after = result.shares["gpu"].projects, result.allocated_after
    for victim in result.preempted:
        assert victim.reason["runtime_seconds"] >= state.min_runtime_seconds
        if victim.reason["strategy"] == "fair_share":
            assert after[victim.project].gpu >= shares[victim.project].fair_share
            assert after[victim.preemptor_project].gpu <= shares[victim.preemptor_project].fair_share


@settings(max_examples=300, deadline=None)
@given(replays())
def test_replayed_passes_reach_a_fixpoint_and_never_preempt_back_and_forth(case):
    state, waves = case
    replay = Replay(state, after_pass=check_invariants)
    for wave in waves:  # work arrives in waves; between waves the passes run to a fixpoint
        replay.state = PoolState(
            state.name,
            state.capacity,
            state.tree,
            replay.state.running,
            replay.state.queued + wave,
            state.over_quota,
            state.min_runtime_seconds,
        )
        already = len(replay.preemptions)
        replay.run(max_passes=60)
        # from one arrival to its fixpoint (the fair shares stay put): no workflow is preempted twice, and no
        # two projects take from each other back and forth
        done = replay.preemptions[already:]
        victims_ = [victim for victim, _ in done]
        assert len(victims_) == len(set(victims_)), done
        project = {w.id: w.project for w in (*replay.state.running, *replay.state.queued)}
        pairs = {(project[victim], project[preemptor]) for victim, preemptor in done}
        assert not any((b, a) in pairs for a, b in pairs), pairs
        for workflow in replay.state.running:  # invariants at every fixpoint
            quota = next(p for p in state.tree.projects if p.name == workflow.project).quota("gpu")
            assert quota.limit is None or workflow.usage.gpu <= quota.limit
        assert sum(w.usage.gpu for w in replay.state.running) <= state.capacity.gpu
