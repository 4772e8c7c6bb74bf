"""Template expressions built to stall the compiler (issue #31 items 1 and 2), shared by
tests/security/test_template_bombs.py (what each door answers) and bench/bench_spec_bombs.py (how long).

Before the bounds (pools.engine.template_bounds) Jinja compiled them: a chain of 150 filters took ~3.7 s
(cubic in its length), 199 raised Python's SyntaxError "too many nested parentheses", deep brackets,
`{% if %}` blocks or `not`s a RecursionError (each a 500), and 30,000 expressions or a 100,000-item list
took 8-16 s. Each is refused on its token stream, before it is parsed, at the first token over a bound.
"""

from __future__ import annotations

from dataclasses import dataclass

from pools.engine.template_bounds import MAX_DEPTH, MAX_EXPRESSIONS, MAX_TEMPLATE_WEIGHT

# Line 10 of the spec holds the expression (the line as written: the `default-values:` section above it
# counts); `z` has a default, so an expression that compiles renders.
SPEC = (
    "default-values:\n  z: [1]\nversion: 2\nworkflow:\n  name: bomb\n  resources: {default: {cpu: 1}}\n"
    "  tasks:\n  - name: t0\n    image: busybox\n    command: [echo, '%s']\n"
)
LINE = 10
DEEP = "nested more than 16 levels deep"
FILTERS = "a chain of more than 10 filters"


@dataclass(frozen=True)
class TemplateBomb:
    expression: str
    reason: str  # after "line <n>: "
    value: int | range  # the count when the scan stopped

    def spec(self) -> str:
        return SPEC % self.expression


TEMPLATE_BOMBS = {
    "150 filters (3.7 s to compile)": TemplateBomb("{{ z" + "|list" * 150 + " }}", FILTERS, 11),
    "199 filters (SyntaxError: too many nested parentheses)": TemplateBomb("{{ z" + "|list" * 199 + " }}", FILTERS, 11),
    "1,000 nested parentheses (RecursionError)": TemplateBomb("{{ " + "(" * 1000 + "z" + ")" * 1000 + " }}", DEEP, 17),
    "150 attributes in a chain": TemplateBomb("{{ z" + ".a" * 150 + " }}", DEEP, 17),
    "3,000 nots (RecursionError)": TemplateBomb("{{ " + "not " * 3000 + "z }}", DEEP, 17),
    "300 nested if blocks (RecursionError)": TemplateBomb("{% if z %}" * 300 + "x" + "{% endif %}" * 300, DEEP, 17),
    "30,000 expressions": TemplateBomb(
        "{{ z }}" * 30_000, f"more than {MAX_EXPRESSIONS} expressions", MAX_EXPRESSIONS + 1
    ),
    "a list of 100,000 items": TemplateBomb(
        "{{ [" + ",".join(["1"] * 100_000) + "] }}",
        f"the expressions are too large: more than {MAX_TEMPLATE_WEIGHT} units "
        "(a token counts 1 plus how deeply it is nested)",
        range(MAX_TEMPLATE_WEIGHT + 1, MAX_TEMPLATE_WEIGHT + MAX_DEPTH + 2),
    ),
}


def reason(bomb: TemplateBomb, line: int = LINE) -> str:
    return f"template too large to compile: line {line}: {bomb.reason}"
