"""Celery tasks of the quotas app: thin shells (ids in) around `quotas.services.admission`.

* `admission_pass(node_pool_id)`: one node pool's pass, queued on every queue event (a submission that waits,
  a workflow finished or cancelled) by the gate and the receiver in `quotas.apps`. Passes for one node pool
  never overlap (the pass locks the node pool's row), so a message delivered twice is harmless.
* `admission_all`: the periodic pass (CELERY_BEAT_SCHEDULE, every QUOTA_ADMISSION_SECONDS) over every node
  pool with queued work, so nothing waits on a lost message or on capacity that came back (nodes, quotas).
* The embedded default (no broker) runs them in-process (CELERY_TASK_ALWAYS_EAGER).
"""

from __future__ import annotations

from celery import shared_task

from portal.celery import app as _celery_app  # noqa: F401  (the app these tasks bind to: `portal` does not load it)
from quotas.services import admission
from workflows import reconcile


@shared_task(ignore_result=True, acks_late=True, reject_on_worker_lost=True)
def admission_pass(node_pool_id: int) -> dict:
    return admission.admission_pass(node_pool_id).as_dict()


@shared_task(ignore_result=True)
def admission_all() -> dict:
    return reconcile.run_locked("quota-admission", admission.pass_all)
