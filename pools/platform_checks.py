"""Checks a layer above pools runs when pools' platforms are compiled at a config save (POOL, POD_TEMPLATE,
RESOURCE_VALIDATION), without pools knowing it: quotas registers one in its AppConfig.ready() that refuses a
platform whose templates contradict the node pool it is charged to (docs/quotas.md, "Confinement"). With
none registered (pools used alone), nothing more is checked.

A check takes the pools just recompiled (their platforms' compiled configs and node memberships are stored,
in the writer's transaction) and raises a ConfigError naming the first problem: the whole write rolls back.
"""

from __future__ import annotations

from collections.abc import Callable

Check = Callable[[list], None]  # the pools (model instances) whose platforms were just compiled
_checks: list[Check] = []


def register(check: Check) -> None:
    """Install `check` once (registering it again changes nothing)."""
    if check not in _checks:
        _checks.append(check)


def run(pools: list) -> None:
    for check in _checks:
        check(pools)
