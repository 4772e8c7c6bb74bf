"""Plain-English amounts for quota reasons: "16 A100 GPUs", "1.5 CPU cores", "64 GiB of memory"."""

from __future__ import annotations

from pools.engine.quota_model import CPU, GPU

_GIB = 1024**3


def _trim(value: float) -> str:
    text = f"{value:.2f}".rstrip("0").rstrip(".")
    return text or "0"


def amount(resource: str, value: int) -> str:
    """The number alone, in the unit `noun` names: GPUs as counts, cores from millicores, GiB from bytes."""
    if resource == GPU:
        return str(value)
    if resource == CPU:
        return _trim(value / 1000)
    return _trim(value / _GIB)


def noun(resource: str, gpu_noun: str = "GPUs") -> str:
    """What the number counts; `gpu_noun` lets a node pool say "A100 GPUs"."""
    if resource == GPU:
        return gpu_noun
    if resource == CPU:
        return "CPU cores"
    return "GiB of memory"


def amount_noun(resource: str, value: int, gpu_noun: str = "GPUs") -> str:
    return f"{amount(resource, value)} {noun(resource, gpu_noun)}"
