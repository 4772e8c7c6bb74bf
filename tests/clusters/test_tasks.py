"""Celery: the sync task through a real worker on Redis once; retry rules eagerly; the beat schedule."""

from __future__ import annotations

import pytest

from clusters import tasks
from clusters.models import Backend, Node
from portal.celery import app


@pytest.fixture
def eager(monkeypatch):
    monkeypatch.setitem(app.conf, "task_always_eager", True)
    # propagating would turn an eager retry into an exception; the worker path is tested below
    monkeypatch.setitem(app.conf, "task_eager_propagates", False)


def test_sync_task_runs_on_a_real_worker(transactional_db, redis_worker, backend, kube_server):
    result = tasks.sync_backend.delay(backend.pk)
    outcome = result.get(timeout=30)
    assert outcome["ok"] and outcome["nodes"] == 29
    assert Node.objects.filter(backend=backend).count() == 29
    assert Backend.objects.get(pk=backend.pk).sync_status == "ok"


def node_lists(kube_server) -> int:
    return len([r for r in kube_server.emulator if r.url.path == "/api/v1/nodes"])


def test_transient_failures_are_retried(eager, backend, kube_server):
    kube_server.emulator.fail_next("list", "nodes", status=503, times=2)
    outcome = tasks.sync_backend.delay(backend.pk).get()
    assert outcome["ok"] and outcome["nodes"] == 29
    assert node_lists(kube_server) == 3


def test_client_errors_are_not_retried(eager, backend, kube_server):
    kube_server.emulator.fail_next("list", "nodes", status=403, times=None)
    outcome = tasks.sync_backend.delay(backend.pk).get()
    assert outcome == {
        "backend_id": backend.pk,
        "ok": False,
        "error": "listing nodes: HTTP 403 Forbidden: injected failure for list nodes",
    }
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
    assert schedule["task"] == "clusters.tasks.sync_all_backends"
    assert schedule["options"]["expires"] == tasks.RESYNC_EXPIRES < schedule["schedule"]


def test_messages_queued_under_the_names_before_the_move_still_run(eager, backend, kube_server):
    """The tasks were `pools.tasks.*` before the clusters app (issue #10): a message sent by name still runs."""
    outcome = app.tasks["pools.tasks.sync_backend"].delay(backend.pk).get()
    assert outcome["ok"] and Node.objects.filter(backend=backend).count() == 29
    assert app.tasks["pools.tasks.sync_all_backends"].name == "pools.tasks.sync_all_backends"
