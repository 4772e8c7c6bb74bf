"""Celery: the sync task through a real worker on Redis once; retry rules eagerly; the beat schedule."""

from __future__ import annotations

import os

import pytest
from celery.contrib.testing.worker import start_worker

from pools import tasks
from pools.models import Backend, Node
from portal.celery import app


@pytest.fixture
def eager(monkeypatch):
    monkeypatch.setitem(app.conf, "task_always_eager", True)
    # propagating would turn an eager retry into an exception; the worker path is tested below
    monkeypatch.setitem(app.conf, "task_eager_propagates", False)


@pytest.fixture
def redis_worker(monkeypatch):
    broker = os.environ.get("TEST_BROKER_URL")
    if not broker:
        pytest.skip("TEST_BROKER_URL is not set (make test sets it)")
    monkeypatch.setitem(app.conf, "task_always_eager", False)
    monkeypatch.setitem(app.conf, "broker_url", broker)
    monkeypatch.setitem(app.conf, "result_backend", broker)
    monkeypatch.setitem(app.conf, "task_ignore_result", False)  # the settings ignore results; the ping needs one
    _reset_connections()
    app.loader.import_module("celery.contrib.testing.tasks")  # the worker's ping check needs it
    app.control.purge()  # messages an earlier, interrupted run left in the test broker
    try:
        with start_worker(app, pool="solo", perform_ping_check=True, shutdown_timeout=10):
            yield app
    finally:
        app.control.purge()
        monkeypatch.undo()
        _reset_connections()


def _reset_connections() -> None:
    """The app caches its broker pool and result backend; make it pick up the patched settings."""
    app._pool = None  # kombu keeps one pool per broker URL; the app picks the patched URL's
    app.amqp._producer_pool = None  # eager calls built one for the default broker URL
    app._backend_cache = None
    app._local.__dict__.pop("backend", None)


def test_sync_task_runs_on_a_real_worker(transactional_db, redis_worker, backend, kube_server):
    result = tasks.sync_backend.delay(backend.pk)
    outcome = result.get(timeout=30)
    assert outcome["ok"] and outcome["nodes"] == 25
    assert Node.objects.filter(backend=backend).count() == 25
    assert Backend.objects.get(pk=backend.pk).sync_status == "ok"


def node_lists(kube_server) -> int:
    return len([r for r in kube_server.emulator._requests if r.url.path == "/api/v1/nodes"])


def test_transient_failures_are_retried(eager, backend, kube_server):
    kube_server.emulator.fail_next("list", "nodes", status=503, times=2)
    outcome = tasks.sync_backend.delay(backend.pk).get()
    assert outcome["ok"] and outcome["nodes"] == 25
    assert node_lists(kube_server) == 3


def test_client_errors_are_not_retried(eager, backend, kube_server):
    kube_server.emulator.fail_next("list", "nodes", status=403, times=None)
    outcome = tasks.sync_backend.delay(backend.pk).get()
    assert outcome == {"backend_id": backend.pk, "ok": False,
                       "error": "listing nodes: HTTP 403 Forbidden: injected failure for list nodes"}
    assert node_lists(kube_server) == 1
    assert Backend.objects.get(pk=backend.pk).sync_status == "degraded"


def test_retries_give_up_after_the_limit(eager, backend, kube_server):
    kube_server.emulator.fail_next("list", "nodes", status=503, times=None)
    outcome = tasks.sync_backend.delay(backend.pk).get()
    assert not outcome["ok"] and "HTTP 503" in outcome["error"]
    assert node_lists(kube_server) == tasks.MAX_RETRIES + 1


def test_a_deleted_backend_is_not_an_error(eager, db):
    assert tasks.sync_backend.delay(424242).get() == {"backend_id": 424242, "ok": False, "error": "no such backend"}


def test_periodic_resync_queues_connected_backends_with_expiry(eager, backend, kube_server, monkeypatch):
    Backend.objects.create(name="unconnected")
    queued = []
    monkeypatch.setattr(tasks.sync_backend, "apply_async", lambda args, **options: queued.append((args, options)))
    assert tasks.sync_all_backends() == 1
    assert queued == [((backend.pk,), {"expires": tasks.RESYNC_EXPIRES})]
    schedule = app.conf.beat_schedule["inventory-full-resync"]
    assert schedule["task"] == "pools.tasks.sync_all_backends"
    assert schedule["options"]["expires"] < schedule["schedule"]
