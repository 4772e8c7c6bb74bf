"""Time-based fair share (pools.engine.fairshare, "Time-based fair share"): past usage moves only the over-quota
split, by `max(0, wn + k·(wn − u))`; without usage the split is the plain one, to the unit."""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

from hypothesis import given
from hypothesis import strategies as st

from pools.engine.fairshare import (
    ShareInput,
    divide,
    fair_share,
    fair_shares,
    usage_weights,
    water_fill,
    water_fill_by_usage,
)
from pools.engine.quota_model import USAGE_SCALE, Quota, QuotaTree, Resources, TeamQuota, UsageHistory
from pools.engine.quota_pass import PoolState, state_fingerprint
from tests.unit.quota_builders import quota_trees, tree

ks = st.integers(0, 10_000)  # k from 0 to 10, in thousandths


def usages(t: QuotaTree):
    return st.fixed_dictionaries({p.name: st.integers(0, USAGE_SCALE) for p in t.projects})


def split(result) -> dict[str, tuple[int, int]]:
    return {name: (s.deserved_part, s.over_quota_part) for name, s in result.items()}


def all_shares(result) -> tuple[dict, dict]:
    return split(result.departments), split(result.projects)


# ------------------------------------------------------------------------------------------------ examples


def test_a_heavy_past_user_gets_less_of_the_surplus_than_a_light_one_of_equal_weight():
    # 10 GPUs, both deserve 2 and ask for all; the heavy one used 60% of the node pool over the window.
    queues = [ShareInput("heavy", 2, None, 1, 0, 10, usage=600_000), ShareInput("light", 2, None, 1, 0, 10)]
    assert split(divide(10, queues)) == {"heavy": (2, 3), "light": (2, 3)}  # usage off: an even split
    # k = 1: heavy 0.5 + (0.5 − 0.6) = 0.4, light 0.5 + 0.5 = 1.0 → the 6 GPUs split 0.4 : 1.0
    assert split(divide(10, queues, k_milli=1000)) == {"heavy": (2, 2), "light": (2, 4)}
    # k = 3: heavy 0.5 − 0.3 = 0.2 → 0.55 : 5.45, the leftover unit to the larger fraction; k = 5: heavy 0
    assert split(divide(10, queues, k_milli=3000)) == {"heavy": (2, 1), "light": (2, 5)}
    assert split(divide(10, queues, k_milli=5000)) == {"heavy": (2, 0), "light": (2, 6)}


def test_the_weights_before_and_after_usage_are_kais_formula():
    weights = usage_weights({"heavy": 1, "light": 1, "none": 0}, {"heavy": 600_000}, 1000)
    assert weights == {"heavy": (Fraction(1, 2), Fraction(2, 5)), "light": (Fraction(1, 2), Fraction(1))}


def test_a_satisfied_queue_drops_out_and_the_weights_are_worked_out_again():
    # a asks only 1 more: satisfied in round one; b and c split the rest by their weights among themselves
    queues = [
        ShareInput("a", 0, None, 1, 0, 1),
        ShareInput("b", 0, None, 1, 0, 20, usage=300_000),
        ShareInput("c", 0, None, 1, 0, 20),
    ]
    # round two: wn = 1/2 each; b: 0.5 + (0.5 − 0.3) = 0.7, c: 1.0 → 11 GPUs split 7 : 10 = 4.53 : 6.47, the
    # leftover unit to the larger fraction (b); without usage b and c would get 5.5 each
    assert split(divide(12, queues, k_milli=1000)) == {"a": (0, 1), "b": (0, 5), "c": (0, 6)}
    queues[1] = ShareInput("b", 0, None, 1, 0, 20, usage=600_000)  # 0.4 : 1.0 → 3.14 : 7.86
    assert split(divide(12, queues, k_milli=1000)) == {"a": (0, 1), "b": (0, 3), "c": (0, 8)}


def test_departments_weigh_the_sum_of_their_projects_usage():
    t = tree({"d1": (0,), "d2": (0,)}, {"p1": ("d1", 0), "p2": ("d1", 0), "p3": ("d2", 0)})
    requests = {"p1": 10, "p2": 10, "p3": 10}
    plain = fair_share(10, t, "gpu", requests)
    assert (plain.departments["d1"].fair_share, plain.departments["d2"].fair_share) == (5, 5)
    # d1's projects used 0.2 + 0.2: d1 0.5 + (0.5 − 0.4) = 0.6, d2 1.0 → 10 split 3.75 : 6.25
    used = fair_share(10, t, "gpu", requests, usage={"p1": 200_000, "p2": 200_000})
    assert (used.departments["d1"].fair_share, used.departments["d2"].fair_share) == (4, 6)
    assert (used.projects["p1"].fair_share, used.projects["p2"].fair_share) == (2, 2)  # equal usage: even


def test_when_everyone_used_more_than_there_was_the_plain_weights_split_it():
    # capacity shrank: both used 3 node pools' worth; no weight is left, yet nothing idles
    queues = [ShareInput("a", 0, None, 1, 0, 10, usage=3_000_000), ShareInput("b", 0, None, 3, 0, 10, usage=3_000_000)]
    assert split(divide(8, queues, k_milli=1000)) == split(divide(8, queues))


def test_fair_shares_takes_each_resource_usage_from_the_history():
    t = QuotaTree(
        (TeamQuota("d", {"gpu": Quota(0), "cpu": Quota(0)}),),
        (
            TeamQuota("a", {"gpu": Quota(0), "cpu": Quota(0)}, department="d"),
            TeamQuota("b", {"gpu": Quota(0), "cpu": Quota(0)}, department="d"),
        ),
    )
    requests = {"a": Resources(gpu=10, cpu=10), "b": Resources(gpu=10, cpu=10)}
    history = UsageHistory({"gpu": {"a": 800_000}})
    result = fair_shares(Resources(gpu=10, cpu=10), t, requests, history=history)
    assert (result["gpu"].projects["a"].fair_share, result["gpu"].projects["b"].fair_share) == (2, 8)
    assert (result["cpu"].projects["a"].fair_share, result["cpu"].projects["b"].fair_share) == (5, 5)


