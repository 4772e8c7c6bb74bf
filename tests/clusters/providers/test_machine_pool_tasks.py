"""Machine pools reach the provider by Celery: queued when a row is saved or deleted (once it commits), retried
with backoff while the provider is down, and passed over periodically (the beat schedule)."""

from __future__ import annotations

import pytest
from django.conf import settings as django_settings

from clusters import tasks
from clusters.models import MachinePool
from portal.celery import app
from tests.clusters.providers.conftest import gpu_spot_pool, ocm_pools
from tests.factories import BackendFactory, WorkerMachinePoolFactory
from tests.polling import wait_until

State = MachinePool.State


def test_a_saved_pool_is_created_and_a_deleted_one_removed_by_the_worker(transactional_db, redis_worker, rosa, cloud):
    pool = gpu_spot_pool(rosa)

    wait_until(lambda: "ml-training" in ocm_pools(cloud), what="the pool created at OCM")
    wait_until(lambda: MachinePool.objects.get(pk=pool.pk).state == State.READY, what="the pool ready")

    pool.delete()
    wait_until(lambda: "ml-training" not in ocm_pools(cloud), what="the pool deleted at OCM")
    assert sorted(ocm_pools(cloud)) == ["worker"]


def test_the_worker_retries_through_an_outage(transactional_db, redis_worker, rosa, cloud, settings):
    settings.MACHINE_POOL_RETRY_SECONDS = 0  # back off by nothing: the test waits on the outcome, not the clock
    cloud.emulator.ocm_fail_next(503, times=3)

    pool = gpu_spot_pool(rosa)

    wait_until(lambda: MachinePool.objects.get(pk=pool.pk).state == State.READY, timeout=30, what="converged")
    pool.refresh_from_db()
    assert pool.attempts == 0 and pool.last_answer == "created at rosa"
    assert ocm_pools(cloud)["ml-training"]["instance_type"] == "g4dn.xlarge"


@pytest.fixture
def eager(monkeypatch):
    monkeypatch.setitem(app.conf, "task_always_eager", True)
    monkeypatch.setitem(app.conf, "task_eager_propagates", False)


def test_the_periodic_pass_covers_every_backend_with_pools_or_a_provider(eager, rosa, cloud):
    gpu_spot_pool(rosa)
    WorkerMachinePoolFactory(backend=BackendFactory(name="plain"), name="exported")
    BackendFactory(name="nothing")

    assert tasks.reconcile_all_machine_pools.delay().get() == 2

    states = dict(MachinePool.objects.values_list("name", "state"))
    assert states == {"ml-training": State.READY, "exported": State.EXPORT_ONLY}
    assert (
        django_settings.CELERY_BEAT_SCHEDULE["machine-pools-reconcile"]["task"]
        == tasks.reconcile_all_machine_pools.name
    )


def test_the_task_reports_what_it_did(eager, rosa, cloud):
    gpu_spot_pool(rosa)
    assert tasks.reconcile_machine_pools.delay(rosa.pk).get() == {
        "ok": True,
        "backend_id": rosa.pk,
        "provider": "rosa",
        "created": ["ml-training"],
    }
    assert tasks.reconcile_machine_pools.delay(424242).get() == {
        "backend_id": 424242,
        "ok": False,
        "error": "no such backend",
    }
