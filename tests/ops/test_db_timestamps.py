"""Timestamps read through psycopg's compiled parser (portal/postgresql/timestamps.py) are the values Django's own
loader returns: the same instant, in Django's connection time zone, naive where that is None. Real PostgreSQL;
Django's loader (`psycopg_any.register_tzloader`) is the reference, read from the same rows."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from django.db import DataError, connection
from django.db.backends.postgresql.psycopg_any import register_tzloader
from hypothesis import given, settings
from hypothesis import strategies as st
from psycopg.pq import Format

from portal.postgresql import timestamps
from tests.factories import WorkflowFactory
from workflows.models import Workflow

pytestmark = pytest.mark.django_db

# PostgreSQL's timestamptz range that Python's datetime can hold, at any offset a session may be in
moments = st.datetimes(
    min_value=datetime(1, 1, 2),
    max_value=datetime(9999, 12, 30),
    timezones=st.builds(timezone, st.integers(-14 * 60, 14 * 60).map(lambda m: timedelta(minutes=m))),
)


def _read(values: list[datetime], zone) -> list[datetime]:
    """`values` sent and read back as timestamptz, with the loader for `zone` that `register` puts on the cursor."""
    with connection.cursor() as cursor:
        register_tzloader(zone, cursor.cursor)  # Django's own, the reference
        cursor.execute("SELECT unnest(%s::timestamptz[])", [values])
        reference = [row[0] for row in cursor.fetchall()]
    with connection.cursor() as cursor:
        cursor.cursor.adapters.register_loader(timestamps.TIMESTAMPTZ, timestamps.loader(zone))
        cursor.execute("SELECT unnest(%s::timestamptz[])", [values])
        ours = [row[0] for row in cursor.fetchall()]
    assert [(v, v.tzinfo) for v in ours] == [(v, v.tzinfo) for v in reference]
    return ours


def test_the_connection_reads_timestamps_with_the_compiled_parser():
    connection.ensure_connection()
    registered = connection.connection.adapters.get_loader(timestamps.TIMESTAMPTZ, Format.TEXT)
    assert registered is timestamps.loader(connection.timezone)
    with connection.cursor() as cursor:  # Django's per-cursor check keeps it: same time zone
        assert cursor.cursor.adapters.get_loader(timestamps.TIMESTAMPTZ, Format.TEXT) is registered
    workflow = WorkflowFactory()
    assert Workflow.objects.get(pk=workflow.pk).created_at == workflow.created_at  # through the ORM
    assert Workflow.objects.values_list("created_at", flat=True).get(pk=workflow.pk).tzinfo is UTC


@settings(max_examples=60, deadline=None)
@given(st.lists(moments, min_size=1, max_size=20))
def test_every_instant_reads_as_djangos_loader_reads_it(values):
    read = _read(values, connection.timezone)
    assert read == values  # the same instants
    assert {v.tzinfo for v in read} == {UTC}


@settings(max_examples=20, deadline=None)
@given(st.lists(moments, min_size=1, max_size=5), st.sampled_from([None, timezone(timedelta(hours=5, minutes=30))]))
def test_another_zone_or_none_is_given_as_django_gives_it(values, zone):
    """Django replaces the zone (it assumes the session's is its own); None gives naive values."""
    _read(values, zone)


def test_null_and_infinity_are_left_to_psycopg():
    with connection.cursor() as cursor:
        cursor.execute("SELECT NULL::timestamptz")
        assert cursor.fetchone() == (None,)
        cursor.execute("SELECT 'infinity'::timestamptz")
        with pytest.raises(DataError, match="infinity"):
            cursor.fetchone()
