"""Builders for the quota engine tests: trees from compact dicts, hypothesis strategies, and a replay loop
that applies admission passes until nothing changes (the no-oscillation proof)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from hypothesis import strategies as st

from pools.engine.quota_model import Quota, QuotaTree, Resources, TeamQuota
from pools.engine.quota_pass import PassResult, PoolState, QueuedWorkflow, run_admission
from pools.engine.reclaim import RunningWorkflow


def G(n: int) -> Resources:  # noqa: N802 - reads like a unit: G(8) = 8 GPUs
    return Resources(gpu=n)


def tree(departments: dict, projects: dict) -> QuotaTree:
    """departments: {name: (deserved, limit, weight)}; projects: {name: (department, deserved, limit, weight,
    priority)}; GPU quotas only (shorter tuples take the defaults)."""

    def quota(values):
        deserved, limit, weight = (*values, None, 1, 1)[:3] if len(values) == 1 else (*values, 1)[:3]
        return {"gpu": Quota(deserved, limit, weight)}

    return QuotaTree(
        departments=tuple(TeamQuota(name, quota(v)) for name, v in departments.items()),
        projects=tuple(
            TeamQuota(name, quota(v[1:4]), priority=v[4] if len(v) > 4 else 0, department=v[0])
            for name, v in projects.items()
        ),
    )


# ------------------------------------------------------------------------------------------- strategies


@st.composite
def quota_trees(
    draw, max_departments: int = 4, max_projects: int = 4, weight_zero: bool = True, limits: bool = True
) -> tuple[QuotaTree, dict[str, int]]:
    """A valid GPU quota tree (department deserved ≥ Σ its projects') and each project's request;
    `weight_zero=False`: every over-quota weight ≥ 1; `limits=False`: no limits."""
    departments, projects, requests = [], [], {}
    for d in range(draw(st.integers(1, max_departments))):
        project_quotas = []
        for p in range(draw(st.integers(1, max_projects))):
            deserved = draw(st.one_of(st.just(0), st.integers(0, 12)))  # many pure borrowers
            limit = draw(st.one_of(st.none(), st.integers(deserved, deserved + 16))) if limits else None
            quota = Quota(deserved, limit, draw(st.integers(0, 4) if weight_zero else st.integers(1, 4)))
            name = f"p{d}{p}"
            project_quotas.append(quota)
            projects.append(TeamQuota(name, {"gpu": quota}, priority=draw(st.integers(0, 2)), department=f"d{d}"))
            requests[name] = draw(st.integers(0, 30))
        deserved = sum(q.deserved for q in project_quotas) + draw(st.integers(0, 6))
        limit = draw(st.one_of(st.none(), st.integers(deserved, deserved + 30))) if limits else None
        weight = draw(st.integers(0, 4) if weight_zero else st.integers(1, 4))
        departments.append(TeamQuota(f"d{d}", {"gpu": Quota(deserved, limit, weight)}))
    return QuotaTree(tuple(departments), tuple(projects)), requests


# ------------------------------------------------------------------------------------------------ replay


@dataclass
class Replay:
    """Replays admission passes on one node pool: admitted workflows run (their runtime grows by `step`
    seconds per pass), victims go back to the queue (exit action RESCHEDULE). Nothing finishes."""

    state: PoolState
    step: int = 60
    preemptions: list[tuple[str, str]] = field(default_factory=list)  # (victim, preemptor)
    passes: int = 0
    submitted: dict[str, float] = field(default_factory=dict)
    after_pass: Callable[[PoolState, PassResult], None] | None = None  # invariant checks, after every pass

    def __post_init__(self) -> None:
        # a rescheduled workflow keeps its submission time: its place in the queue counts from it
        self.submitted = {w.id: w.submitted for w in self.state.queued}

    def run(self, max_passes: int = 50) -> Replay:
        for _ in range(max_passes):
            if not self.once():
                return self
        raise AssertionError(f"no fixpoint after {max_passes} passes")

    def once(self) -> bool:
        result = run_admission(self.state)
        self.passes += 1
        if self.after_pass:
            self.after_pass(self.state, result)
        admitted = {a.workflow: a for a in result.admitted}
        victims = {v.workflow: v for v in result.preempted}
        self.preemptions.extend((v.workflow, v.preemptor) for v in result.preempted)
        queued = {w.id: w for w in self.state.queued}
        running = [
            replace(w, runtime_seconds=w.runtime_seconds + self.step) for w in self.state.running if w.id not in victims
        ]
        running += [
            RunningWorkflow(w.workflow, w.project, queued[w.workflow].demand, w.preemptible, 0)
            for w in admitted.values()
        ]
        still = [w for w in self.state.queued if w.id not in admitted]
        still += [
            QueuedWorkflow(v.workflow, v.project, v.usage, self.submitted.get(v.workflow, 0.0))
            for v in victims.values()
        ]
        self.state = replace(self.state, running=tuple(running), queued=tuple(still))
        return bool(admitted or victims)
