"""configs 0002 gives every existing object revision its own numbered change of its type, in the order
they were written, keeping who, why, tags and when."""

from __future__ import annotations

import datetime

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from tests.migrations.migrating import leaves, migrate

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = ("configs", "0001_initial")


@pytest.fixture
def before_changes():
    latest = leaves()
    try:
        yield migrate([BEFORE]), latest
    finally:
        migrate(latest)


def test_existing_revisions_become_changes_of_their_type(before_changes):
    old_apps, latest = before_changes
    Revision = old_apps.get_model("configs", "Revision")
    Revision.objects.all().delete()
    start = datetime.datetime(2025, 5, 1, tzinfo=datetime.UTC)
    written = [("POOL", "a", 1, "alice (cli)"), ("BACKEND", "b", 1, "bob (api)"), ("POOL", "a", 2, "system")]
    for minute, (config_type, name, number, author) in enumerate(written):
        row = Revision.objects.create(
            config_type=config_type, name=name, revision=number, snapshot={}, author_name=author, tags=["t"]
        )
        Revision.objects.filter(pk=row.pk).update(created_at=start + datetime.timedelta(minutes=minute))

    apps = migrate(latest)

    Change = apps.get_model("configs", "Change")
    rows = Change.objects.order_by("created_at")
    assert [(c.config_type, c.revision, c.name, c.username, c.source, c.tags) for c in rows] == [
        ("POOL", 1, "a", "alice", "cli", ["t"]),
        ("BACKEND", 1, "b", "bob", "api", ["t"]),
        ("POOL", 2, "a", "system", "", ["t"]),
    ]
    assert rows[0].created_at == start
    revisions = apps.get_model("configs", "Revision").objects.order_by("created_at")
    assert [r.change.revision for r in revisions] == [1, 1, 2]
