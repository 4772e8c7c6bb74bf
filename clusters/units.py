"""Scheduler units as people read them (the node inventory stores millicores, bytes and devices)."""

from __future__ import annotations


def show(name: str, amount: int) -> str:
    """Human figures for tables: cores, GiB, devices."""
    if name == "cpu":
        cores = amount / 1000
        return f"{cores:g}" if amount % 1000 == 0 else f"{cores:.1f}"
    if name in ("memory", "ephemeral-storage"):
        return f"{amount / 2**30:.0f}Gi" if amount >= 2**30 or amount == 0 else f"{amount / 2**20:.0f}Mi"
    return str(amount)


def used_of_allocatable(name: str, used: int, allocatable: int) -> str:
    return f"{show(name, used)} / {show(name, allocatable)}"
