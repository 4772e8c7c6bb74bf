"""How much work one rendered template string may do. Pure: no Django, no I/O, no clock.

An output cap alone does not bound the work: `{{ [[[1]*1000]*1000]*30 }}` builds a 30-item list cheaply
(30 references to one list of 1000 references to one list), but printing it touches 30 million items,
seconds of CPU before the first character reaches the cap. So every operation of the sandbox that copies,
compares or prints values pays their *weight* (what walking them touches, shared lists counted each time
they appear, as printing would) from a budget of MAX_WORK units per rendered string, before it runs:

    budget = WorkBudget()
    budget.charge(repeat_weight([[1] * 1000], 1000, budget.left), "[...] * 1000")   # BudgetExceeded

Measuring a weight stops once it exceeds what is left, so measuring costs at most what it charges.
"""

from __future__ import annotations

from collections.abc import ItemsView, KeysView, Mapping, ValuesView

__all__ = ["MAX_WORK", "BudgetExceeded", "WorkBudget", "repeat_weight", "weight"]

MAX_WORK = 200_000  # units: about one list item or 64 characters each; printing 200,000 items takes ~20 ms
_CHARS_PER_UNIT = 64
_SIZED = (range, bytes, KeysView, ValuesView, ItemsView)


class BudgetExceeded(Exception):
    """The template string would do more work than MAX_WORK units."""


class WorkBudget:
    __slots__ = ("left", "limit")

    def __init__(self, limit: int = MAX_WORK) -> None:
        self.limit = limit
        self.left = limit

    def charge(self, units: int, what: str) -> None:
        self.left -= units
        if self.left < 0:
            raise BudgetExceeded(
                f"{what} is too much work for one template string (more than {self.limit} "
                "units: list items or 64-character pieces of text)"
            )

    def charge_values(self, what: str, *values: object) -> None:
        for value in values:
            self.charge(weight(value, self.left + 1), what)


def repeat_weight(sequence: object, times: int, limit: int) -> int:
    """The weight of `sequence * times`, measured on `sequence` (never built)."""
    if times <= 0:
        return 1
    return weight(sequence, limit // times + 1) * times


def weight(value: object, limit: int = MAX_WORK) -> int:
    """What walking (printing, copying, comparing) `value` touches: 1 per item, 1 + len/64 per text, a shared
    list counted wherever it appears. Each distinct list is walked once; the result is capped just above
    `limit` (the walk stops there)."""
    if not _is_container(value):
        return _scalar_weight(value)
    known: dict[int, int] = {}  # id -> weight of containers already measured (they stay alive meanwhile)
    pending: set[int] = set()
    stack: list[tuple[object, bool]] = [(value, False)]
    while stack:
        item, children_done = stack.pop()
        key = id(item)
        if key in known:
            continue
        if not children_done:
            if key in pending:  # a cycle (not possible in the immutable sandbox): count it once
                known[key] = 1
                continue
            pending.add(key)
            stack.append((item, True))
            stack.extend((child, False) for child in _children(item) if _is_container(child) and id(child) not in known)
            continue
        total = 1
        for child in _children(item):
            total += known.get(id(child), 1) if _is_container(child) else _scalar_weight(child)
            if total > limit:
                return total  # over the limit: the exact figure does not matter
        known[key] = total
    return known[id(value)]


def _is_container(value: object) -> bool:
    return isinstance(value, (list, tuple, set, frozenset, dict))


def _children(value: object):
    if isinstance(value, Mapping):
        for key, item in value.items():
            yield key
            yield item
    else:
        yield from value


def _scalar_weight(value: object) -> int:
    if isinstance(value, str):
        return 1 + len(value) // _CHARS_PER_UNIT
    if isinstance(value, _SIZED):  # what walking them costs is their length (never Jinja's Undefined)
        return 1 + len(value)
    return 1
