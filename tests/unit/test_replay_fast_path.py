"""The admission loop's fast path (pools.engine.admission_loop: running totals kept as parts start and stop, quiet
node pools known from events, fair shares divided when first read) decides what a straightforward loop decides —
one that sums the running work each pass, digests each periodic pass's state (`state_fingerprint`) and divides
every fair share — on random small workloads: the same admissions, preemptions and figures."""

from __future__ import annotations

import dataclasses

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pools.engine.fairshare import fair_shares
from pools.engine.quota_model import Quota, QuotaTree, TeamQuota
from pools.engine.quota_pass import PassResult, PoolState, run_admission, state_fingerprint
from pools.engine.replay import Replay, ReplayInput, ReplayJob

POOLS = ("a", "b")
PROJECTS = ("p1", "p2", "p3", "p4")


class Straight(Replay):
    """The loop as it was: every pass from `running` alone, periodic passes skipped by the state's digest."""

    def state(self, pool: str) -> PoolState:
        return dataclasses.replace(super().state(pool), totals=None)

    def admit(self, pool: str, *, periodic: bool = False) -> None:
        if self.skip_idle and not self.queued[pool]:
            return
        for _ in range(3):
            state = self.state(pool)
            fingerprint = state_fingerprint(state)
            if periodic and self.digests.get(pool) == fingerprint:
                return
            result = run_admission(state)
            self.passes += 1
            changed = result.admitted or result.preempted
            self.digests[pool] = None if changed else fingerprint
            for victim in result.preempted:
                self.preempt(self.running[pool][victim.workflow])
            for admission in result.admitted:
                self.admit_part(pool, self.queued[pool][admission.workflow], admission.preemptible)
            if not result.preempted:
                return

    def run(self):
        self.digests: dict[str, int | None] = {}
        return super().run()


def same_as_summed(state: PoolState, result: PassResult) -> None:
    """Each fast pass: the kept totals are the running work's sums, the lazy shares the eager ones."""
    straight = run_admission(dataclasses.replace(state, totals=None))
    assert (straight.admitted, straight.held, straight.preempted) == (result.admitted, result.held, result.preempted)
    assert straight.allocated_before == result.allocated_before
    requests = dict(result.allocated_before)
    for workflow in state.queued:
        requests[workflow.project] = requests[workflow.project] + workflow.demand
    eager = fair_shares(state.capacity, state.tree, requests, over_quota=state.over_quota)
    assert dict(result.shares) == eager


def trees(deserved: list[int]) -> dict[str, QuotaTree]:
    found = {}
    for index, pool in enumerate(POOLS):
        projects = tuple(
            TeamQuota(name, {"gpu": Quota(deserved[(index * 4 + i) % len(deserved)])}, priority=i % 2, department="d")
            for i, name in enumerate(PROJECTS[:3])  # p4 has no quota: the team (none)
        )
        found[pool] = QuotaTree(
            (TeamQuota("d", {"gpu": Quota(sum(p.quota("gpu").deserved for p in projects))}),), projects
        )
    return found


job = st.tuples(
    st.sampled_from(PROJECTS),
    st.sampled_from(POOLS),
    st.integers(1, 6),  # GPUs
    st.booleans(),  # a second part in the other node pool
    st.integers(0, 4 * 3600),  # arrival
    st.one_of(st.none(), st.integers(60, 3 * 3600)),  # duration (None: it never ran)
    st.sampled_from(("HIGH", "NORMAL", "LOW")),
)


def as_replay_jobs(jobs: list[tuple]) -> tuple[ReplayJob, ...]:
    """The drawn `job` tuples as replay jobs: one GPU in the other pool too when `two`."""
    return tuple(
        ReplayJob(
            f"w{index}",
            project,
            {pool: gpus, **({POOLS[1 - POOLS.index(pool)]: 1} if two else {})},
            arrival,
            duration,
            priority,
            cancel_after=1800,
        )
        for index, (project, pool, gpus, two, arrival, duration, priority) in enumerate(jobs)
    )


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    jobs=st.lists(job, min_size=1, max_size=40),
    deserved=st.lists(st.integers(0, 6), min_size=3, max_size=6),
    capacity=st.tuples(st.integers(0, 16), st.integers(0, 16)),
    min_runtime=st.sampled_from((0, 300, 900)),
)
def test_the_fast_loop_admits_what_a_straightforward_one_does(jobs, deserved, capacity, min_runtime):
    replay_jobs = as_replay_jobs(jobs)
    given_input = ReplayInput(
        replay_jobs,
        dict(zip(POOLS, capacity, strict=True)),
        trees(deserved),
        4 * 3600,
        period=60,
        min_runtime_seconds=min_runtime,
    )
    fast = Replay(given_input, same_as_summed).run()
    straight = Straight(given_input).run()
    assert fast.admissions() == straight.admissions()
    assert {j.id: (j.ended, j.preemptions, j.cancelled) for j in fast.jobs.values()} == {
        j.id: (j.ended, j.preemptions, j.cancelled) for j in straight.jobs.values()
    }
    assert fast.figures() == straight.figures()
    # never skips a periodic pass the digest would not (it may pass a state changed and changed back: a pass
    # that decides nothing)
    assert fast.passes >= straight.passes
