"""Spec parsing: `portal.safe_yaml` (one pass over libyaml's events, every limit checked) against plain
`yaml.load(..., Loader=yaml.CSafeLoader)` (libyaml composes nodes, Python constructs), on a 1-task and a
1,000-task spec (~127 KB), plus the time to refuse the 30-level merge-key bomb.

safe_yaml builds plain values straight from the events (no node graph, no constructor dispatch), so it is
faster than CSafeLoader even though it also tracks counts, depth, duplicate keys and task items.
"""

from __future__ import annotations

import yaml

from bench.harness import Row, measure
from portal.safe_yaml import ItemLimit, Limits, SafeYAMLError, load_yaml

TASK = (
    "  - name: t{i}\n    image: nvcr.io/nvidia/pytorch:24.01-py3\n    command: [python, train.py, --epochs, '10']\n"
    "    environment: {{RANK: '{i}', NCCL_DEBUG: INFO}}\n    resource: default\n"
)
# The 1,000-task spec needs limits above the defaults (20,000 values, 100 tasks): ~14 values per task.
WIDE = Limits(
    max_bytes=4 * 1024 * 1024,
    max_nodes=100_000,
    max_depth=32,
    items=ItemLimit("tasks", 1000, (("workflow", "tasks"), ("workflow", "groups", "*", "tasks"))),
)


def spec(tasks: int) -> str:
    return (
        "version: 2\nworkflow:\n  name: bench\n  resources:\n    default: {cpu: 8, gpu: 1, memory: 64Gi}\n"
        "  tasks:\n" + "".join(TASK.format(i=i) for i in range(tasks))
    )


def merge_bomb(levels: int = 30) -> str:
    return "k0: &k0 {a: 1}\n" + "".join(f"k{i}: &k{i} {{<<: [*k{i - 1}, *k{i - 1}]}}\n" for i in range(1, levels + 1))


def _refuse(text: str) -> None:
    try:
        load_yaml(text)
    except SafeYAMLError:
        return
    raise AssertionError("the bomb was accepted")


def run() -> list[Row]:
    rows = []
    for tasks, runs in ((1, 500), (1000, 20)):
        text = spec(tasks)
        assert load_yaml(text, WIDE) == yaml.load(text, Loader=yaml.CSafeLoader)  # noqa: S506 - the C SafeLoader
        size = f"{len(text) / 1024:.0f} KiB" if len(text) > 4096 else f"{len(text)} B"
        rows.append(
            measure(
                f"parse spec, {tasks} task(s), yaml CSafeLoader",
                lambda text=text: yaml.load(text, Loader=yaml.CSafeLoader),
                runs=runs,  # noqa: S506
                note=size,
            )
        )
        rows.append(
            measure(
                f"parse spec, {tasks} task(s), portal.safe_yaml",
                lambda text=text: load_yaml(text, WIDE),
                runs=runs,
                note=f"{size}, all limits checked",
            )
        )
    rows.append(
        measure(
            "refuse the 30-level merge-key bomb, portal.safe_yaml",
            lambda: _refuse(merge_bomb()),
            runs=200,
            target="< 100 ms",
            note="CSafeLoader: minutes, >1.2 GB",
        )
    )
    return rows
