"""Specs built to stall a worker (issue #18 items 1, 2 and 7), shared by tests/security/test_spec_bombs.py
(refused before they expand, with what error) and bench/bench_spec_bombs.py (how long a refusal takes).

Each `Bomb` says where reading stopped (`at`, the `line:column` of the refusal, "" when the size alone
refused it) and what the error names, under the default limits (portal/settings.py: WORKFLOW_SPEC_MAX_BYTES
512 KiB, _NODES 20,000, _DEPTH 32, WORKFLOW_MAX_TASKS 100)."""

from __future__ import annotations

from dataclasses import dataclass

MAX_NODES = 20_000
HEAD = "version: 2\nworkflow:\n  name: bomb\n  resources: {default: {cpu: 1}}\n"
TASK = "  - {name: t%d, image: busybox, command: [echo, hi]}\n"
ORDINARY = HEAD + "  tasks:\n" + TASK % 0
NODES = "the spec has more than 20000 values (aliases and '<<' merges count every value they repeat)"
DEEP = "the spec is nested more than 32 levels deep (aliases count the depth they bring)"
# The sandbox refuses the repetition `[[1]*1000]*1000` (a million items to print) before running it.
TEMPLATE = "{{ [[[1]*1000]*1000]*30 }}"
TEMPLATE_REASON = (
    "platform cpu: unsafe template: '*' on a sequence is too much work for one template string "
    "(more than 200000 units: list items or 64-character pieces of text)"
)


@dataclass(frozen=True)
class Bomb:
    text: str
    reason: str  # after "<source>:<line>:<column>: "
    at: str  # line:column where the parser stopped; "" when refused before parsing
    field: str  # the path the API answers with (without the leading `workflow.`)
    value: object  # the API's `value`; a range: the values counted when it stopped lie in it


def merge_bomb(levels: int = 30) -> str:
    """The issue's 1.4 KB spec: each level merges the previous one twice, doubling safe_load's work."""
    lines = ["x-k0: &k0 {a: 1, b: 2}"] + [f"x-k{i}: &k{i} {{<<: [*k{i - 1}, *k{i - 1}]}}" for i in range(1, levels + 1)]
    return HEAD + "  tasks:\n" + TASK % 0 + "  labels:\n" + "".join(f"    {line}\n" for line in lines)


def alias_bomb() -> str:
    levels = ["x-a: &a [x, x, x, x, x, x, x, x, x]"] + [
        f"x-{b}: &{b} [{', '.join([f'*{a}'] * 9)}]" for a, b in zip("abcdefgh", "bcdefghi", strict=True)
    ]
    return HEAD + "  tasks:\n" + TASK % 0 + "".join(f"  {line}\n" for line in levels)


# Counted, never copied: an alias adds the count of a finished anchor (at most MAX_NODES), so the count at the
# refusal is over the limit by at most one anchor's worth.
COUNTED = range(MAX_NODES + 1, 2 * MAX_NODES + 1)

BOMBS = {
    # x-k0 is line 8, x-k{i} line 8 + i: refused on level 11's first alias, levels 12 to 30 are never read
    "merge-key doubling, 30 levels": Bomb(merge_bomb(), NODES, "19:23", "labels.x-k11[0]", COUNTED),
    # 9^9 values once expanded: refused on the 2nd alias of level e (line 11 of 15)
    "alias fan-out, 9^9": Bomb(alias_bomb(), NODES, "11:16", "x-e[1]", COUNTED),
    # column 40 of a 200,009-character line: the 31st "[", the 33rd level counting the top and `workflow`
    "flow nesting, 200,000 levels": Bomb(
        HEAD + "  tasks: " + "[" * 200_000 + "\n", DEEP, "5:40", "tasks" + "[0]" * 30, None
    ),
    # line 36 of 705
    "block nesting, 700 levels": Bomb(
        HEAD + "  tasks:\n" + "".join("  " * (i + 2) + f"k{i}:\n" for i in range(700)),
        DEEP,
        "36:65",
        "tasks." + ".".join(f"k{i}" for i in range(30)),
        None,
    ),
    "recursive alias": Bomb(
        HEAD + "  tasks: &t\n  - {name: t0, image: i, command: *t}\n",
        "recursive alias *t: it refers to a node that contains it",
        "6:35",
        "tasks[0].command",
        None,
    ),
    # the API reads one byte past the limit and stops: the value says so
    "2.4 MB, error on the last line": Bomb(
        HEAD + "  tasks:\n" + "".join(TASK % i for i in range(45_000)) + "  ]\n",
        "the spec is larger than 524288 bytes",
        "",
        "",
        "524289 or more",
    ),
    # the 101st task, line 106 of 46,469
    "60,000 tasks in 512 KiB": Bomb(
        HEAD + "  tasks:\n" + "".join(f"  - t{i}\n" for i in range(60_000))[:500_000],
        "more than 100 tasks (at most 100 are allowed)",
        "106:5",
        "tasks[100]",
        101,
    ),
    # refused on the digits' count, before converting them (the value shown is cut to 40 characters)
    "10,000-digit exit code": Bomb(
        HEAD + "  tasks:\n  - name: t0\n    image: i\n    command: [c]\n"
        "    exitActions: {FAIL: " + "9" * 10_000 + "}\n",
        "an integer may have at most 4300 digits",
        "9:25",
        "tasks[0].exitActions.FAIL",
        "9" * 40 + "...",
    ),
}
