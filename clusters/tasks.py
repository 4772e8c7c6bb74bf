"""Celery tasks of the clusters app: thin shells around `clusters.inventory`.

Tasks take ids, are idempotent (a sync replaces the inventory with what the cluster lists), retry
transient cluster failures (network, 429, 5xx) with exponential backoff, and never retry a 4xx or a
configuration error: those are recorded on the backend and reported in the task result.

The tasks were `pools.tasks.*` before issue #10; those names stay registered (`LEGACY_NAMES`) so messages
queued before an upgrade still run.
"""

from __future__ import annotations

import logging

from celery import shared_task
from django.conf import settings

from clusters import inventory
from clusters.kube.errors import KubeError
from clusters.models import Backend
from portal.celery import app as _celery_app  # noqa: F401  (the app these tasks bind to: `portal` does not load it)

log = logging.getLogger(__name__)

MAX_RETRIES = 5
RESYNC_EXPIRES = settings.INVENTORY_RESYNC_EXPIRES  # under the beat period, so queued resyncs never pile up


def retry_countdown(retries: int) -> int:
    return min(300, 5 * 2**retries)


SYNC_OPTIONS = {"bind": True, "max_retries": MAX_RETRIES, "acks_late": True, "ignore_result": False}


def _sync_backend(self, backend_id: int) -> dict:
    """Full inventory sync of one backend."""
    try:
        result = inventory.sync_backend(backend_id)
    except Backend.DoesNotExist:
        return {"backend_id": backend_id, "ok": False, "error": "no such backend"}
    except KubeError as error:
        if error.transient and self.request.retries < self.max_retries:
            raise self.retry(exc=error, countdown=retry_countdown(self.request.retries)) from None
        return {"backend_id": backend_id, "ok": False, "error": str(error)}
    return {"backend_id": backend_id, "ok": True, **result.as_dict()}


def _sync_all_backends() -> int:
    """The periodic full resync: one `sync_backend` per connected backend; returns how many were queued."""
    ids = list(inventory.connected_backends().values_list("pk", flat=True))
    for backend_id in ids:
        sync_backend.apply_async((backend_id,), expires=RESYNC_EXPIRES)
    return len(ids)


sync_backend = shared_task(name="clusters.tasks.sync_backend", **SYNC_OPTIONS)(_sync_backend)
sync_all_backends = shared_task(name="clusters.tasks.sync_all_backends", ignore_result=True)(_sync_all_backends)
LEGACY_NAMES = {  # the same tasks under their names before the move (messages already queued)
    "pools.tasks.sync_backend": shared_task(name="pools.tasks.sync_backend", **SYNC_OPTIONS)(_sync_backend),
    "pools.tasks.sync_all_backends": shared_task(name="pools.tasks.sync_all_backends", ignore_result=True)(
        _sync_all_backends
    ),
}


# --- machine pools (clusters.machinepools.reconcile; docs/machine-pool-providers.md) ----------------------


def machine_pool_countdown(retries: int) -> float:
    """Backoff between passes after a transient provider failure (MACHINE_POOL_RETRY_SECONDS doubles)."""
    return min(300.0, settings.MACHINE_POOL_RETRY_SECONDS * 2**retries)


@shared_task(name="clusters.tasks.reconcile_machine_pools", bind=True, max_retries=8, acks_late=True)
def reconcile_machine_pools(self, backend_id: int) -> dict:
    """One pass over a backend's machine pools; a transient provider failure runs it again with backoff (the
    pools show `retrying`); past the retries, the periodic pass carries on."""
    from clusters.machinepools import reconcile

    try:
        outcome = reconcile.reconcile_backend(backend_id)
    except Backend.DoesNotExist:
        return {"backend_id": backend_id, "ok": False, "error": "no such backend"}
    if outcome.retry and not self.request.is_eager and self.request.retries < self.max_retries:
        log.info("backend #%s: machine pools retrying (%s)", backend_id, outcome.error)
        raise self.retry(countdown=machine_pool_countdown(self.request.retries))
    return {"ok": not outcome.retry and not outcome.failed, **outcome.as_dict()}


@shared_task(name="clusters.tasks.reconcile_all_machine_pools", ignore_result=True)
def reconcile_all_machine_pools() -> int:
    """The periodic pass: one `reconcile_machine_pools` per backend with a provider or machine pools."""
    from clusters.machinepools import reconcile

    ids = reconcile.backends_to_reconcile()
    for backend_id in ids:
        reconcile_machine_pools.apply_async((backend_id,), expires=settings.MACHINE_POOL_RECONCILE_EXPIRES)
    return len(ids)
