"""Moving the test database to a migration state and back, for the data-migration tests."""

from __future__ import annotations

from django.db import connection
from django.db.migrations.executor import MigrationExecutor


def migrate(targets):
    """Migrate to `targets` (app, migration) pairs; the app registry of that state."""
    executor = MigrationExecutor(connection)
    executor.migrate(targets)
    executor.loader.build_graph()
    return executor.loader.project_state(targets).apps


def leaves() -> list[tuple[str, str]]:
    """The latest migration of every app (where to migrate back to)."""
    return MigrationExecutor(connection).loader.graph.leaf_nodes()
