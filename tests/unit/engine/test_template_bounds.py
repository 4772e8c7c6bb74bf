"""The compile bounds of template strings (pools.engine.template_bounds): each bound accepts its limit and
refuses one more, and — the promise that bounds compile time — any expression whose parsed tree is deeper
than MAX_DEPTH is refused on its tokens (the scan's depth is an upper bound of the tree's), while any the
scan accepts compiles without Python's own limits (RecursionError, SyntaxError) being reached."""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from jinja2 import TemplateSyntaxError, nodes

from pools.engine.sandbox import _ENV, SandboxError, compile_template
from pools.engine.template_bounds import (
    MAX_DEPTH,
    MAX_EXPRESSIONS,
    MAX_FILTER_CHAIN,
    MAX_TEMPLATE_CHARS,
    MAX_TEMPLATE_WEIGHT,
    TemplateTooLarge,
    check_tokens,
)


def scan(source: str) -> None:
    check_tokens(_ENV.lex(source), len(source))


def refusal(source: str) -> TemplateTooLarge:
    with pytest.raises(TemplateTooLarge) as refused:
        scan(source)
    return refused.value


@pytest.mark.parametrize(
    ("at_the_limit", "over_it", "reason", "value"),
    [
        (
            "{{ z" + "|list" * MAX_FILTER_CHAIN + " }}",
            "{{ z" + "|list" * (MAX_FILTER_CHAIN + 1) + " }}",
            "a chain of more than 10 filters",
            11,
        ),
        (  # the tag is one level, each bracket another
            "{{ " + "(" * (MAX_DEPTH - 1) + "z" + ")" * (MAX_DEPTH - 1) + " }}",
            "{{ " + "(" * MAX_DEPTH + "z" + ")" * MAX_DEPTH + " }}",
            "nested more than 16 levels deep",
            17,
        ),
        (
            "{% if z %}" * MAX_DEPTH + "{% endif %}" * MAX_DEPTH,
            "{% if z %}" * (MAX_DEPTH + 1) + "{% endif %}" * (MAX_DEPTH + 1),
            "nested more than 16 levels deep",
            17,
        ),
        (
            "{{ z }}" * MAX_EXPRESSIONS,
            "{{ z }}" * (MAX_EXPRESSIONS + 1),
            f"more than {MAX_EXPRESSIONS} expressions",
            MAX_EXPRESSIONS + 1,
        ),
    ],
)
def test_each_bound_accepts_its_limit_and_refuses_one_more(at_the_limit, over_it, reason, value):
    scan(at_the_limit)
    compile_template(at_the_limit)
    refused = refusal(over_it)
    assert (refused.reason, refused.value, refused.line) == (reason, value, 1)


def test_siblings_do_not_add_up_but_their_size_does():
    """Items of a list or arguments are side by side, not nested; what they add is size (weight)."""
    scan("{{ [" + ", ".join(["z|list|first|string"] * 100) + "] }}")
    refused = refusal("{{ [" + ",".join(["1"] * MAX_TEMPLATE_WEIGHT) + "] }}")
    assert refused.reason.startswith(f"the expressions are too large: more than {MAX_TEMPLATE_WEIGHT} units")
    assert MAX_TEMPLATE_WEIGHT < refused.value <= MAX_TEMPLATE_WEIGHT + MAX_DEPTH + 1


def test_a_refusal_names_the_line_and_statements_and_assignments_are_not_nesting():
    source = "{% set a = 1 %}\n" * 40 + "{% for x in y %}{{ x }}{% endfor %}\n" * 40 + "{{ z" + ".a" * 20 + " }}"
    assert refusal(source).line == 81


def test_the_size_in_characters_is_bounded_before_any_token_is_read():
    refused = refusal("x" * (MAX_TEMPLATE_CHARS + 1))
    assert (refused.value, refused.line) == (MAX_TEMPLATE_CHARS + 1, 1)


def test_the_sandbox_refuses_with_the_bound_and_the_count():
    with pytest.raises(SandboxError) as refused:
        compile_template("a\n{{ z" + "|list" * 199 + " }}")
    assert refused.value.reason == "template too large to compile: line 2: a chain of more than 10 filters"
    assert refused.value.value == 11


def _expressions() -> st.SearchStrategy[str]:
    leaves = st.sampled_from(["z", "'t'", "none"])

    def wrap(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        one = [
            lambda a: f"{a}|list",
            lambda a: f"{a}.a",
            lambda a: f"({a})",
            lambda a: f"[{a}]",
            lambda a: f"not {a}",
            lambda a: f"-{a}",
            lambda a: f"z[1:{a}]",
            lambda a: f"z|round(precision={a})",
            lambda a: f"{{'k': {a}}}",
            lambda a: f"{a} is defined",
        ]
        two = [
            lambda a, b: f"{a} + {b}",
            lambda a, b: f"{a} ~ {b}",
            lambda a, b: f"{a} < {b}",
            lambda a, b: f"{a} in {b}",
            lambda a, b: f"({a}, {b})",
            lambda a, b: f"{a} if {b} else z",
            lambda a, b: f"{a}|default({b})",
            lambda a, b: f"{a} and {b}",
        ]
        return st.one_of(
            st.tuples(st.sampled_from(one), inner).map(lambda pair: pair[0](pair[1])),
            st.tuples(st.sampled_from(two), inner, inner).map(lambda triple: triple[0](triple[1], triple[2])),
        )

    return st.recursive(leaves, wrap, max_leaves=40)


def _depth(node: nodes.Node) -> int:
    return 1 + max((_depth(child) for child in node.iter_child_nodes()), default=0)


@settings(max_examples=400, deadline=None)
@given(_expressions(), st.integers(min_value=0, max_value=6))
def test_the_scan_never_underestimates_a_tree_and_what_it_accepts_compiles(expression, blocks):
    source = "{% if z %}" * blocks + "{{ " + expression + " }}" + "{% endif %}" * blocks
    try:
        output = next(_ENV.parse(source).find_all(nodes.Output))
    except TemplateSyntaxError:  # a combination the grammar does not allow (`- not z`)
        assume(False)
    tree_depth = blocks + _depth(output.nodes[0])
    with pytest.raises(TemplateTooLarge, match="levels deep"):  # the scan's depth is at least the tree's
        check_tokens(_ENV.lex(source), len(source), max_depth=tree_depth - 1)
    try:
        scan(source)
    except TemplateTooLarge:
        return
    try:
        compile_template(source)
    except SandboxError as error:  # Jinja's own errors (constant folding: `'t'.a`), never Python's limits
        assert not any(limit in error.reason for limit in ("SyntaxError", "too deeply", "MemoryError")), error
