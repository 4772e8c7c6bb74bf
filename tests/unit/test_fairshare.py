"""Fair share (pools.engine.fairshare): worked examples and the properties the issue names."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pools.engine.errors import EngineError
from pools.engine.fairshare import KAI, ShareInput, divide, fair_share, fair_shares, water_fill
from pools.engine.quota_model import Quota, QuotaTree, Resources, TeamQuota
from tests.unit.quota_builders import quota_trees, tree


def shares(result) -> dict[str, tuple[int, int]]:
    return {name: (s.deserved_part, s.over_quota_part) for name, s in result.items()}


# ------------------------------------------------------------------------------------------------ examples


def test_deserved_first_then_the_surplus_by_weight():
    # 10 GPUs; both want everything. Deserved 2 + 2, the 6 left split 1:3 = 1.5 : 4.5; the spare unit of the
    # two halves goes to the larger weight.
    result = divide(10, [ShareInput("a", 2, None, 1, 0, 10), ShareInput("b", 2, None, 3, 0, 10)])
    assert shares(result) == {"a": (2, 1), "b": (2, 5)}
    assert result["b"].fair_share == 7


def test_a_queue_asking_less_than_its_slice_leaves_the_rest_to_the_others():
    # water-filling: c asks 1 over its deserved; a and b share what c leaves, 1:1
    result = divide(12, [ShareInput("a", 0, request=12), ShareInput("b", 0, request=12), ShareInput("c", 0, request=1)])
    assert shares(result) == {"a": (0, 6), "b": (0, 5), "c": (0, 1)}  # 11 / 2: the spare unit by name


def test_deserved_is_capped_by_what_a_queue_asks_and_the_idle_part_is_lent():
    result = divide(8, [ShareInput("owner", 8, request=2), ShareInput("guest", 0, request=8)])
    assert shares(result) == {"owner": (2, 0), "guest": (0, 6)}


def test_higher_priority_takes_the_surplus_first():
    result = divide(10, [ShareInput("low", 2, request=10), ShareInput("high", 2, priority=1, request=5)])
    assert shares(result) == {"low": (2, 3), "high": (2, 3)}


def test_limits_cap_the_share():
    result = divide(10, [ShareInput("a", 2, limit=4, request=10), ShareInput("b", 0, request=10)])
    assert shares(result) == {"a": (2, 2), "b": (0, 6)}


def test_weight_zero_gets_no_surplus():
    result = divide(10, [ShareInput("a", 2, weight=0, request=10), ShareInput("b", 0, weight=0, request=3)])
    assert shares(result) == {"a": (2, 0), "b": (0, 0)}


def test_over_quota_off_gives_each_its_deserved_only():
    result = divide(10, [ShareInput("a", 4, request=10), ShareInput("b", 2, request=1)], over_quota=False)
    assert shares(result) == {"a": (4, 0), "b": (1, 0)}


def test_capacity_below_the_guarantees_shrinks_them_in_proportion():
    # 12 deserved on 6 GPUs (nodes down): 8:4 becomes 4:2
    result = divide(6, [ShareInput("a", 8, request=8), ShareInput("b", 4, request=9)])
    assert shares(result) == {"a": (4, 0), "b": (2, 0)}


def test_hierarchy_divides_departments_then_their_projects():
    # seed shape: an 80 GB A100 pool of 20 GPUs owned by R&D (deserved 20: vision 16, nlp 4); ML-Ops deserves
    # nothing there. vision asks 8, nlp nothing, ML-Ops' two projects ask 10 and 6.
    t = tree(
        {"rnd": (20,), "mlops": (0,)},
        {"vision": ("rnd", 16), "nlp": ("rnd", 4), "infer": ("mlops", 0), "serve": ("mlops", 0, None, 3)},
    )
    result = fair_share(20, t, "gpu", {"vision": 8, "infer": 10, "serve": 6})
    assert shares(result.departments) == {"rnd": (8, 0), "mlops": (0, 12)}
    # ML-Ops' 12 are split by its projects' weights 1:3 (3 : 9), capped at serve's request 6
    assert shares(result.projects) == {"vision": (8, 0), "nlp": (0, 0), "infer": (0, 6), "serve": (0, 6)}
    assert result.unassigned == 0
    # the owner asks for all its 20: ML-Ops' share falls to 0
    result = fair_share(20, t, "gpu", {"vision": 16, "nlp": 4, "infer": 10, "serve": 6})
    assert result.projects["vision"].fair_share == 16
    assert result.projects["nlp"].fair_share == 4
    assert result.departments["mlops"].fair_share == 0


def test_fair_shares_divides_each_resource_on_its_own():
    t = QuotaTree(
        (TeamQuota("d", {"gpu": Quota(4), "cpu": Quota(8000)}),),
        (TeamQuota("p", {"gpu": Quota(4), "cpu": Quota(8000)}, department="d"),),
    )
    result = fair_shares(Resources(8, 64_000, 2**40), t, {"p": Resources(6, 10_000, 2**30)})
    assert result["gpu"].projects["p"].fair_share == 6
    assert result["cpu"].projects["p"].fair_share == 10_000
    assert result["memory"].projects["p"].fair_share == 2**30  # deserved 0, all over quota


def test_water_fill_exact_in_large_units():
    # bytes: exact ints, no float drift; Σ equals the amount
    given_ = water_fill(10**13 + 1, [10**13, 10**13, 10**13], [1, 1, 1], ["a", "b", "c"])
    assert sum(given_) == 10**13 + 1
    assert max(given_) - min(given_) <= 1


def test_bad_trees_are_refused_with_field_and_value():
    bad = QuotaTree((TeamQuota("d", {"gpu": Quota(-1)}),), ())
    with pytest.raises(EngineError) as error:
        bad.check()
    assert (error.value.field, error.value.value) == ("departments.d.gpu.deserved", -1)
    bad = QuotaTree((TeamQuota("d", {"gpu": Quota(4, limit=2)}),), ())
    with pytest.raises(EngineError, match="limit is below the deserved quota 4"):
        bad.check()
    with pytest.raises(EngineError, match="unknown department"):
        QuotaTree((), (TeamQuota("p", department="nope"),)).check()


# ---------------------------------------------------------------------------------------------- properties


def requestable(team: TeamQuota, request: int) -> int:
    limit = team.quota("gpu").limit
    return request if limit is None else min(request, limit)


@given(quota_trees(), st.integers(0, 120), st.booleans())
def test_shares_never_exceed_capacity_requests_or_limits(case, capacity, over_quota):
    t, requests = case
    result = fair_share(capacity, t, "gpu", requests, over_quota=over_quota)
    assert sum(s.fair_share for s in result.departments.values()) <= capacity
    for department in t.departments:
        inside = [result.projects[p.name].fair_share for p in t.projects_of(department.name)]
        assert sum(inside) <= result.departments[department.name].fair_share
        limit = department.quota("gpu").limit
        assert limit is None or result.departments[department.name].fair_share <= limit
    for project in t.projects:
        share = result.projects[project.name]
        assert 0 <= share.fair_share <= requestable(project, requests[project.name])
        assert share.deserved_part <= project.quota("gpu").deserved
        if not over_quota:
            assert share.over_quota_part == 0


@given(quota_trees(), st.integers(0, 60))
def test_deserved_is_honoured_when_asked_for_and_capacity_covers_it(case, spare):
    t, requests = case
    capacity = sum(d.quota("gpu").deserved for d in t.departments) + spare
    result = fair_share(capacity, t, "gpu", requests)
    for project in t.projects:
        assert result.projects[project.name].fair_share >= min(project.quota("gpu").deserved, requests[project.name])


@given(quota_trees(), st.integers(0, 120))
def test_with_weights_the_whole_capacity_is_used_when_asked_for(case, capacity):
    t, requests = case
    positive = QuotaTree(
        tuple(
            TeamQuota(d.name, {"gpu": Quota(d.quota("gpu").deserved, d.quota("gpu").limit, 1)}) for d in t.departments
        ),
        tuple(
            TeamQuota(
                p.name, {"gpu": Quota(p.quota("gpu").deserved, p.quota("gpu").limit, 1)}, p.priority, p.department
            )
            for p in t.projects
        ),
    )
    result = fair_share(capacity, positive, "gpu", requests)
    wanted = 0
    for department in positive.departments:
        inside = sum(requestable(p, requests[p.name]) for p in positive.projects_of(department.name))
        wanted += requestable(department, inside)
    assert sum(s.fair_share for s in result.projects.values()) == min(capacity, wanted)


@given(quota_trees(max_departments=1, max_projects=6), st.integers(0, 120))
def test_weights_order_the_surplus_within_a_priority_level(case, capacity):
    t, requests = case
    result = fair_share(capacity, t, "gpu", requests)
    unsatisfied = [
        p
        for p in t.projects
        if result.projects[p.name].fair_share < requestable(p, requests[p.name]) and p.quota("gpu").weight > 0
    ]
    for a in unsatisfied:
        for b in unsatisfied:
            if a.priority != b.priority:
                continue
            wa, wb = a.quota("gpu").weight, b.quota("gpu").weight
            over_a, over_b = result.projects[a.name].over_quota_part, result.projects[b.name].over_quota_part
            if wa > wb:
                assert over_a >= over_b
            elif wa == wb:
                assert abs(over_a - over_b) <= 1  # the spare unit of a tie goes by name
            assert abs(over_a * wb - over_b * wa) < wa + wb  # proportional up to the rounding of one unit


@given(quota_trees(max_departments=1, max_projects=6), st.integers(0, 120))
def test_a_lower_priority_level_gets_surplus_only_once_higher_levels_are_satisfied(case, capacity):
    t, requests = case
    result = fair_share(capacity, t, "gpu", requests)
    for high in t.projects:
        starving = result.projects[high.name].fair_share < requestable(high, requests[high.name])
        if starving and high.quota("gpu").weight > 0:
            for low in t.projects:
                if low.priority < high.priority:
                    assert result.projects[low.name].over_quota_part == 0


@given(quota_trees(), st.integers(0, 120), st.randoms(use_true_random=False))
def test_same_inputs_same_answer_in_any_order(case, capacity, rng: random.Random):
    t, requests = case
    first = fair_share(capacity, t, "gpu", requests)
    shuffled = QuotaTree(
        tuple(rng.sample(t.departments, len(t.departments))), tuple(rng.sample(t.projects, len(t.projects)))
    )
    again = fair_share(capacity, shuffled, "gpu", dict(rng.sample(sorted(requests.items()), len(requests))))
    assert dict(first.projects) == dict(again.projects)
    assert dict(first.departments) == dict(again.departments)


# ------------------------------------------------------------------------------------ over-subscription, KAI


def test_over_subscription_kai_keeps_every_guarantee_whole_the_portal_shrinks_them():
    # 12 deserved on 6 GPUs. KAI's setDeservedResource (resource_division.go) gives each min(deserved,
    # requestable) whatever the total, and nothing over quota is left; the portal shrinks 8 : 4 to 4 : 2.
    queues = [ShareInput("a", 8, request=8), ShareInput("b", 4, request=9)]
    assert shares(divide(6, queues, rule=KAI)) == {"a": (8, 0), "b": (4, 0)}
    assert shares(divide(6, queues)) == {"a": (4, 0), "b": (2, 0)}
    t = tree({"rnd": (8,), "mlops": (4,)}, {"vision": ("rnd", 8), "infer": ("mlops", 4)})
    kai = fair_share(6, t, "gpu", {"vision": 8, "infer": 9}, rule=KAI)
    assert kai.over_committed and kai.rule == KAI
    assert {name: s.fair_share for name, s in kai.projects.items()} == {"vision": 8, "infer": 4}
    portal = fair_share(6, t, "gpu", {"vision": 8, "infer": 9})
    assert portal.over_committed
    assert {name: s.fair_share for name, s in portal.projects.items()} == {"vision": 4, "infer": 2}
    # not over-committed: both rules agree
    assert shares(divide(20, queues, rule=KAI)) == shares(divide(20, queues)) == {"a": (8, 0), "b": (4, 5)}
    assert not fair_share(20, t, "gpu", {"vision": 8}).over_committed


def test_a_leftover_unit_goes_to_the_older_queue_as_kai_breaks_ties():
    # 3 GPUs over two equal queues: 1.5 each; the spare unit goes to the older one, whatever the names
    older_z = [ShareInput("z", 0, request=3, created=100.0), ShareInput("a", 0, request=3, created=200.0)]
    assert shares(divide(3, older_z)) == {"z": (0, 2), "a": (0, 1)}
    assert shares(divide(3, older_z, rule=KAI)) == {"z": (0, 2), "a": (0, 1)}
    # the teams' creation time reaches the tie through the quota tree
    t = QuotaTree(
        (TeamQuota("d", {"gpu": Quota(0)}),),
        (
            TeamQuota("young", {"gpu": Quota(0)}, department="d", created=2.0),
            TeamQuota("elder", {"gpu": Quota(0)}, department="d", created=1.0),
        ),
    )
    result = fair_share(3, t, "gpu", {"young": 3, "elder": 3})
    assert {name: s.fair_share for name, s in result.projects.items()} == {"young": 1, "elder": 2}
