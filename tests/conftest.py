"""Suite-wide fixtures. Database tests run on PostgreSQL under `make test` (DATABASE_URL)."""

from __future__ import annotations

import os
import re
import time

import pytest
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings
from rest_framework.test import APIClient

from tests.factories import UserFactory
from tests.polling import PATIENCE

# Hypothesis' clock-based checks judge the machine, not the code: on a busy 2-core machine generating 8 quota trees
# took 1.1 s and failed a test (too_slow), and a slow example would miss a deadline. Off for the whole suite.
hypothesis_settings.register_profile("suite", deadline=None, suppress_health_check=[HealthCheck.too_slow])
hypothesis_settings.load_profile("suite")


def pytest_configure(config):
    """The suite runs on the development settings; DEBUG=false would redirect every request to HTTPS."""
    from django.conf import settings

    _own_broker_database()
    if settings.SECURE_SSL_REDIRECT:
        raise pytest.UsageError(
            "the tests need the development settings: run them with `make test` "
            "(it sets DEBUG=true; tests/security checks the production settings)"
        )


# Marked files of a minute or more go first, the longest (the soak's 3 minutes) before the others: the scale
# proofs, browsers over many pages, the API fuzz.
HEAVY_MARKS = ("soak", "scale", "heavy")


def pytest_collection_modifyitems(config, items):
    """The heavy files first, the rest in their usual order: `make test`'s workers (xdist, a file at a time, in
    collection order) then run them beside the many short files instead of alone at the end (2026-12-04: the
    last 1 % of the tests, the soak, axe and the fuzz, took 7 of the suite's 18 minutes)."""

    def rank(item) -> int:
        if item.get_closest_marker("soak"):
            return 0
        return 1 if any(item.get_closest_marker(mark) for mark in HEAVY_MARKS) else 2

    items.sort(key=rank)  # stable: each file's tests keep their order


def _own_broker_database() -> None:
    """Under `make test`'s parallel run (pytest-xdist) each worker gets a Redis database of its own, one below
    TEST_BROKER_URL's per worker (gw0: 15, gw1: 14), as pytest-django gives each its own PostgreSQL database:
    a worker's purge must not take the other's messages."""
    worker, url = os.environ.get("PYTEST_XDIST_WORKER", ""), os.environ.get("TEST_BROKER_URL", "")
    match = re.fullmatch(r"(redis://[^/]+/)(\d+)", url)
    if not worker.startswith("gw") or not match:
        return
    database = int(match.group(2)) - int(worker[2:])
    if database < 0:
        raise pytest.UsageError(f"TEST_BROKER_URL {url}: too few Redis databases below it for worker {worker}")
    os.environ["TEST_BROKER_URL"] = f"{match.group(1)}{database}"


@pytest.fixture(autouse=True)
def _no_request_state_left():
    """A test that starts a request and never finishes it (a response left unclosed) would leave this thread
    remembering the access epochs it read (access.epoch, per request), and a later test in the same worker
    would read stale epochs outside any request; each test starts as a fresh thread of a server would."""
    yield
    from access import epoch

    epoch.end_request()


@pytest.fixture
def admin_user(db):
    return UserFactory(username="root-admin", is_staff=True, is_superuser=True)


@pytest.fixture
def admin_api(admin_user) -> APIClient:
    client = APIClient()
    client.force_authenticate(admin_user)
    return client


@pytest.fixture
def admin_client(client, admin_user):
    client.force_login(admin_user)
    return client


@pytest.fixture
def redis_worker(monkeypatch, transactional_db):
    """A real Celery worker (solo pool, its own thread) consuming from Redis (TEST_BROKER_URL, set by make test).

    Its stop waits up to PATIENCE for the task it runs (a follow-up task on a busy machine outlasted Celery's 10 s
    and left the thread running: every later worker of that process then never started)."""
    from celery.contrib.testing.worker import start_worker

    from portal.celery import app

    broker = os.environ.get("TEST_BROKER_URL")
    if not broker:
        pytest.fail("TEST_BROKER_URL is not set: run the suite with `make test`, which points it at Redis")
    monkeypatch.setitem(app.conf, "task_always_eager", False)
    monkeypatch.setitem(app.conf, "broker_url", broker)
    monkeypatch.setitem(app.conf, "result_backend", broker)
    monkeypatch.setitem(app.conf, "task_ignore_result", False)  # the worker's ping check needs a result
    _reset_celery_connections(app)
    app.loader.import_module("celery.contrib.testing.tasks")  # the ping check's task
    app.control.purge()  # messages an earlier, interrupted run left behind (late acks are re-queued at shutdown)
    try:
        with start_worker(
            app, pool="solo", perform_ping_check=True, shutdown_timeout=PATIENCE, WorkController=_worker_class()
        ):
            yield app
    finally:
        app.control.purge()
        monkeypatch.undo()
        _reset_celery_connections(app)


WORKER_START_SECONDS = 60


def _worker_class():
    """Celery's test worker, except that it never waits for ever on a worker that will not start: the worker
    thread that meets an error it calls unrecoverable logs it and ends, and Celery's own `ensure_started` then
    waits on an event nobody sets (a whole CI run held to its limit, 2026-12-03)."""
    from celery.contrib.testing.worker import TestWorkController

    class BoundedTestWorkController(TestWorkController):
        failure: BaseException | None = None

        def start(self):
            started = self.blueprint.start

            def recorded(parent):  # Celery's start logs the error and ends the thread: keep it to raise here
                try:
                    return started(parent)
                except BaseException as error:
                    self.failure = error
                    raise

            self.blueprint.start = recorded
            return super().start()

        def ensure_started(self) -> None:
            deadline = time.monotonic() + WORKER_START_SECONDS
            while not self._on_started.wait(0.1):
                if self.failure is not None:
                    raise RuntimeError(f"the test's Celery worker stopped at start: {self.failure!r}") from self.failure
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the test's Celery worker did not start within {WORKER_START_SECONDS} s")

    return BoundedTestWorkController


def _reset_celery_connections(app) -> None:
    """The app caches its broker pool and result backend; make it pick up the patched settings."""
    app._pool = None
    app.amqp._producer_pool = None
    app._backend_cache = None
    app._local.__dict__.pop("backend", None)