# ---------------------------------------------------------------------------------------------- properties


@given(quota_trees(), st.integers(0, 120), st.booleans())
def test_without_usage_the_split_is_todays(case, capacity, over_quota):
    t, requests = case
    today = fair_share(capacity, t, "gpu", requests, over_quota=over_quota)
    assert fair_share(capacity, t, "gpu", requests, over_quota=over_quota, usage=None) == today
    by_resource = {k: Resources(gpu=v) for k, v in requests.items()}
    assert fair_shares(Resources(gpu=capacity), t, by_resource, over_quota=over_quota)["gpu"] == today


@given(quota_trees(), st.integers(0, 120), ks)
def test_no_usage_at_all_gives_the_same_split_as_without(case, capacity, k):
    t, requests = case
    plain = fair_share(capacity, t, "gpu", requests)
    assert all_shares(fair_share(capacity, t, "gpu", requests, usage={}, k_milli=k)) == all_shares(plain)
    zero = {p.name: 0 for p in t.projects}
    assert all_shares(fair_share(capacity, t, "gpu", requests, usage=zero, k_milli=k)) == all_shares(plain)


@given(st.data(), quota_trees(), st.integers(0, 120), ks, st.booleans())
def test_deserved_never_changes_and_the_surplus_is_all_given(data, case, capacity, k, over_quota):
    t, requests = case
    usage = data.draw(usages(t))
    plain = fair_share(capacity, t, "gpu", requests, over_quota=over_quota)
    used = fair_share(capacity, t, "gpu", requests, over_quota=over_quota, usage=usage, k_milli=k)
    for level in ("departments", "projects"):
        before, after = getattr(plain, level), getattr(used, level)
        assert {n: s.deserved_part for n, s in after.items()} == {n: s.deserved_part for n, s in before.items()}
        assert {n: s.held for n, s in after.items()} == {n: s.held for n, s in before.items()}
        assert all(s.fair_share <= s.requestable for s in after.values())
    assert used.unassigned == plain.unassigned  # usage moves the surplus between teams, never leaves it idle


@given(st.integers(1, 8), st.integers(1, 8), st.integers(0, USAGE_SCALE), st.integers(0, USAGE_SCALE), ks)
def test_a_teams_weight_after_usage_never_grows_with_its_usage(weight, other, used, less, k):
    """The same usage moved further back (decayed: smaller) brings a team's weight back up, toward the weight
    of a team that used nothing; with no usage it is (1 + k)·wn, the plain weight scaled like every other."""
    less = min(less, used)
    heavier = usage_weights({"a": weight, "b": other}, {"a": used}, k)["a"]
    lighter = usage_weights({"a": weight, "b": other}, {"a": less}, k)["a"]
    unused = usage_weights({"a": weight, "b": other}, {}, k)["a"]
    assert heavier[1] <= lighter[1] <= unused[1] == heavier[0] * (1 + Fraction(k, 1000))


@given(st.integers(1, 60), st.integers(0, 5), st.integers(0, USAGE_SCALE), st.integers(0, USAGE_SCALE), ks)
def test_of_two_teams_asking_for_more_the_lighter_past_user_never_gets_less(surplus, deserved, used, less, k):
    """Two teams of one weight, both asking for more than there is: the surplus follows their weights after
    usage, so less past usage never means less of it (one leftover unit may go either way). With more teams
    a share can move the other way now and then: when a sibling is satisfied and drops out, the weights are
    worked out again (KAI's rounds), and a team that weighed 0 in the first round may take more in the next."""
    less = min(less, used)

    def first(used_first: int) -> int:
        queues = [
            ShareInput("a", deserved, None, 1, 0, deserved + surplus + 5, usage=used_first),
            ShareInput("b", deserved, None, 1, 0, deserved + surplus + 5, usage=USAGE_SCALE // 4),
        ]
        return divide(surplus + 2 * deserved, queues, k_milli=k)["a"].over_quota_part

    assert first(less) + 1 >= first(used)


caps_lists = st.lists(st.integers(0, 20), min_size=1, max_size=6)


@given(st.integers(0, 60), caps_lists, st.lists(st.integers(0, 5), min_size=6), ks)
def test_with_no_usage_the_rounds_give_the_plain_water_filling(amount, caps, weights, k):
    weights = weights[: len(caps)]
    names = [f"q{i}" for i in range(len(caps))]
    ties = [(-w, name) for w, name in zip(weights, names, strict=True)]
    plain = water_fill(amount, caps, weights, names, ties)
    assert water_fill_by_usage(amount, caps, weights, [0] * len(caps), k, names, ties) == plain


def test_the_admission_fingerprint_moves_with_past_usage():
    """A periodic pass may skip a node pool whose fingerprint is unchanged: usage moves fair shares, so it counts."""
    t = tree({"d": (0,)}, {"a": ("d", 0), "b": ("d", 0)})
    state = PoolState("p", Resources(gpu=8), t)
    with_usage = replace(state, history=UsageHistory({"gpu": {"a": 500_000}}))
    assert state_fingerprint(state) == state_fingerprint(replace(state))
    assert state_fingerprint(with_usage) != state_fingerprint(state)
    assert state_fingerprint(with_usage) != state_fingerprint(replace(state, history=UsageHistory({"gpu": {"a": 1}})))
