"""A submission's pool, backend and platforms are cached per process under the config generation: the next
submission to the same pool reads none of them, and any write to a pool, a platform or a backend, by any
door or process (the ORM, a bulk update that sends no signal, SQL on another connection), is seen by the
next submission. Committed data only: these tests run outside a test transaction, as a server does."""

from __future__ import annotations

import pytest
from django.core.signals import request_finished, request_started

from clusters.models import Backend
from configs import store
from pools.models import Pool
from tests.queries import captured_queries
from tests.sessions import other_session
from tests.workflows.conftest import CLI, TEMPLATES, api, spec
from workflows import pool_loading
from workflows.models import Task

pytestmark = pytest.mark.django_db(transaction=True)
SUBMIT = "/api/pool/batch/workflow"
POOL_LOAD = '"pools_platform"."compiled"'  # only the pool load reads the compiled platforms


@pytest.fixture(autouse=True)
def no_pod_creation(monkeypatch):
    from workflows import tasks as jobs

    monkeypatch.setattr(jobs.create_pods, "delay", lambda *args, **kwargs: None)


def _submit(client, name: str):
    with captured_queries() as queries:
        response = client.post(SUBMIT, spec(name), format="json")
    return response, queries


def _other_connection_runs(sql: str, *params) -> None:
    """SQL from another session, as another web worker or process would write."""
    with other_session() as other:
        other.execute(sql, params)


def test_the_next_submission_to_a_pool_reads_it_from_the_cache(pool, alice):
    client = api(alice)
    first, cold = _submit(client, "cold")  # this process's caches filled
    second, warm = _submit(client, "warm")
    Pool.objects.filter(name="batch").update(enable_maintenance=False)  # a write, whatever it changes
    third, after_write = _submit(client, "after-write")
    assert first.status_code == second.status_code == third.status_code == 200
    assert any(POOL_LOAD in q for q in cold) and any(POOL_LOAD in q for q in after_write)
    assert not any(POOL_LOAD in q for q in warm), warm
    assert len(warm) == len(after_write) - 1, (warm, after_write)


def test_a_bulk_update_that_sends_no_signal_is_seen_by_the_next_submission(pool, alice):
    client = api(alice)
    assert _submit(client, "before")[0].status_code == 200
    Pool.objects.filter(name="batch").update(enable_maintenance=True)
    refused, queries = _submit(client, "during")
    assert refused.status_code == 409 and refused.json()["code"] == "pool_in_maintenance"
    assert any(POOL_LOAD in q for q in queries)


def test_a_backend_changed_by_another_session_is_seen_by_the_next_submission(pool, alice):
    client = api(alice)
    assert _submit(client, "before")[0].status_code == 200
    _other_connection_runs("UPDATE clusters_backend SET namespace = %s WHERE name = %s", "moved-here", "sim")
    assert _submit(client, "after")[0].status_code == 200
    assert Task.objects.get(workflow__workflow_id="before-1").namespace != "moved-here"
    assert Task.objects.get(workflow__workflow_id="after-1").namespace == "moved-here"


def test_a_template_change_reaches_the_next_submission_pod(pool, alice):
    client = api(alice)
    assert _submit(client, "before")[0].status_code == 200
    labelled = {**TEMPLATES["cpu"], "metadata": {"labels": {"cache-check": "fresh"}}}
    store.apply("POD_TEMPLATE", "cpu", labelled, CLI)
    assert _submit(client, "after")[0].status_code == 200
    pod = Task.objects.get(workflow__workflow_id="after-1").pod
    assert pod["metadata"]["labels"]["cache-check"] == "fresh"


def test_a_request_that_writes_a_pool_reads_it_afresh_afterwards(pool):
    request_started.send(sender=None)  # one request: the epochs and the generation are read once, then kept
    try:
        assert pool_loading.load_pool("batch").enable_maintenance is False
        assert pool_loading.load_pool("batch") is pool_loading.load_pool("batch")  # cached
        stored = Pool.objects.get(name="batch")
        stored.enable_maintenance = True
        stored.save(update_fields=["enable_maintenance"])
        assert pool_loading.load_pool("batch").enable_maintenance is True
        Backend.objects.filter(name="sim").update(namespace="bulk-moved")  # no signal: the trigger alone
    finally:
        request_finished.send(sender=None)
    assert pool_loading.load_pool("batch").backend.namespace == "bulk-moved"  # a later request sees it
