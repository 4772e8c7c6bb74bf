"""A Celery worker keeps its database connection from task to task, as a web process keeps it from request to
request (`portal.celery.task_started`): Celery's Django fixup alone would open a new one, a new PostgreSQL
backend, for every task. A connection the server ended is replaced before the next task's first query."""

from __future__ import annotations

import pytest
from django.db import connection, connections

from portal.celery import app
from tests.polling import PATIENCE


@app.task(name="tests.ops.backend_pid", ignore_result=False)
def backend_pid() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return cursor.fetchone()[0]


def run_in_worker() -> int:
    return backend_pid.delay().get(timeout=PATIENCE)


@pytest.mark.django_db(transaction=True)
def test_a_worker_keeps_its_connection_between_tasks_and_replaces_one_the_server_ended(redis_worker, monkeypatch):
    monkeypatch.setitem(connections.settings["default"], "CONN_MAX_AGE", 600)  # as deployed (60 s in production)
    first = run_in_worker()
    assert run_in_worker() == first  # the same PostgreSQL backend: no connection opened for the task

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(%s)", [first])
    replaced = run_in_worker()
    assert replaced != first  # the ended connection was dropped before the task's first query, not failed on
    assert run_in_worker() == replaced


@pytest.mark.django_db(transaction=True)
def test_without_conn_max_age_a_worker_closes_its_connection_after_each_task(redis_worker, monkeypatch):
    monkeypatch.setitem(connections.settings["default"], "CONN_MAX_AGE", 0)
    assert run_in_worker() != run_in_worker()
