"""Example workflow specs for a pool, sized with the pool's and platform's own defaults.

The first example targets the pool's default platform and is what the editor starts with; the others
show one task per other platform and a two-task group. Every example is plain OSMO v2 YAML.

Sizes are the platform's defaults (`USER_CPU`, `USER_GPU`, `USER_MEMORY`, `USER_STORAGE`), reduced to
half of the largest member node where a default would not fit on any node, so that an example is
accepted as it is (one aggregate query per platform).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import yaml
from django.db.models import Max

from clusters.models import Node
from pools.engine.errors import EngineError
from pools.engine.quantity import parse_quantity
from pools.models import Pool

IMAGE = "nvcr.io/nvidia/pytorch:24.01-py3"
RESOURCE_VARIABLES = (
    ("cpu", "USER_CPU", 1),
    ("gpu", "USER_GPU", 0),
    ("memory", "USER_MEMORY", "4Gi"),
    ("storage", "USER_STORAGE", "10Gi"),
)


@dataclass
class Example:
    key: str
    title: str
    text: str


def example_choices(pool: Pool) -> list[Example]:
    """Keys and titles only (the editor's chips; `text` is empty): one query, no sizing, no YAML. A page that
    answers a submission needs no more, and must not spend the sizing queries before reading the spec."""
    return [Example(key, title, "") for key, title, _ in _choices(pool)]


def example(pool: Pool, key: str | None) -> Example:
    """The example `key` (the first one when unknown) with its text; only that one is sized."""
    choices = _choices(pool)
    return _with_text(pool, next((c for c in choices if c[0] == key), choices[0]))


def _choices(pool: Pool) -> list[tuple[str, str, tuple]]:
    """(key, title, (builder, platform)) per example, the default platform's first."""
    platforms = {p.name: p for p in pool.platforms.order_by("name")}
    default = pool.default_platform if pool.default_platform in platforms else next(iter(platforms), "")
    order = [default] + [name for name in platforms if name != default] if default else []
    found = [
        (
            f"single-{name}",
            f"One task on {name}" + (" (default)" if name == default else ""),
            (_single, platforms[name]),
        )
        for name in order
    ]
    if default:
        found.append(("group", f"Two tasks in a group on {default}", (_group, platforms[default])))
    if not found:
        found.append(("single", "One task", (_single, None)))
    return found


def _with_text(pool: Pool, choice: tuple[str, str, tuple]) -> Example:
    key, title, (build, platform) = choice
    return Example(key, title, build(pool, platform))


def _resources(pool: Pool, platform) -> dict:
    values = {**(pool.common_default_variables or {}), **((platform.default_variables if platform else None) or {})}
    largest = _largest_node(platform)
    resources = {}
    for key, variable, fallback in RESOURCE_VARIABLES:
        value = values.get(variable, fallback)
        value = value if isinstance(value, (int, float, str)) and not isinstance(value, bool) else fallback
        resources[key] = _fitted(key, value, largest.get(key))
    if platform is not None:
        resources["platform"] = platform.name
    return resources


# column of Node, and how to write half of the largest node's amount
_NODE_COLUMNS = {
    "cpu": "cpu_allocatable",
    "gpu": "gpu_allocatable",
    "memory": "memory_allocatable",
    "storage": "storage_allocatable",
}


def _largest_node(platform) -> dict:
    if platform is None or platform.pk is None:
        return {}
    found = Node.objects.filter(memberships__platform=platform).aggregate(
        **{key: Max(column) for key, column in _NODE_COLUMNS.items()}
    )
    return {key: amount for key, amount in found.items() if amount}


def _fitted(key: str, value, largest: int | None):
    """`value`, or half of the largest node's amount when `value` exceeds what any node has."""
    if not largest:
        return value
    try:
        quantity = parse_quantity(value)
    except EngineError:
        return value
    amount = quantity.milli_value() if key == "cpu" else quantity.int_value()
    if amount <= largest:
        return value
    if key == "gpu":
        return largest
    if key == "cpu":
        return max(1, largest // 2000)
    return f"{max(1, largest // 2 // 2**30)}Gi"


def _name(prefix: str, pool: Pool) -> str:
    slug = re.sub(r"[^a-z0-9-]+", "-", pool.name.lower()).strip("-")
    return f"{prefix}-{slug}"[:40].rstrip("-") or prefix


def _dump(document: dict) -> str:
    return yaml.safe_dump(document, sort_keys=False, default_flow_style=False, width=100)


def _single(pool: Pool, platform) -> str:
    header = (
        f"# One task on {platform.name if platform else 'the default platform'} of pool {pool.name}, "
        "sized with the platform's defaults.\n# Edit, then Preview to see the exact pod and which nodes "
        "would take it.\n"
    )
    return header + _dump(
        {
            "version": 2,
            "workflow": {
                "name": _name("hello", pool),
                "resources": {"default": _resources(pool, platform)},
                "tasks": [
                    {
                        "name": "main",
                        "image": IMAGE,
                        "command": ["python", "-c"],
                        "args": ["import torch; print(torch.cuda.device_count(), 'GPUs visible')"],
                    }
                ],
            },
        }
    )


def _group(pool: Pool, platform) -> str:
    header = "# Two tasks started together (a group): the lead task's result is the group's result.\n"
    return header + _dump(
        {
            "version": 2,
            "workflow": {
                "name": _name("pair", pool),
                "resources": {"default": _resources(pool, platform)},
                "groups": [
                    {
                        "name": "pair",
                        "ignoreNonleadStatus": True,
                        "tasks": [
                            {
                                "name": "server",
                                "lead": True,
                                "image": IMAGE,
                                "command": ["python", "-m", "http.server", "8000"],
                            },
                            {
                                "name": "client",
                                "image": IMAGE,
                                "command": ["python", "-c"],
                                "args": ["print('hello from {{workflow_id}}')"],
                            },
                        ],
                    }
                ],
            },
        }
    )
