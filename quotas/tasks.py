"""Celery tasks of the quotas app: thin shells (ids in) around `quotas.services`.

* `sync_scheduler_objects(backend_id)`: write a delegating backend's quotas as its scheduler's objects and
  delete the stale ones (quotas.services.delegation), queued after every change that alters them. Idempotent.
  A cluster that is down (network, 429, 5xx) is retried with exponential backoff up to MAX_RETRIES, then
  logged; a refusal (4xx, bad connection settings, an object the schema refuses) is logged and reported in
  the result, never retried. In the embedded default (no broker, eager) a retry would raise into the writer
  that queued it: there the failure is logged and the periodic resync puts the cluster in step later.
* `sync_all_scheduler_objects`: the periodic resync (beat), one `sync_scheduler_objects` per delegating
  backend: repairs what a failed sync or someone editing the objects by hand left behind.
* `admission_pass(node_pool_id)`: one node pool's pass, queued on every queue event (a submission that waits,
  a workflow finished or cancelled) by the gate and the receiver in `quotas.receivers`. Passes for one node pool
  never overlap (the pass locks the node pool's row), so a message delivered twice is harmless.
* `admission_all`: the periodic pass (CELERY_BEAT_SCHEDULE, every QUOTA_ADMISSION_TICK_SECONDS) over every
  node pool with queued work whose admission period (its own, or QUOTA_ADMISSION_SECONDS) has elapsed since its
  last pass, so nothing waits on a lost message or on capacity that came back (nodes, quotas).
* `label_nodes(backend_id)`: the node-pool labels the portal keeps on a backend's nodes
  (quotas.services.node_labels), queued when nodes change node pool; `label_all_nodes`, the periodic repair
  (every INVENTORY_RESYNC_SECONDS) of a label removed by hand. A cluster that is down is logged: the pods of
  an unlabelled node's pool wait for it (they never land elsewhere), and the next run labels it.
* `sample_deserved`: this hour's deserved GPUs per project and node pool, written once per hour into the usage
  record (quotas.services.deserved_samples), for the idle guarantee of docs/usage.md.
* The embedded default (no broker) runs them in-process (CELERY_TASK_ALWAYS_EAGER).
"""

from __future__ import annotations

import logging

from celery import shared_task
from django.conf import settings

from clusters.kube.errors import KubeError
from clusters.models import Backend
from portal.celery import app as _celery_app  # noqa: F401  (the app these tasks bind to: `portal` does not load it)
from portal.errors import PortalError
from quotas.services import admission_passes, delegation, deserved_samples, node_labels
from workflows import reconcile

log = logging.getLogger(__name__)

MAX_RETRIES = 5
RESYNC_EXPIRES = max(1, settings.QUOTA_SCHEDULER_RESYNC_SECONDS * 4 // 5)


def retry_countdown(retries: int) -> int:
    return min(300, 5 * 2**retries)


@shared_task(
    name="quotas.tasks.sync_scheduler_objects", bind=True, max_retries=MAX_RETRIES, acks_late=True, ignore_result=False
)
def sync_scheduler_objects(self, backend_id: int) -> dict:
    try:
        result = delegation.sync_scheduler_objects(backend_id)
    except Backend.DoesNotExist:
        return {"backend_id": backend_id, "ok": False, "error": "no such backend"}
    except KubeError as error:
        if error.transient and not self.request.is_eager and self.request.retries < self.max_retries:
            log.info("backend #%s: scheduler objects not written (%s); retrying", backend_id, error)
            raise self.retry(exc=error, countdown=retry_countdown(self.request.retries)) from None
        log.warning("backend #%s: scheduler objects not written: %s (the periodic resync retries)", backend_id, error)
        return {"backend_id": backend_id, "ok": False, "error": str(error)}
    except PortalError as error:  # the translation refused (a name clash) or the schema check failed
        log.warning("backend #%s: scheduler objects not written: %s", backend_id, error)
        return {"backend_id": backend_id, "ok": False, "error": str(error)}
    return {"backend_id": backend_id, "ok": True, **result.as_dict()}


@shared_task(name="quotas.tasks.sync_all_scheduler_objects", ignore_result=True)
def sync_all_scheduler_objects() -> int:
    """One `sync_scheduler_objects` per delegating backend; returns how many were queued."""
    ids = delegation.delegating_backend_ids()
    for backend_id in ids:
        sync_scheduler_objects.apply_async((backend_id,), expires=RESYNC_EXPIRES)
    return len(ids)


@shared_task(ignore_result=True, acks_late=True, reject_on_worker_lost=True)
def admission_pass(node_pool_id: int) -> dict:
    return admission_passes.admission_pass(node_pool_id).as_dict()


@shared_task(ignore_result=True)
def admission_all() -> dict:
    return reconcile.run_locked("quota-admission", admission_passes.pass_all)


@shared_task(name="quotas.tasks.label_nodes", ignore_result=True, acks_late=True)
def label_nodes(backend_id: int) -> dict:
    try:
        patched = node_labels.sync(backend_id)
    except Backend.DoesNotExist:
        return {"backend_id": backend_id, "ok": False, "error": "no such backend"}
    except (KubeError, PortalError) as error:
        log.warning("backend #%s: node-pool labels not written: %s (the periodic run retries)", backend_id, error)
        return {"backend_id": backend_id, "ok": False, "error": str(error)}
    return {"backend_id": backend_id, "ok": True, "labelled": patched}


@shared_task(name="quotas.tasks.label_all_nodes", ignore_result=True)
def label_all_nodes() -> int:
    """One `label_nodes` per backend; returns how many were queued."""
    ids = list(Backend.objects.values_list("pk", flat=True))
    for backend_id in ids:
        label_nodes.apply_async((backend_id,), expires=settings.INVENTORY_RESYNC_EXPIRES)
    return len(ids)


@shared_task(name="quotas.tasks.sample_deserved", ignore_result=True)
def sample_deserved() -> int:
    """This hour's deserved GPUs per project and node pool, into the usage record (idle guarantee)."""
    return deserved_samples.sample_deserved()
