"""portal.backoff: the one capped, doubling wait every retry loop uses."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from clusters.watchloop import EventDrain
from portal.backoff import capped


def test_it_doubles_from_the_start_up_to_the_maximum():
    assert [capped(1.0, 30.0, attempt) for attempt in range(1, 8)] == [1, 2, 4, 8, 16, 30, 30]


@given(attempt=st.integers(min_value=-5, max_value=10**6))
def test_a_long_outage_never_overflows_and_never_passes_the_maximum(attempt):
    # before: start * 2 ** (attempt - 1) raised OverflowError past about 1,024 failures in a row
    assert 0.5 <= capped(0.5, 60.0, attempt) <= 60.0


def test_the_watch_loops_wait_by_it_after_a_thousand_failures():
    drain = EventDrain()
    assert drain._backoff(5000) == drain.backoff_max
    assert drain._database_backoff(1) == 0.0  # a terminated session: reconnect at once
    assert drain._database_backoff(5000) == drain.database_retry_max
