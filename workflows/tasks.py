"""Celery tasks for workflows: thin shells (ids in) around `workflows.lifecycle`, `.reconcile`, `.timeouts`.

* Idempotent: pods have deterministic names, AlreadyExists with our labels is success, every state
  change is a guarded UPDATE. So messages are acknowledged late (`acks_late`) and re-queued when a
  worker dies mid-task (`reject_on_worker_lost`): running one twice is harmless.
* Transient cluster failures (network, timeouts, 429, 5xx) are retried by Celery's autoretry with
  exponential backoff and jitter, up to `WORKFLOW_CREATE_MAX_RETRIES`; then the tasks still without a
  pod fail with FAILED_BACKEND_ERROR and the last error. A 4xx is never retried: the lifecycle fails that
  task with the API's message at once.
* Periodic ones (beat, CELERY_BEAT_SCHEDULE in `portal/settings.py`) take a lock, so runs never overlap,
  and expire before the next run is due.
* The services queue these through `workflows.enqueue`, never by importing this module.
* In the embedded default (no broker, eager) a retry would raise out of the caller; there the task
  leaves its work PENDING and the reconciler enqueues it again later. Several processes share one SQLite
  file there: a write that loses the lock is retried (`portal.dblock`), and if it keeps losing, the
  work is left to the reconciler as well (a PENDING task without a pod is re-enqueued after
  WORKFLOW_PENDING_GRACE_SECONDS).
"""

from __future__ import annotations

import logging
import random

from celery import shared_task
from django.conf import settings
from django.db import OperationalError

from clusters.kube.errors import KubeError
from portal.celery import app as _celery_app  # noqa: F401  (the app these tasks bind to: `portal` does not load it)
from portal.dblock import is_locked, retry_locked
from workflows import reconcile, timeouts
from workflows.lifecycle import create

log = logging.getLogger(__name__)


class TransientClusterError(Exception):
    """A cluster call failed in a way that retrying may fix (autoretry_for)."""


RETRYING = {
    "max_retries": settings.WORKFLOW_CREATE_MAX_RETRIES,
    "acks_late": True,
    "reject_on_worker_lost": True,
    "ignore_result": True,
}


def _retry_or_give_up(task, error: KubeError, give_up) -> None:
    if not error.transient:  # a 4xx or unusable connection settings: the same call would fail again
        give_up(str(error))
        return
    if task.request.is_eager:
        log.warning("%s: %s (no broker: left for the reconciler)", task.name, error)
        return
    if task.request.retries >= task.max_retries:
        give_up(f"gave up after {task.request.retries + 1} attempts: {error}")
        return
    raise task.retry(countdown=retry_wait(task.request.retries), exc=TransientClusterError(str(error)))


def retry_wait(retries: int) -> float:
    """Seconds before the next attempt: 1, 2, 4, … (at most WORKFLOW_CREATE_BACKOFF_MAX), of which a random half
    ("equal jitter"): spread, so a cluster that comes back is not met by every retry at once, yet never less than
    half, so the eight waits before giving up add up to at least 127 s and an API outage of a minute or two (a
    control-plane upgrade) fails no workflow. Celery's full jitter (0 to 2ⁿ) could put all eight inside one minute:
    the soak's 60 s outage failed a workflow that way."""
    nominal = min(2.0**retries, settings.WORKFLOW_CREATE_BACKOFF_MAX)
    return nominal / 2 + random.uniform(0, nominal / 2)


def _in_process(task, work, what: str) -> None:
    """`work()`, a locked write retried (`portal.dblock`). A lock that outlives the retries of an in-process
    task is logged on one line and the reconciler takes the work over; a worker (broker) lets Celery
    redeliver."""
    try:
        retry_locked(work, what)
    except OperationalError as error:
        if not (task.request.is_eager and is_locked(error)):
            raise
        log.warning("%s: %s (left for the reconciler)", task.name, error)


@shared_task(bind=True, **RETRYING)
def create_pods(self, workflow_pk: int) -> None:
    """Create the pods of a workflow's PENDING tasks (submission, and RESCHEDULE exit actions)."""
    try:
        _in_process(self, lambda: create.create_pods(workflow_pk), f"create pods of workflow #{workflow_pk}")
    except KubeError as error:
        _retry_or_give_up(self, error, lambda reason: create.fail_pending(workflow_pk, reason))


@shared_task(bind=True, **RETRYING)
def delete_pods(self, backend_pk: int, targets: list, why: str = "") -> None:
    """Delete pods `[[namespace, name], …]` of a backend (cancel, timeouts, stop, reschedule). 404 is fine."""
    try:
        _in_process(
            self,
            lambda: reconcile.delete_pods(backend_pk, [tuple(target) for target in targets]),
            f"delete pods of backend #{backend_pk}",
        )
    except KubeError as error:
        _retry_or_give_up(
            self,
            error,
            lambda reason: log.warning(
                "deleting %d pod(s) (%s) of backend #%s: %s; the reaper will try again",
                len(targets),
                why,
                backend_pk,
                reason,
            ),
        )


@shared_task(bind=True, **RETRYING)
def delete_secrets(self, backend_pk: int, targets: list, why: str = "") -> None:
    """Delete a finished workflow's credential Secrets `[[namespace, name], …]` (workflows.credentials)."""
    _delete_objects(self, "secret(s)", reconcile.delete_secrets, backend_pk, targets, why)


@shared_task(bind=True, **RETRYING)
def delete_services(self, backend_pk: int, targets: list, why: str = "") -> None:
    """Delete a finished workflow's group Services `[[namespace, name], …]` (workflows.group_dns)."""
    _delete_objects(self, "service(s)", reconcile.delete_services, backend_pk, targets, why)


def _delete_objects(task, kind: str, delete, backend_pk: int, targets: list, why: str) -> None:
    """Delete the objects a finished workflow left (`delete(backend_pk, [(namespace, name), …])`), retried on a
    transient error, given up with a warning on any other."""
    try:
        _in_process(
            task,
            lambda: delete(backend_pk, [tuple(target) for target in targets]),
            f"delete {kind} of backend #{backend_pk}",
        )
    except KubeError as error:
        _retry_or_give_up(
            task,
            error,
            lambda reason: log.warning(
                "deleting %d %s (%s) of backend #%s: %s", len(targets), kind, why, backend_pk, reason
            ),
        )


@shared_task(ignore_result=True)
def reconcile_workflows() -> dict:
    """Read our pods for every unfinished task (what the watcher does, in case it was down)."""
    return reconcile.run_locked("reconcile", reconcile.reconcile_all)


@shared_task(ignore_result=True)
def enforce_timeouts() -> dict:
    return reconcile.run_locked("timeouts", timeouts.enforce)


@shared_task(ignore_result=True)
def reap_pods() -> dict:
    return reconcile.run_locked("reaper", reconcile.reap_all)


@shared_task(ignore_result=True)
def archive_workflows() -> dict:
    """Retention: old finished workflows to JSON lines, then removed (workflows.archive)."""
    from workflows import archive  # lazy: the job's module only where it runs

    if not settings.WORKFLOW_ARCHIVE_DAYS:
        return {"archived": 0, "off": True}
    return reconcile.run_locked("archive", archive.archive)
