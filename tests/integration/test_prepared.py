"""portal.prepared: ORM queries and inserts compiled once, run with new parameters, giving exactly what
the ORM gives (same rows, same converted values, same stored data)."""

from __future__ import annotations

import pytest
from django.db.models import Value
from django.db.models.functions import Lower

from access.models import AuditEvent, Role
from pools.models import Platform
from portal.prepared import PreparedInsert, PreparedQuery
from tests.factories import PlatformFactory, PoolFactory, RoleFactory, UserFactory

pytestmark = pytest.mark.django_db


def by_pool(name):
    return Platform.objects.filter(pool__name=name).order_by("name").values_list("pool_id", "name", "pool__name")


def test_rows_match_the_queryset_for_each_parameter():
    for pool_name, platforms in (("alpha", ["a1", "a2"]), ("beta", ["b1"]), ("empty", [])):
        pool = PoolFactory(name=pool_name)
        for platform in platforms:
            PlatformFactory(pool=pool, name=platform)
    query = PreparedQuery(by_pool)
    for name in ("alpha", "beta", "empty", "missing", "alpha"):
        assert query.rows(name) == list(by_pool(name))


def test_list_parameters_compile_per_length_and_an_empty_list_gives_no_rows():
    roles = [
        RoleFactory(name=f"osmo-r{i}", policies=[{"effect": "Allow", "actions": [f"a:{i}"], "resources": ["*"]}])
        for i in range(3)
    ]
    query = PreparedQuery(lambda ids: Role.objects.filter(pk__in=ids).order_by("name").values_list("name", "policies"))
    ids = [r.pk for r in roles]
    assert query.rows(ids[:1]) == [("osmo-r0", [{"effect": "Allow", "actions": ["a:0"], "resources": ["*"]}])]
    assert [name for name, _ in query.rows(ids)] == ["osmo-r0", "osmo-r1", "osmo-r2"]
    assert [name for name, _ in query.rows(list(reversed(ids))[:2])] == ["osmo-r1", "osmo-r2"]
    assert query.rows([]) == []
    assert isinstance(query.rows(ids)[0][1], list)  # JSON columns come back converted, as from the ORM


def test_parameters_that_do_not_reach_the_sql_unchanged_are_refused():
    with pytest.raises(TypeError, match="unchanged"):
        PreparedQuery(lambda prefix: Role.objects.filter(name__startswith=prefix).values_list("name")).rows("osmo")
    with pytest.raises(TypeError, match="values_list"):
        PreparedQuery(lambda name: Role.objects.filter(name=name)).rows("osmo-user")
    with pytest.raises(TypeError, match="int or a str"):
        PreparedQuery(lambda value: Role.objects.filter(immutable=value).values_list("name")).rows(True)


def test_insert_sets_keys_and_auto_fields_and_stores_what_bulk_create_would():
    actor = UserFactory()
    insert = PreparedInsert(AuditEvent)
    for count in (1, 3, 3):  # 3 rows: PostgreSQL's UNNEST layout, compiled once and reused
        events = [
            AuditEvent(
                actor=actor,
                actor_name=actor.username,
                action="test.insert",
                target=f"t/{i}",
                detail={"n": i, "nested": [i, {"x": None}]},
            )
            for i in range(count)
        ]
        assert insert.insert(events) is events
        for i, event in enumerate(events):
            assert event.pk is not None and event.at is not None and not event._state.adding
            stored = AuditEvent.objects.get(pk=event.pk)
            assert (stored.target, stored.detail, stored.actor_id, stored.at) == (
                f"t/{i}",
                {"n": i, "nested": [i, {"x": None}]},
                actor.pk,
                event.at,
            )
    assert AuditEvent.objects.filter(action="test.insert").count() == 7


def test_insert_refuses_expressions():
    with pytest.raises(TypeError, match="plain values"):
        PreparedInsert(AuditEvent).insert([AuditEvent(action="x", target=Lower(Value("X")))])
