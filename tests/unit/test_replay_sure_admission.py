"""The admission loop's sure admissions (pools.engine.admission_loop `sure_admission`: one queued part that fits,
admitted without running the pass) decide what a straightforward loop decides — every pass run, its running work
summed, every fair share divided — on random small workloads, over trees with and without limits, weights 0 and
never-lending quotas (where the loop must run the pass)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pools.engine.quota_model import Quota, QuotaTree, TeamQuota
from pools.engine.replay import Replay, ReplayInput, ReplayJob
from tests.unit.test_replay_fast_path import POOLS, PROJECTS, Straight, as_replay_jobs, job

quota = st.tuples(
    st.integers(0, 6),  # deserved
    st.one_of(st.none(), st.integers(0, 4)),  # limit, above deserved
    st.sampled_from((0, 1, 2)),  # over-quota weight
    st.booleans(),  # lends its unused deserved
)


def trees(quotas: list[tuple], plain: bool) -> dict[str, QuotaTree]:
    """Node pool a: every team plain (no limit, weight 1, lends); node pool b: as drawn unless `plain`."""
    found = {}
    for index, pool in enumerate(POOLS):
        projects = []
        for i, name in enumerate(PROJECTS[:3]):  # p4 has no quota: the team (none)
            deserved, above, weight, lend = quotas[(index * 3 + i) % len(quotas)]
            limit = None if above is None else deserved + above
            if pool == "a" or plain:
                limit, weight, lend = None, 1, True
            gpu = Quota(deserved, limit=limit, weight=weight, lend=lend)
            projects.append(TeamQuota(name, {"gpu": gpu}, priority=i % 2, department="d"))
        department = TeamQuota("d", {"gpu": Quota(sum(p.quota("gpu").deserved for p in projects))})
        found[pool] = QuotaTree((department,), tuple(projects))
    return found


class Counted(Replay):
    """The loop as the what-if runs it (no check), counting the passes it ran in full."""

    def run(self):
        self.full = 0
        return super().run()

    def state(self, pool: str):
        self.full += 1
        return super().state(pool)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    jobs=st.lists(job, min_size=1, max_size=40),
    quotas=st.lists(quota, min_size=3, max_size=6),
    plain=st.booleans(),
    capacity=st.tuples(st.integers(0, 16), st.integers(0, 16)),
    min_runtime=st.sampled_from((0, 300, 900)),
)
def test_sure_admissions_are_the_passes_decisions(jobs, quotas, plain, capacity, min_runtime):
    replay_jobs = as_replay_jobs(jobs)
    given_input = ReplayInput(
        replay_jobs,
        dict(zip(POOLS, capacity, strict=True)),
        trees(quotas, plain),
        4 * 3600,
        period=60,
        min_runtime_seconds=min_runtime,
    )
    fast = Counted(given_input).run()
    straight = Straight(given_input).run()
    assert fast.admissions() == straight.admissions()
    assert {j.id: (j.ended, j.preemptions, j.cancelled) for j in fast.jobs.values()} == {
        j.id: (j.ended, j.preemptions, j.cancelled) for j in straight.jobs.values()
    }
    assert fast.figures() == straight.figures()
    assert fast.passes >= straight.passes


def test_a_job_that_fits_is_admitted_without_running_the_pass():
    plain = trees([(2, None, 1, True)], plain=True)
    jobs = (
        ReplayJob("within", "p1", {"a": 2}, 0, 600),  # within p1's deserved: non-preemptible
        ReplayJob("above", "p1", {"a": 4}, 10, 600),  # above it, room for it: preemptible
    )
    loop = Counted(ReplayInput(jobs, {"a": 8, "b": 8}, plain, 3600))
    report = loop.run()
    assert report.admissions() == {"within": 0, "above": 10}
    assert (loop.full, report.passes) == (0, 2)
    assert (loop.jobs["within"].preemptible, loop.jobs["above"].preemptible) == ({"a": False}, {"a": True})


def test_a_limited_node_pool_runs_the_pass():
    limited = trees([(2, 1, 1, True)], plain=False)  # limit 3
    jobs = (ReplayJob("over", "p1", {"b": 4}, 0, 600, cancel_after=60),)
    loop = Counted(ReplayInput(jobs, {"a": 8, "b": 8}, limited, 3600))
    report = loop.run()
    assert report.admissions() == {"over": None}  # held on its project's limit, by the pass
    assert loop.full == report.passes > 0
