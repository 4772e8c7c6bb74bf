"""The what-if on the embedded default's database: its baseline reads each node pool's NODE_POOL revision in
force at the period's start with a query SQLite runs too (a DISTINCT ON, PostgreSQL's only, was a stack trace
under `make dev` that the PostgreSQL suite never saw)."""

from __future__ import annotations

import os

from tests.devstack import manage


def test_quota_what_if_answers_on_sqlite(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_URL", "CELERY_", "TEST_"))}
    env.update(DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}", PORTAL_VAR_DIR=str(tmp_path), DEBUG="true")
    for step in (("migrate", "--noinput", "-v0"), ("seed_demo",)):
        assert manage(env, *step).returncode == 0
    done = manage(env, "quota", "what-if", "--set", "robotics gpu-cluster-01-default gpu=16", "--format", "json")
    assert done.returncode == 0, done.stderr[-2000:]
    assert '"robotics"' in done.stdout and "Traceback" not in done.stderr
