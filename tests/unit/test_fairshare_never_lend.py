"""Never lend (pools.engine: `Quota.lend` False): a team's unused deserved stays idle for it, never in another
team's fair share, and admission does not offer it as over-quota room. Worked examples on seed 003's A100-80GB
node pool, and the promise as a property over random quota trees and requests."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from pools.engine.borrowing import Loan, borrowing_view
from pools.engine.fairshare import ShareInput, divide, fair_share
from pools.engine.quota_model import Quota, QuotaTree, TeamQuota
from pools.engine.quota_pass import PoolState, QueuedWorkflow, run_admission
from pools.engine.reclaim import RunningWorkflow
from tests.unit.quota_builders import G, quota_trees


def never_lends(team: TeamQuota) -> TeamQuota:
    return replace(team, quotas={r: replace(q, lend=False) for r, q in team.quotas.items()})


def seed_tree(*never: str) -> QuotaTree:
    """Seed 003's A100-80GB node pool (20 GPUs): R&D deserves all of it (vision 8, nlp 8, speech 4); ML-Ops
    nothing. `never`: the teams that never lend."""

    def team(name, deserved, department=None):
        made = TeamQuota(name, {"gpu": Quota(deserved)}, department=department)
        return never_lends(made) if name in never else made

    return QuotaTree(
        departments=(team("rnd", 20), team("mlops", 0)),
        projects=(
            team("vision", 8, "rnd"),
            team("nlp", 8, "rnd"),
            team("speech", 4, "rnd"),
            team("infer", 0, "mlops"),
        ),
    )


# R&D uses 12 (vision 8, nlp 4): 8 of its deserved GPUs are idle (nlp 4, speech 4); ML-Ops' infer wants 20
REQUESTS = {"vision": 8, "nlp": 4, "speech": 0, "infer": 20}


def fair(tree: QuotaTree, requests=REQUESTS) -> dict[str, int]:
    shares = fair_share(20, tree, "gpu", requests)
    return {name: share.fair_share for name, share in shares.projects.items()}


def test_one_level_the_idle_deserved_of_a_never_lending_queue_is_held_not_lent():
    lending = divide(8, [ShareInput("owner", 8, request=2), ShareInput("guest", 0, request=8)])
    assert lending["guest"].fair_share == 6 and lending["owner"].held == 0
    keeping = divide(8, [ShareInput("owner", 8, request=2, unlent=8), ShareInput("guest", 0, request=8)])
    assert (keeping["owner"].fair_share, keeping["owner"].held, keeping["guest"].fair_share) == (2, 6, 0)


def test_ml_ops_borrows_only_what_rnd_lends():
    assert fair(seed_tree())["infer"] == 8  # nlp's 4 idle + speech's 4 idle
    assert fair(seed_tree("nlp"))["infer"] == 4  # nlp keeps its 4 idle GPUs; speech's are still lent
    assert fair(seed_tree("nlp", "speech"))["infer"] == 0
    assert fair(seed_tree("rnd"))["infer"] == 0  # the department lends nothing outside itself ...
    within = fair(seed_tree("rnd"), {**REQUESTS, "vision": 16})
    assert within["vision"] == 16 and within["infer"] == 0  # ... but its projects still lend to each other
    shares = fair_share(20, seed_tree("nlp"), "gpu", REQUESTS)
    assert shares.projects["nlp"].held == 4 and shares.projects["nlp"].fair_share == 4


def test_admission_does_not_offer_never_lent_gpus_to_borrowers():
    running = (
        RunningWorkflow("v1", "vision", G(8), False, 600),
        RunningWorkflow("n1", "nlp", G(4), False, 600),
    )
    queued = (QueuedWorkflow("i1", "infer", G(8), 1.0), QueuedWorkflow("i2", "infer", G(4), 2.0))
    lending = run_admission(PoolState("a100-80gb", G(20), seed_tree(), running, queued))
    assert [a.workflow for a in lending.admitted] == ["i1"]  # 8 idle GPUs of R&D: one 8-GPU borrower
    keeping = run_admission(PoolState("a100-80gb", G(20), seed_tree("nlp"), running, queued))
    assert [a.workflow for a in keeping.admitted] == ["i2"]  # only speech's 4 are lent
    [held] = [h for h in keeping.held if h.workflow == "i1"]
    assert (held.reason.code, held.reason.fair_share, held.reason.borrowable) == ("FAIR_SHARE", 4, 4)  # not 8


def test_the_borrowing_view_names_lending_teams_first_as_lenders():
    def loans(infer_gpus: int) -> tuple[Loan, ...]:
        running = (
            RunningWorkflow("v1", "vision", G(8), False, 600),
            RunningWorkflow("n1", "nlp", G(4), False, 600),
            RunningWorkflow("i1", "infer", G(infer_gpus), True, 600),
        )
        return borrowing_view(run_admission(PoolState("a100-80gb", G(20), seed_tree("nlp"), running))).loans

    assert loans(4) == (Loan("infer", "speech", 4),)  # speech lends; nlp's idle 4 stay out of it
    # 8 borrowed before nlp stopped lending: speech's 4, then nlp's (the loans still add up)
    assert loans(8) == (Loan("infer", "nlp", 4), Loan("infer", "speech", 4))


# ------------------------------------------------------------------------------------------------ property


@st.composite
def trees_with_never_lenders(draw):
    """A valid tree (department deserved ≥ Σ its projects'), some teams never lending, requests, and a capacity
    that covers every department's deserved (no over-commitment: every guarantee can be kept)."""
    tree, requests = draw(quota_trees(max_departments=3, max_projects=3))
    flips = st.booleans()
    tree = QuotaTree(
        tuple(never_lends(d) if draw(flips) else d for d in tree.departments),
        tuple(never_lends(p) if draw(flips) else p for p in tree.projects),
    )
    capacity = sum(d.quota("gpu").deserved for d in tree.departments) + draw(st.integers(0, 20))
    return tree, requests, capacity, draw(st.booleans())


@settings(max_examples=300, deadline=None)
@given(trees_with_never_lenders())
def test_a_never_lending_teams_idle_deserved_is_never_in_another_teams_fair_share(case):
    tree, requests, capacity, over_quota = case
    shares = fair_share(capacity, tree, "gpu", requests, over_quota=over_quota)
    projects = shares.projects
    assert sum(s.fair_share for s in projects.values()) + sum(s.held for s in projects.values()) <= capacity
    for project in tree.projects:
        quota = project.quota("gpu")
        assert projects[project.name].deserved_part == min(quota.deserved, projects[project.name].requestable)
        if not quota.lend:  # the others together never reach into its deserved
            others = sum(s.fair_share for name, s in projects.items() if name != project.name)
            assert others <= capacity - quota.deserved
            assert projects[project.name].fair_share + projects[project.name].held >= quota.deserved
    for department in tree.departments:
        if not department.quota("gpu").lend:
            inside = {p.name for p in tree.projects_of(department.name)}
            outside = sum(s.fair_share for name, s in projects.items() if name not in inside)
            assert outside <= capacity - department.quota("gpu").deserved


@settings(max_examples=150, deadline=None)
@given(quota_trees(max_departments=3, max_projects=3))
def test_when_everyone_lends_nothing_is_held(case):
    tree, requests = case
    capacity = sum(d.quota("gpu").deserved for d in tree.departments) + 5
    shares = fair_share(capacity, tree, "gpu", requests)
    assert all(s.held == 0 for s in [*shares.projects.values(), *shares.departments.values()])
