"""/metrics: who may read it, and what it shows after real work (a submission through the API whose pods
the eager Celery task creates on the kubesim emulator, an inventory sync over HTTP)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from clusters.heartbeat import WATCHERS
from clusters.inventory import sync_backend
from clusters.models import WatcherHeartbeat, WatcherLease, WatcherReplica
from portal.models import SharedCount
from tests.workflows.conftest import api, spec
from workflows.errors import PoolNotFound
from workflows.services import SubmitRequest, submit


def scrape(client, **headers) -> dict[tuple[str, tuple], float]:
    response = client.get("/metrics", REMOTE_ADDR="127.0.0.1", **headers)
    assert response.status_code == 200, response.content
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(response.content.decode())
        for sample in family.samples
    }


def value(samples, name: str, **labels) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


@pytest.mark.django_db
def test_metrics_only_for_allowed_networks_or_the_token(client, settings):
    assert client.get("/metrics", REMOTE_ADDR="10.1.2.3").status_code == 403
    assert client.get("/metrics", REMOTE_ADDR="127.0.0.1").status_code == 200
    settings.METRICS_ALLOWED_NETWORKS = ["10.0.0.0/8"]
    assert client.get("/metrics", REMOTE_ADDR="10.1.2.3").status_code == 200
    assert client.get("/metrics", REMOTE_ADDR="127.0.0.1").status_code == 403
    settings.METRICS_TOKEN = "scrape-me"
    assert client.get("/metrics", REMOTE_ADDR="192.0.2.1", HTTP_AUTHORIZATION="Bearer scrape-me").status_code == 200
    assert client.get("/metrics", REMOTE_ADDR="192.0.2.1", HTTP_AUTHORIZATION="Bearer wrong").status_code == 403


def test_a_submission_shows_in_the_counters(client, pool, alice, django_capture_on_commit_callbacks):
    before = scrape(client)
    with django_capture_on_commit_callbacks(execute=True):  # pod creation, enqueued after commit (eager)
        response = api(alice).post("/api/pool/batch/workflow", spec("counted"), format="json")
    assert response.status_code == 200, response.json()
    bad = {"version": 2, "workflow": {"name": "bad", "tasks": []}}
    assert api(alice).post("/api/pool/batch/workflow", bad, format="json").status_code == 400
    with pytest.raises(PoolNotFound):  # the API refuses it earlier, as a 404 of its permission check
        submit(SubmitRequest(pool="no-such-pool", spec=spec("lost"), who=alice))
    after = scrape(client)

    def grew(name, **labels):
        return value(after, name, **labels) - value(before, name, **labels)

    assert grew("portal_workflow_submissions_total", pool="batch", outcome="pending") == 1
    assert grew("portal_workflow_submissions_total", pool="batch", outcome="refused") == 1
    assert grew("portal_workflow_submissions_total", pool="", outcome="refused") == 1  # no label per bad name
    assert grew("portal_pod_creations_total", backend="sim", outcome="created") == 1
    assert grew("portal_celery_tasks_total", task="workflows.tasks.create_pods", outcome="success") == 1
    assert value(after, "portal_pool_queue_depth", pool="batch", status="QUEUED") == 0
    assert value(after, "portal_pool_queue_depth", pool="batch", status="PENDING") == 0  # its pod exists
    assert value(after, "portal_backend_online", backend="sim") in (0, 1)
    assert value(after, "django_http_requests_total_by_method_total", method="POST") >= 2  # django-prometheus


def test_queue_depth_and_watcher_lag_come_from_the_database(client, pool, alice, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False):  # pods not created: the workflow stays PENDING
        api(alice).post("/api/pool/batch/workflow", spec("waiting"), format="json")
    before_sync = scrape(client)
    assert value(before_sync, "portal_pool_queue_depth", pool="batch", status="PENDING") == 1
    assert ("portal_backend_sync_age_seconds", (("backend", "sim"),)) not in before_sync  # never synced

    syncs = value(before_sync, "portal_inventory_sync_seconds_count", backend="sim")
    with django_capture_on_commit_callbacks(execute=True):  # the duration is written once the sync committed
        sync_backend(pool.backend_id)
    after = scrape(client)
    assert value(after, "portal_inventory_sync_seconds_bucket", backend="sim", le="+Inf") == syncs + 1
    assert 0 < value(after, "portal_inventory_sync_seconds_sum", backend="sim") < 60
    assert value(after, "portal_inventory_sync_seconds_count", backend="sim") == syncs + 1
    assert 0 <= value(after, "portal_backend_sync_age_seconds", backend="sim") < 60
    assert 0 <= value(after, "portal_backend_event_age_seconds", backend="sim") < 60
    assert value(after, "portal_backend_online", backend="sim") == 1


def test_the_database_part_of_a_scrape_is_nine_queries(client, pool, django_assert_num_queries):
    from pools.models import Pool

    with django_assert_num_queries(9):  # two for the usage record (usage.services.meters), two for the leases
        scrape(client)
    Pool.objects.bulk_create([Pool(name=f"extra{i}", backend=pool.backend) for i in range(5)])
    beat = timezone.now()
    WatcherHeartbeat.objects.bulk_create(
        WatcherHeartbeat(watcher=w, backend=pool.backend, beat_at=beat) for w in WATCHERS
    )
    expiry = beat + timedelta(seconds=30)
    WatcherReplica.objects.create(watcher="watch_cluster", name="w-1", nonce="n", expires_at=expiry)
    WatcherLease.objects.create(watcher="watch_cluster", backend=pool.backend, holder="w-1", token=1, expires_at=expiry)
    SharedCount.objects.bulk_create(
        SharedCount(name="portal_pod_creations", labels=f'{{"backend": "b{i}", "outcome": "created"}}', value=i)
        for i in range(5)
    )
    with django_assert_num_queries(9):  # two for the usage record (usage.services.meters), two for the leases
        samples = scrape(client)
    assert value(samples, "portal_pool_queue_depth", pool="extra4", status="QUEUED") == 0
    assert ("portal_pool_queue_depth", (("pool", "extra4"), ("status", "QUEUED"))) in samples
    assert value(samples, "portal_pod_creations_total", backend="b4", outcome="created") == 4
    assert value(samples, "portal_watcher_heartbeat_age_seconds", watcher="watch_cluster", backend="sim") >= 0
    assert value(samples, "portal_watcher_lease_held", watcher="watch_cluster", backend="sim", replica="w-1") == 1
    assert value(samples, "portal_watcher_replicas", watcher="watch_cluster") == 1


@pytest.mark.django_db
def test_every_portal_metric_is_in_the_operations_table(client):
    from pathlib import Path

    table = (Path(__file__).resolve().parents[2] / "docs" / "operations.md").read_text()
    response = client.get("/metrics", REMOTE_ADDR="127.0.0.1")
    families = [
        f
        for f in text_string_to_metric_families(response.content.decode())
        if f.name.startswith("portal_") and not f.name.endswith("_created")  # a counter's creation time
    ]
    assert len(families) == 22, [f.name for f in families]
    missing = [
        f.name for f in families if f"| `{f.name}{'_total' if f.type == 'counter' else ''}` | {f.type} |" not in table
    ]
    assert missing == []
