"""Scheduler units as people read them (the node inventory stores millicores, bytes and devices)."""

from __future__ import annotations

from pools.engine.quantity import human


def show(name: str, amount: int) -> str:
    """Human figures for tables: cores, binary units, devices (the one formatter, `quantity.human`)."""
    return human(name, amount)


def used_of_allocatable(name: str, used: int, allocatable: int) -> str:
    return f"{show(name, used)} / {show(name, allocatable)}"
