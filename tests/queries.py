"""Counting database queries in tests: the one helper behind every query-count assertion.

assert_constant_queries(lambda: client.get(url), grow=lambda: add_pools(15))   # no N+1
with captured_queries() as queries:                                            # what ran, to inspect
    policy.decide(...)
assert len(queries) == 1
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from django.db import connection
from django.test.utils import CaptureQueriesContext


@contextmanager
def captured_queries() -> Iterator[list[str]]:
    """The SQL of every query run inside the block (on the default database), in order; filled on exit."""
    captured: list[str] = []
    with CaptureQueriesContext(connection) as context:
        yield captured
    captured.extend(query["sql"] for query in context.captured_queries)


def queries_of(action: Callable[[], Any]) -> list[str]:
    """The SQL of the queries `action()` runs."""
    with captured_queries() as queries:
        action()
    return queries


def assert_constant_queries(action: Callable[[], Any], grow: Callable[[], Any], *, at_most: int | None = None) -> int:
    """`action()` runs as many queries after `grow()` (more rows) as before; returns that number.
    With `at_most`, also no more than that. A failure lists the queries of the second run."""
    few = queries_of(action)
    grow()
    many = queries_of(action)
    assert len(many) == len(few), "\n".join([f"{len(few)} queries, then {len(many)}:", *many])
    if at_most is not None:
        assert len(many) <= at_most, "\n".join([f"{len(many)} queries, at most {at_most} expected:", *many])
    return len(many)
