"""The one human form of resource amounts (issue 35, point 4): binary units with at most one decimal for bytes,
cores with at most one decimal for cpu, and a form that is itself a quantity, so it parses back."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pools.engine.quantity import human, human_pair, parse_quantity

GI = 2**30


@pytest.mark.parametrize(
    ("resource", "amount", "shown"),
    [
        ("memory", 482098327716, "449Gi"),
        ("memory", GI, "1Gi"),
        ("memory", 1536 * 2**20, "1.5Gi"),
        ("memory", 1024 * GI - 1, "1Ti"),  # rounds up to 1024Gi: says the next unit
        ("memory", 5 * 2**40 // 4, "1.3Ti"),
        ("memory", 512, "512"),
        ("memory", 0, "0"),
        ("ephemeral-storage", 500 * GI, "500Gi"),
        ("storage", 3 * 2**40, "3Ti"),
        ("hugepages-2Mi", 2**21, "2Mi"),
        ("cpu", 66500, "66.5"),
        ("cpu", 143000, "143"),
        ("cpu", 500, "0.5"),
        ("cpu", 30, "30m"),  # rounds to no core at all: keeps its millicores
        ("cpu", 0, "0"),
        ("gpu", 8, "8"),
        ("nvidia.com/gpu", 3, "3"),
        ("memory", None, "-"),
    ],
)
def test_human_forms(resource, amount, shown):
    assert human(resource, amount) == shown


def test_two_different_amounts_never_read_the_same():
    assert human_pair("memory", 500 * GI, 482098327716) == ("500Gi", "449Gi")
    assert human_pair("memory", 449 * GI + 2**24, 449 * GI) == ("449.02Gi", "449Gi")
    assert human_pair("cpu", 4001, 4000) == ("4.001", "4")
    assert human_pair("cpu", 4000, 4000) == ("4", "4")


@given(st.integers(min_value=0, max_value=2**62))
def test_bytes_parse_back_within_rounding(amount):
    shown = human("memory", amount)
    assert len(shown.partition(".")[2].rstrip("KMGTPEi")) <= 1  # at most one decimal
    back = parse_quantity(shown).value
    unit = Decimal(1024) ** _power(shown)
    assert abs(back - amount) <= unit / 20  # half of the last decimal shown


@given(st.integers(min_value=0, max_value=10**9))
def test_cores_parse_back_within_rounding(millicores):
    shown = human("cpu", millicores)
    back = parse_quantity(shown).value * 1000
    assert abs(back - millicores) <= 50
    assert shown.endswith("m") or len(shown.partition(".")[2]) <= 1


def _power(shown: str) -> int:
    for power, suffix in enumerate(("Ki", "Mi", "Gi", "Ti", "Pi", "Ei"), start=1):
        if shown.endswith(suffix):
            return power
    return 0
