"""The what-if replay (pools.engine.replay) over the admission loop the synthetic week runs: a period the
simulation produced, replayed with the same quotas, gives the same admissions; a raised quota moves the right way;
workflows across node pools start with their last part; one that never ran leaves the queue when it was cancelled."""

from __future__ import annotations

import dataclasses
import random

import pytest

from pools.engine.admission_loop import HOUR
from pools.engine.quota_model import Quota, QuotaTree, TeamQuota
from pools.engine.replay import ReplayInput, ReplayJob, replay
from pools.engine.simulation import CAPACITY, DEPARTMENTS, Simulation, Workload, seed_trees
from tests.unit.test_reclaim_engine import check_invariants

BUSY = Workload(seconds=6 * HOUR, seed=11, rates_per_hour=(8.0, 6.0, 4.0, 2.0))


class Recording(Simulation):
    """The simulation, keeping every job it submits."""

    def __init__(self, workload: Workload) -> None:
        super().__init__(workload)
        self.recorded = []

    def enqueue(self, job) -> None:
        self.recorded.append(job)
        super().enqueue(job)


def recorded_period(workload: Workload = BUSY) -> tuple[Recording, ReplayInput]:
    simulation = Recording(workload)
    simulation.run()
    order = [p for names in DEPARTMENTS.values() for p in names]  # the simulation's first arrivals' order
    jobs = tuple(
        ReplayJob(j.id, j.project, dict(j.parts), j.submitted, j.duration, j.priority)
        for j in sorted(simulation.recorded, key=lambda j: order.index(j.project))
    )
    given = ReplayInput(
        jobs,
        CAPACITY,
        seed_trees(),
        workload.seconds,
        period=workload.period,
        min_runtime_seconds=workload.min_runtime_seconds,
        drain_seconds=0,  # the simulation stops at the period's end
    )
    return simulation, given


def test_a_simulated_period_replayed_with_its_quotas_gives_the_same_admissions():
    simulation, given = recorded_period()
    report = replay(given, check_invariants)
    assert len(report.jobs) == len(simulation.recorded) > 200
    assert report.admissions() == {j.id: j.first_started for j in simulation.recorded}
    assert sum(row.preempted for row in report.projects.values()) > 0  # reclaim happened, and replays the same
    for name, row in simulation.rows.items():
        assert report.projects[name].preempted == row.preempted
        assert round(report.projects[name].used) == round(row.used)


def test_the_same_input_gives_the_same_report():
    _, given = recorded_period(dataclasses.replace(BUSY, seconds=2 * HOUR))
    assert replay(given).figures() == replay(given).figures()


def raised(trees: dict[str, QuotaTree], pool: str, project: str, gpus: int) -> dict[str, QuotaTree]:
    tree = trees[pool]
    projects = tuple(
        dataclasses.replace(p, quotas={"gpu": Quota(gpus)}) if p.name == project else p for p in tree.projects
    )
    return {**trees, pool: QuotaTree(tree.departments, projects)}


def tiny(jobs: tuple[ReplayJob, ...], gpus: int = 8, **kwargs) -> ReplayInput:
    departments = (TeamQuota("d", {"gpu": Quota(gpus)}),)
    projects = (
        TeamQuota("a", {"gpu": Quota(gpus // 2)}, department="d"),
        TeamQuota("b", {"gpu": Quota(gpus // 2)}, department="d"),
    )
    tree = QuotaTree(departments, projects)
    return ReplayInput(jobs, {"x": gpus, "y": gpus}, {"x": tree, "y": tree}, HOUR, min_runtime_seconds=0, **kwargs)


def test_a_workflow_across_node_pools_starts_with_its_last_part():
    jobs = (
        ReplayJob("fill", "b", {"y": 8}, 0, 600),  # y is full for ten minutes, past reclaim (minimum runtime 1 h)
        ReplayJob("both", "a", {"x": 2, "y": 2}, 10, 300),
    )
    report = replay(dataclasses.replace(tiny(jobs), min_runtime_seconds=HOUR), check_invariants)
    # its x part is admitted at once and holds its room; the workflow starts when its y part is, as `fill` ends
    assert report.jobs["both"].started == 600 and report.jobs["both"].ended == 900
    assert report.projects["a"].used == 4 * 300  # both parts' GPUs, for its duration
    # with no minimum runtime, `b`'s 4 GPUs above its deserved are reclaimed for it at once
    again = replay(tiny(jobs))
    assert again.jobs["both"].started == 10 and again.jobs["fill"].preemptions == 1


def test_a_workflow_that_never_ran_leaves_the_queue_when_it_was_cancelled():
    jobs = (
        ReplayJob("fill", "b", {"x": 8}, 0, 2 * HOUR),
        ReplayJob("gave-up", "b", {"x": 4}, 60, None, cancel_after=600),
    )
    report = replay(tiny(jobs, prices={"x": 2.0}))
    gave_up = report.jobs["gave-up"]
    assert gave_up.cancelled and gave_up.started is None and gave_up.ended == 660
    figures = report.figures()["b"]
    assert figures["never_started"] == 1 and figures["gpu_hours"] == 16.0 and figures["cost"] == 32.0
    # `a` held none of its 4 deserved GPUs in x nor in y over the hour: 8 GPU-hours of idle guarantee
    assert report.figures()["a"]["idle_guarantee_gpu_hours"] == 8.0


def contended_day(seed: int = 7) -> tuple[ReplayJob, ...]:
    """Node pool x (8 GPUs): `b` asks for twice the node pool, `a` now and then; one day."""
    rng, jobs = random.Random(seed), []
    for index in range(240):
        project = "a" if index % 6 == 0 else "b"
        jobs.append(ReplayJob(f"w{index}", project, {"x": rng.choice((1, 2, 4))}, index * 360, rng.randint(600, 7200)))
    return tuple(jobs)


def test_raising_a_quota_lowers_the_wait_and_keeps_the_gpu_hours():
    given = dataclasses.replace(tiny(contended_day()), seconds=24 * HOUR, min_runtime_seconds=600)
    tree = given.trees["x"]
    stingy = QuotaTree(tree.departments, (dataclasses.replace(tree.projects[0], quotas={"gpu": Quota(0)}),
                                          dataclasses.replace(tree.projects[1], quotas={"gpu": Quota(8)})))  # fmt: skip
    baseline = replay(dataclasses.replace(given, trees={**given.trees, "x": stingy}), check_invariants)
    proposed = replay(given, check_invariants)  # `a` deserves 4 of the 8 (and `b` 4)
    before, after = baseline.figures()["a"], proposed.figures()["a"]
    assert after["wait_p95_s"] < before["wait_p95_s"] and after["wait_p50_s"] <= before["wait_p50_s"], (before, after)
    assert sum(proposed.projects["a"].waits) < sum(baseline.projects["a"].waits)
    # every job of `a` runs to its end either way: the same work done, and GPU-hours never below it
    done = sum(j.duration * sum(j.parts.values()) for j in given.jobs if j.project == "a") / HOUR
    for figures in (before, after):
        assert figures["gpu_hours"] - figures["gpu_hours_lost"] == pytest.approx(done, abs=0.02)
    assert after["gpu_hours"] >= done
    assert after["idle_guarantee_gpu_hours"] > 0  # `a` asks for less than its 4 most of the day
