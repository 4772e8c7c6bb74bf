"""The template work budget: weights count what printing touches (shared lists each time), measuring stops at
the limit, and the sandbox charges operators, filters, tests, calls, comparisons, `~` and output."""

from __future__ import annotations

import pytest

from pools.engine.sandbox import SandboxError, compile_string, render_context, render_string
from pools.engine.sandbox_budget import MAX_WORK, BudgetExceeded, WorkBudget, repeat_weight, weight


def test_weight_counts_shared_lists_wherever_they_appear():
    inner = [1] * 1000
    assert weight(1) == 1 and weight("x" * 640) == 11 and weight(range(5)) == 6
    assert weight(inner) == 1001
    assert weight([inner] * 10) == 1 + 10 * 1001
    assert weight({"a": inner}) == 1 + 1 + 1001


def test_weight_stops_just_past_the_limit():
    shared = [[1] * 1000] * 1000
    assert 100 < weight(shared, limit=100) < 2000  # the walk stopped early instead of counting 10^6


def test_repeat_weight_measures_without_building():
    assert repeat_weight([[1] * 1000] * 1000, 30, MAX_WORK) > MAX_WORK
    assert repeat_weight([1, 2], 3, MAX_WORK) == 9
    assert repeat_weight([1], -5, MAX_WORK) == 1


def test_a_budget_refuses_once_spent():
    budget = WorkBudget(10)
    budget.charge(10, "this")
    with pytest.raises(BudgetExceeded, match="more than 10 units"):
        budget.charge(1, "that")


def render(source: str, **values) -> str:
    return render_string(compile_string(source), render_context(values))


@pytest.mark.parametrize(
    "source",
    [
        "{{ [[[1]*1000]*1000]*30 }}",
        "{% set b = [[1]*1000]*300 %}{{ b|length }}",
        "{% set b = [[1]*1000]*150 %}{% for i in range(10000) %}{% if b == b %}{% endif %}{% endfor %}",
        "{% set b = [[1]*1000]*150 %}{% for i in range(10000) %}{% set s = b ~ '' %}{% endfor %}",
        "{% set b = [[1]*1000]*150 %}{% for i in range(10000) %}{% if 5 in b %}{% endif %}{% endfor %}",
        "{% set b = [[1]*1000]*150 %}{% for i in range(10000) %}{% if b is sequence %}{% endif %}{% endfor %}",
        "{% set b = [[1]*1000]*150 %}{% for i in range(10000) %}{% set d = dict(x=b) %}{% endfor %}",
        "{% set b = [[1]*1000]*150 %}{% for i in range(10000) %}{% set c = b + b %}{% endfor %}",
    ],
)
def test_expensive_templates_are_refused_by_the_budget(source):
    with pytest.raises(SandboxError, match="too much work for one template string"):
        render(source)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("{{ USER }}-{{ WF_ID ~ '-x' }}", "ana-wf-1-x"),
        ("{% if GPUS > 0 and 'a' in NAMES %}{{ GPUS * 2 }}{% endif %}", "8"),
        ("{{ NAMES|join(',')|upper }}", "A,B"),
        ("{% for i in range(3) %}{{ i }}{% endfor %}", "012"),
        ("{{ dict(a=1).items()|list }}", "[('a', 1)]"),
    ],
)
def test_ordinary_templates_render(source, expected):
    assert render(source, USER="ana", WF_ID="wf-1", GPUS=4, NAMES=["a", "b"]) == expected


def test_the_budget_is_per_rendered_string():
    compiled = compile_string("{% set b = [[1]*1000]*60 %}{{ b|length }}")
    for _ in range(5):  # each render spends over half the budget
        assert render_string(compiled, render_context({})) == "60"
