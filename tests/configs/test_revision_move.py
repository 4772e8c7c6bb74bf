"""Revision moved from pools to configs: a database with history keeps every row across the move."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from configs.models import Revision

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("pools", "0003_encrypted_backend_secrets"), ("configs", None)]
AFTER = [("pools", "0006_revision_moves_to_configs"), ("configs", "0001_initial")]


def _migrate(targets):
    executor = MigrationExecutor(connection)
    executor.migrate(targets)
    executor.loader.build_graph()
    return executor.loader.project_state([target for target in targets if target[1]]).apps


def test_revisions_written_before_the_move_are_read_after_it():
    old_apps = _migrate(BEFORE)
    assert not any(model._meta.app_label == "configs" for model in old_apps.get_models())
    OldRevision = old_apps.get_model("pools", "Revision")
    OldRevision.objects.create(
        config_type="POOL",
        name="team-a",
        revision=1,
        snapshot={"backend": "k1"},
        author_name="alice (cli)",
        tags=["seed"],
    )
    OldRevision.objects.create(config_type="POOL", name="team-a", revision=2, snapshot=None, deleted=True)
    try:
        new_apps = _migrate(AFTER)
        with pytest.raises(LookupError):
            new_apps.get_model("pools", "Revision")
        moved = new_apps.get_model("configs", "Revision")
        rows = list(moved.objects.order_by("revision").values("name", "revision", "snapshot", "deleted", "tags"))
        assert rows == [
            {"name": "team-a", "revision": 1, "snapshot": {"backend": "k1"}, "deleted": False, "tags": ["seed"]},
            {"name": "team-a", "revision": 2, "snapshot": None, "deleted": True, "tags": []},
        ]
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())
    assert Revision.objects.filter(name="team-a").count() == 2  # the current model reads the same table
