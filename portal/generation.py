"""The config generation: a value PostgreSQL changes whenever a table that a process cache is built from is
written, in the writing statement's transaction, so a cache keyed by it can never serve what the database
no longer holds.

Tables are enrolled by their app's migration (`enroll`): pools' platforms and pools (membership's platform
targets), quotas' node pools. A statement trigger on each sets the one row of `portal_config_generation` to
`<transaction id>.<sequence value>`: unique for the life of the cluster, never reused after a rollback (the
sequence is not transactional) and never equal across two databases. A reader that reads the generation
before the data it caches may store data newer than the generation says, never older: the next read of a
newer generation misses.

Why not a signal or a timestamp: writes come from other processes (the web, the worker), from bulk
`update()`s that send no signal, and from tests' transactions that roll back. On SQLite there are no
triggers: `READ_SQL` is None, and readers cache nothing.
"""

from __future__ import annotations

TABLE = "portal_config_generation"
_FUNCTION = "portal_bump_config_generation"
_SEQUENCE = "portal_config_generation_seq"

_INSTALL = f"""
CREATE SEQUENCE IF NOT EXISTS {_SEQUENCE};
CREATE TABLE IF NOT EXISTS {TABLE} (id integer PRIMARY KEY CHECK (id = 1), value text NOT NULL);
CREATE OR REPLACE FUNCTION {_FUNCTION}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO {TABLE} (id, value)
    VALUES (1, pg_current_xact_id()::text || '.' || nextval('{_SEQUENCE}')::text)
    ON CONFLICT (id) DO UPDATE SET value = EXCLUDED.value;
    RETURN NULL;
END $$;
"""
_UNINSTALL = (
    f"DROP FUNCTION IF EXISTS {_FUNCTION}() CASCADE; DROP TABLE IF EXISTS {TABLE}; DROP SEQUENCE IF EXISTS {_SEQUENCE};"
)

# A scalar subquery: NULL until an enrolled table is first written.
_READ = f"(SELECT value FROM {TABLE} WHERE id = 1)"


def read_sql(vendor: str) -> str | None:
    """SQL for the current generation (to add to a query the caller makes anyway), None where there is none."""
    return _READ if vendor == "postgresql" else None


def install(apps, schema_editor) -> None:
    """Migration step: the table, the sequence and the trigger function (PostgreSQL only)."""
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(_INSTALL)


def uninstall(apps, schema_editor) -> None:
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(_UNINSTALL)


def enroll(*tables: str):
    """Migration steps (forwards, backwards) making every write to `tables` change the generation."""

    def forwards(apps, schema_editor) -> None:
        if schema_editor.connection.vendor != "postgresql":
            return
        for table in tables:
            schema_editor.execute(
                f"CREATE TRIGGER {table}_config_generation AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE "
                f"ON {table} FOR EACH STATEMENT EXECUTE FUNCTION {_FUNCTION}()"
            )

    def backwards(apps, schema_editor) -> None:
        if schema_editor.connection.vendor != "postgresql":
            return
        for table in tables:
            schema_editor.execute(f"DROP TRIGGER IF EXISTS {table}_config_generation ON {table}")

    return forwards, backwards


class GenerationCache:
    """At most `size` values, each valid for the generation it was read under. A None generation (none
    read, SQLite) never hits and is never stored."""

    def __init__(self, size: int = 256) -> None:
        self._size = size
        self._entries: dict[object, tuple[str, object]] = {}

    def get(self, key: object, generation: str | None, default: object = None) -> object:
        entry = self._entries.get(key)
        if generation is None or entry is None or entry[0] != generation:
            return default
        return entry[1]

    def put(self, key: object, generation: str | None, value: object) -> None:
        if generation is None:
            return
        if len(self._entries) >= self._size and key not in self._entries:
            self._entries.clear()
        self._entries[key] = (generation, value)

    def clear(self) -> None:
        self._entries.clear()
