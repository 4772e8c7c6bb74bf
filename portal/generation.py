"""The config generation: a value PostgreSQL changes whenever a table that a process cache is built from is
written, by the writing transaction as it commits, so a cache keyed by it can never serve what the database
no longer holds.

Tables are enrolled by their app's migration (`enroll`): pools' platforms and pools (membership's platform
targets), quotas' node pools. The one row of `portal_config_generation` holds `<transaction id>.<sequence
value>`: unique for the life of the cluster, never reused after a rollback (the sequence is not
transactional) and never equal across two databases. A reader that reads the generation before the data it
caches may store data newer than the generation says, never older: the next read of a newer generation misses.

The row is written at commit, once per transaction, so a config write holds its lock only while it commits:
two config writers do not queue for their whole transactions, and a writer that takes another row lock (an
admission pass's node pool) after writing an enrolled table cannot deadlock with one that took them in the
other order. Per enrolled table:
- a deferred constraint trigger (per row) queues, at the transaction's first written row, a row of
  `portal_config_generation_pending`, whose own deferred trigger writes the generation. Written by the first
  trigger, the generation would be locked before the commit's later checks (Django's deferred foreign keys,
  which may wait for another session's row lock: the deadlock again); queued at commit, its trigger runs
  after them all, so the commit holds the row only while it ends;
- a statement trigger gives the writing transaction a value of its own (`set_config(…, true)`, changed by
  every writing statement, gone at its end), which the read returns in that transaction: a cache filled there
  keys the uncommitted data under a value nobody else sees; and, for TRUNCATE (which constraint triggers
  cannot follow, and which locks the whole table anyway), writes the generation at once.
The whole transaction's writes and the new generation become visible together, at its commit.

Why not a signal or a timestamp: writes come from other processes (the web, the worker), from bulk
`update()`s that send no signal, and from tests' transactions that roll back. On SQLite there are no
triggers: `read_sql` is None, and readers cache nothing.
"""

from __future__ import annotations

TABLE = "portal_config_generation"
_FUNCTION = "portal_bump_config_generation"
_SEQUENCE = "portal_config_generation_seq"

# portal 0002's objects, as that migration made them (and the statement triggers of `enroll` until pools 0009).
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

# Transaction-local settings: the writing transaction's own value, and the id of the transaction whose commit
# is already to write the generation.
_LOCAL = "portal.config_generation"
_QUEUED = "portal.config_generation_queued"
_PENDING = "portal_config_generation_pending"
_MARK = "portal_mark_config_generation"
_QUEUE = "portal_queue_config_generation"
_COMMIT = "portal_commit_config_generation"
_NEW_VALUE = f"pg_current_xact_id()::text || '.' || nextval('{_SEQUENCE}')::text"
_WRITE = (
    f"INSERT INTO {TABLE} (id, value) VALUES (1, {_NEW_VALUE}) ON CONFLICT (id) DO UPDATE SET value = EXCLUDED.value"
)

_INSTALL_AT_COMMIT = f"""
CREATE TABLE IF NOT EXISTS {_PENDING} (xact xid8 PRIMARY KEY);
CREATE OR REPLACE FUNCTION {_MARK}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM set_config('{_LOCAL}', {_NEW_VALUE}, true);
    IF TG_OP = 'TRUNCATE' THEN
        {_WRITE};
    END IF;
    RETURN NULL;
END $$;
CREATE OR REPLACE FUNCTION {_QUEUE}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('{_QUEUED}', true) IS DISTINCT FROM pg_current_xact_id()::text THEN
        PERFORM set_config('{_QUEUED}', pg_current_xact_id()::text, true);
        INSERT INTO {_PENDING} (xact) VALUES (pg_current_xact_id()) ON CONFLICT DO NOTHING;
    END IF;
    RETURN NULL;
END $$;
CREATE OR REPLACE FUNCTION {_COMMIT}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    {_WRITE};
    DELETE FROM {_PENDING} WHERE xact = NEW.xact;
    RETURN NULL;
END $$;
DROP TRIGGER IF EXISTS {_PENDING}_commit ON {_PENDING};
CREATE CONSTRAINT TRIGGER {_PENDING}_commit AFTER INSERT ON {_PENDING}
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION {_COMMIT}();
"""
_UNINSTALL_AT_COMMIT = (
    f"DROP TABLE IF EXISTS {_PENDING}; DROP FUNCTION IF EXISTS {_COMMIT}(); "
    f"DROP FUNCTION IF EXISTS {_QUEUE}() CASCADE; DROP FUNCTION IF EXISTS {_MARK}() CASCADE;"
)

# The writing transaction's own value, else the committed one (NULL until an enrolled table is first written).
_READ = f"COALESCE(NULLIF(current_setting('{_LOCAL}', true), ''), (SELECT value FROM {TABLE} WHERE id = 1))"


def read_sql(vendor: str) -> str | None:
    """SQL for the current generation (to add to a query the caller makes anyway), None where there is none."""
    return _READ if vendor == "postgresql" else None


def install(apps, schema_editor) -> None:
    """Migration step: the table, the sequence and the trigger function (PostgreSQL only)."""
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(_INSTALL)


def uninstall(apps, schema_editor) -> None:
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(_UNINSTALL_AT_COMMIT + _UNINSTALL)


def _drop_triggers(schema_editor, table: str) -> None:
    for name in (f"{table}_config_generation", f"{table}_config_generation_commit"):
        schema_editor.execute(f"DROP TRIGGER IF EXISTS {name} ON {table}")


def enroll(*tables: str):
    """Migration steps (forwards, backwards) making every write to `tables` change the generation at commit
    (replacing the statement trigger that an earlier `enroll` made)."""

    def forwards(apps, schema_editor) -> None:
        if schema_editor.connection.vendor != "postgresql":
            return
        schema_editor.execute(_INSTALL_AT_COMMIT)
        for table in tables:
            _drop_triggers(schema_editor, table)
            schema_editor.execute(
                f"CREATE TRIGGER {table}_config_generation AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE "
                f"ON {table} FOR EACH STATEMENT EXECUTE FUNCTION {_MARK}()"
            )
            schema_editor.execute(
                f"CREATE CONSTRAINT TRIGGER {table}_config_generation_commit AFTER INSERT OR UPDATE OR DELETE "
                f"ON {table} DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION {_QUEUE}()"
            )

    def backwards(apps, schema_editor) -> None:
        if schema_editor.connection.vendor != "postgresql":
            return
        for table in tables:
            _drop_triggers(schema_editor, table)

    return forwards, backwards


def restore_statement_triggers(*tables: str):
    """Migration step undoing `enroll(*tables)` where it replaced the statement triggers that wrote the generation
    in the writing statement (pools 0009, quotas 0004): those triggers again. The commit-time functions stay
    for other tables (`uninstall` drops them)."""

    def restore(apps, schema_editor) -> None:
        if schema_editor.connection.vendor != "postgresql":
            return
        for table in tables:
            _drop_triggers(schema_editor, table)
            schema_editor.execute(
                f"CREATE TRIGGER {table}_config_generation AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE "
                f"ON {table} FOR EACH STATEMENT EXECUTE FUNCTION {_FUNCTION}()"
            )

    return restore


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
