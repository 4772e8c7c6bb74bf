"""Counters the Celery workers keep in the database (`portal.metrics.SharedCounter`): a real worker consuming
from Redis counts task outcomes and pod creations, and a separate interpreter, scraping as the web would,
shows them."""

from __future__ import annotations

import pytest

from portal import metrics
from portal.models import SharedCount
from tests.ops.processes import SCRAPE, in_another_process
from tests.workflows.conftest import api, spec, wait_until
from workflows.tasks import create_pods


@pytest.fixture
def shared_metrics_log():
    import logging

    from tests.ops.test_logs import Records

    logger, handler = logging.getLogger("portal.shared_metrics"), Records()
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.WARNING)  # an earlier test may have set the root logger higher
    yield handler
    logger.removeHandler(handler)
    logger.setLevel(level)


def counted(name: str, **labels: str) -> int:
    import json

    row = SharedCount.objects.filter(name=name, labels=json.dumps(labels, sort_keys=True)).first()
    return row.value if row else 0


@pytest.mark.django_db(transaction=True)
def test_a_worker_counts_outcomes_that_another_process_shows(redis_worker, pool, alice, tmp_path):
    response = api(alice).post("/api/pool/batch/workflow", spec("by-worker"), format="json")
    assert response.status_code == 200, response.json()
    created = ("portal_celery_tasks", {"task": "workflows.tasks.create_pods", "outcome": "success"})
    wait_until(lambda: counted(created[0], **created[1]) == 1, timeout=20, what="the worker's success")
    assert counted("portal_pod_creations", backend="sim", outcome="created") == 1

    create_pods.delay("not-a-key")  # the workflow's lookup raises: the task fails
    failed = {"task": "workflows.tasks.create_pods", "outcome": "failure"}
    wait_until(lambda: counted("portal_celery_tasks", **failed) == 1, timeout=20, what="the worker's failure")

    scraped = in_another_process(["-c", SCRAPE], tmp_path)
    assert scraped.returncode == 0, scraped.stderr
    lines = scraped.stdout.splitlines()
    assert 'portal_celery_tasks_total{outcome="success",task="workflows.tasks.create_pods"} 1.0' in lines
    assert 'portal_celery_tasks_total{outcome="failure",task="workflows.tasks.create_pods"} 1.0' in lines
    assert 'portal_pod_creations_total{backend="sim",outcome="created"} 1.0' in lines


@pytest.mark.django_db(transaction=True)
def test_increments_add_up_and_wait_for_the_commit():
    from django.db import transaction

    counter = metrics.SharedCounter("portal_test_things", "Things.", ["kind"])
    counter.labels("a").inc()
    counter.labels("a").inc(2)
    counter.labels("b").inc(0)  # nothing to add: no write
    with transaction.atomic():
        counter.labels("a").inc()
        assert counted("portal_test_things", kind="a") == 3  # not before the commit
    with pytest.raises(ZeroDivisionError), transaction.atomic():
        counter.labels("a").inc(10)
        raise ZeroDivisionError  # rolled back: not counted
    assert counted("portal_test_things", kind="a") == 4
    assert not SharedCount.objects.filter(name="portal_test_things", labels='{"kind": "b"}').exists()


@pytest.mark.django_db(transaction=True)
def test_a_histogram_counts_its_buckets_and_sum(client):
    from tests.ops.test_metrics import scrape, value

    metrics.INVENTORY_SYNC_SECONDS.labels("far").observe(0.3)
    metrics.INVENTORY_SYNC_SECONDS.labels("far").observe(7)
    samples = scrape(client)
    buckets = {le: value(samples, "portal_inventory_sync_seconds_bucket", backend="far", le=le) for le in BOUNDS}
    assert buckets == {"0.25": 0, "0.5": 1, "5.0": 1, "10.0": 2, "+Inf": 2}
    assert value(samples, "portal_inventory_sync_seconds_count", backend="far") == 2
    assert value(samples, "portal_inventory_sync_seconds_sum", backend="far") == pytest.approx(7.3)


BOUNDS = ("0.25", "0.5", "5.0", "10.0", "+Inf")


@pytest.mark.django_db(transaction=True)
def test_a_count_at_once_joins_the_transaction_and_its_failure_stays_its_own(shared_metrics_log):
    from django.db import transaction

    counter = metrics.SharedCounter("portal_test_now", "Now.", ["kind"], after_commit=False)
    with transaction.atomic():
        counter.labels("a").inc()
        assert counted("portal_test_now", kind="a") == 1  # before the commit
        counter.labels("x" * 600).inc()  # too long for the column: the database refuses it
        assert counted("portal_test_now", kind="a") == 1  # the caller's transaction goes on
    assert counted("portal_test_now", kind="a") == 1
    [record] = shared_metrics_log.records
    assert record.getMessage().startswith("metrics ['portal_test_now'] not written: value too long")


@pytest.mark.django_db(transaction=True)
def test_a_task_holds_its_counts_and_writes_them_once_after_it():
    """portal.celery: `hold` at a worker task's start, `release` at its end. What the task counts on its own
    (after a commit, or at once outside a transaction) waits, summed, and is one statement at the end; a count
    inside a transaction still rolls back with it."""
    from django.db import transaction

    from portal import shared_metrics
    from tests.queries import captured_queries

    counter = metrics.SharedCounter("portal_test_held", "Held.", ["kind"])
    outcome = metrics.SharedCounter("portal_test_outcome", "Outcome.", ["kind"], after_commit=False)
    shared_metrics.hold()
    try:
        with captured_queries() as queries:
            with transaction.atomic():
                counter.labels("a").inc()
            counter.labels("a").inc(2)
            with pytest.raises(ZeroDivisionError), transaction.atomic():
                counter.labels("a").inc(10)
                raise ZeroDivisionError  # rolled back: not counted
            outcome.labels("ok").inc()
        assert not [sql for sql in queries if "portal_sharedcount" in sql]  # held
        assert counted("portal_test_held", kind="a") == 0
    finally:
        with captured_queries() as queries:
            shared_metrics.release()
    assert len([sql for sql in queries if "portal_sharedcount" in sql]) == 1
    assert counted("portal_test_held", kind="a") == 3 and counted("portal_test_outcome", kind="ok") == 1
    counter.labels("a").inc()  # released: written as it comes again
    assert counted("portal_test_held", kind="a") == 4
