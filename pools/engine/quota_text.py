"""Plain-English amounts for quota reasons: "16 A100 GPUs", "1.5 CPU cores", "64Gi of memory"."""

from __future__ import annotations

from pools.engine.quantity import human
from pools.engine.quota_model import CPU, GPU


def amount(resource: str, value: int) -> str:
    """The number alone, in the unit `noun` names: GPUs as counts, cores from millicores, memory in binary
    units ("64Gi"); the one human form of `pools.engine.quantity.human`."""
    return human(resource, value)


def noun(resource: str, gpu_noun: str = "GPUs") -> str:
    """What the number counts; `gpu_noun` lets a node pool say "A100 GPUs"."""
    if resource == GPU:
        return gpu_noun
    if resource == CPU:
        return "CPU cores"
    return "memory"


def amount_noun(resource: str, value: int, gpu_noun: str = "GPUs") -> str:
    joint = " of " if resource not in (GPU, CPU) else " "  # "64Gi of memory", "1.5 CPU cores"
    return f"{amount(resource, value)}{joint}{noun(resource, gpu_noun)}"
