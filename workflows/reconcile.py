"""Reconciliation and the reaper: the cluster's view of our pods, read in full, so nothing is lost when the
watcher (`manage.py watch_workflows`) is down or a message was dropped.

* `reconcile_backend`: list the pods carrying this portal's instance label (one paginated list per
  backend) and fold each into its unfinished task (`workflows.lifecycle.observe`); a WAITING/RUNNING task whose pod
  is gone fails (POD_LOST); a task PENDING for longer than `WORKFLOW_PENDING_GRACE_SECONDS` without a pod
  gets its `create_pods` enqueued again (a lost message, a worker that died with the message acked, a
  broker that was down at submission).
* `reap_backend`: delete our pods whose workflow is unknown (e.g. the old pod of a rescheduled task), or
  finished more than `WORKFLOW_POD_RETENTION_SECONDS` ago.
* `run_locked`: the periodic jobs never overlap (a PostgreSQL advisory lock; a cache lock on SQLite).
"""

from __future__ import annotations

import contextlib
import logging
import zlib
from collections.abc import Callable
from datetime import timedelta

from django.conf import settings
from django.core.cache import cache
from django.db import connection
from django.utils import timezone

from clusters import inventory
from clusters.kube import pods, secrets, services
from clusters.kube.connection import connect
from clusters.kube.errors import KubeError
from clusters.models import Backend
from workflows import enqueue
from workflows.lifecycle.create import instance
from workflows.lifecycle.observe import observe
from workflows.lifecycle.transitions import PENDING, UNFINISHED
from workflows.models import FINISHED_WORKFLOW, Task, WorkflowStatus

log = logging.getLogger(__name__)

LOCK_SECONDS = 600  # the cache lock's lifetime on SQLite (a crashed holder cannot block for longer)
CLOCK_SKEW = timedelta(seconds=2)


# ------------------------------------------------------------------------------------------ locks


@contextlib.contextmanager
def singleton(name: str):
    """Yield True when this process holds the lock `name` (nobody else runs the job), else False."""
    if connection.vendor == "postgresql":
        key = zlib.crc32(f"pool-portal:{name}".encode())
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_try_advisory_lock(%s)", [key])
            held = bool(cursor.fetchone()[0])
        try:
            yield held
        finally:
            if held:
                with connection.cursor() as cursor:
                    cursor.execute("SELECT pg_advisory_unlock(%s)", [key])
        return
    key = f"pool-portal:lock:{name}"
    held = cache.add(key, "1", LOCK_SECONDS)
    try:
        yield held
    finally:
        if held:
            cache.delete(key)


def run_locked(name: str, job: Callable[[], dict]) -> dict:
    with singleton(f"workflows:{name}") as held:
        if not held:
            log.info("%s: another run is in progress; skipped", name)
            return {"skipped": True}
        return job()


# ------------------------------------------------------------------------------------------ listing


def list_ours(kube) -> pods.PodList:
    """Every pod of this portal (instance label) in the cluster, with the time the listing started."""
    started = timezone.now()
    listing = pods.list_pods(kube, pods.instance_selector(instance()))
    listing.listed_at = started
    return listing


def delete_pods(backend_pk: int, targets: list[tuple[str, str]]) -> int:
    """Delete pods (404 is fine). Transient errors propagate (the Celery task retries); others are logged."""
    return _delete_each(backend_pk, targets, pods.delete_pod)


def delete_secrets(backend_pk: int, targets: list[tuple[str, str]]) -> int:
    """Delete a finished workflow's credential Secrets (404 is fine), as `delete_pods` deletes pods."""
    return _delete_each(backend_pk, targets, secrets.delete_secret)


def delete_services(backend_pk: int, targets: list[tuple[str, str]]) -> int:
    """Delete a finished workflow's group Services (404 is fine), as `delete_pods` deletes pods."""
    return _delete_each(backend_pk, targets, services.delete_service)


def _delete_each(backend_pk: int, targets: list[tuple[str, str]], delete) -> int:
    """`delete(kube, namespace, name)` for each target on one connection; how many were there to delete."""
    backend = Backend.objects.filter(pk=backend_pk).first()
    if backend is None or not targets:
        return 0
    deleted = 0
    with connect(backend) as kube:
        for namespace, name in targets:
            try:
                deleted += delete(kube, namespace, name)
            except KubeError as error:
                if error.transient:
                    raise
                log.warning("backend %s: %s", backend.name, error)
    return deleted


# ------------------------------------------------------------------------------------------ reconcile


def reconcile_all() -> dict:
    """Reconcile every backend that has unfinished tasks; one backend failing does not stop the others."""
    backend_ids = sorted(
        set(Task.objects.filter(status__in=UNFINISHED).values_list("workflow__pool__backend_id", flat=True))
    )
    report = {"backends": len(backend_ids), "changed": 0, "requeued": 0, "errors": []}
    for backend_id in backend_ids:
        try:
            result = reconcile_backend(backend_id)
        except KubeError as error:
            report["errors"].append(f"backend #{backend_id}: {error}")
            log.warning("reconcile: backend #%s: %s", backend_id, error)
            continue
        report["changed"] += result["changed"]
        report["requeued"] += result["requeued"]
    return report


def reconcile_backend(backend_id: int, listing: pods.PodList | None = None, *, now=None) -> dict:
    """Fold the cluster's pods into the backend's unfinished tasks. `listing`: pods already listed (the
    watcher's relist); otherwise they are listed here, after the tasks are read."""
    now = now or timezone.now()
    tasks = list(
        Task.objects.select_related("workflow__pool")
        .filter(workflow__pool__backend_id=backend_id, status__in=UNFINISHED)
        .exclude(workflow__status=WorkflowStatus.QUEUED)  # no pod until admitted: nothing to reconcile
        .order_by("id")
    )
    result = {"tasks": len(tasks), "changed": 0, "requeued": 0}
    if not tasks:
        return result
    cutoff = None  # tasks whose pod was created after this may be missing from the listing
    if listing is None:  # listed after the tasks were read: a pod missing from it is really gone
        backend = Backend.objects.get(pk=backend_id)
        with connect(backend) as kube:
            listing = list_ours(kube)
    else:
        cutoff = (listing.listed_at or now) - CLOCK_SKEW
    by_key = {
        ((p.get("metadata") or {}).get("namespace"), (p.get("metadata") or {}).get("name")): p for p in listing.items
    }
    grace = timedelta(seconds=settings.WORKFLOW_PENDING_GRACE_SECONDS)
    stale: set[int] = set()
    for task in tasks:
        raw = by_key.get((task.namespace, task.pod_name))
        if raw is None and task.status == PENDING:
            if task.created_at <= now - grace:
                stale.add(task.workflow_id)
            continue
        if raw is None and cutoff is not None and (task.pod_created_at is None or task.pod_created_at > cutoff):
            continue  # created after the listing began: not missing, just not listed
        result["changed"] += observe(task, raw)
    for workflow_pk in sorted(stale):
        enqueue.create_pods(workflow_pk, after_commit=False)
        result["requeued"] += 1
    return result


# ------------------------------------------------------------------------------------------ reaper


def reap_all(*, now=None) -> dict:
    report = {"backends": 0, "deleted": 0, "errors": []}
    for backend in inventory.connected_backends():
        report["backends"] += 1
        try:
            report["deleted"] += reap_backend(backend.pk, now=now)
        except KubeError as error:
            report["errors"].append(f"backend {backend.name}: {error}")
            log.warning("reaper: backend %s: %s", backend.name, error)
    return report


def reap_backend(backend_id: int, *, now=None, retention: int | None = None) -> int:
    """Delete our pods (in the backend's cluster) whose workflow is unknown, or finished more than `retention`
    seconds ago."""
    now = now or timezone.now()
    keep = timedelta(seconds=settings.WORKFLOW_POD_RETENTION_SECONDS if retention is None else retention)
    backend = Backend.objects.get(pk=backend_id)
    with connect(backend) as kube:
        listing = list_ours(kube)
        keys = [
            ((p.get("metadata") or {}).get("namespace"), (p.get("metadata") or {}).get("name")) for p in listing.items
        ]
        if not keys:
            return 0
        # Any backend's task counts: several Backend rows may point at one cluster (e.g. one per namespace),
        # and each of them lists every pod of this portal there.
        names = sorted({name for _, name in keys})
        known = {}
        for start in range(0, len(names), 500):
            known.update(
                {
                    (namespace, name): (status, finished_at)
                    for namespace, name, status, finished_at in Task.objects.filter(
                        pod_name__in=names[start : start + 500]
                    ).values_list("namespace", "pod_name", "workflow__status", "workflow__finished_at")
                }
            )
        deleted = 0
        for namespace, name in keys:
            info = known.get((namespace, name))
            if info is not None and (info[0] not in FINISHED_WORKFLOW or (info[1] and info[1] + keep > now)):
                continue
            why = "no workflow of this portal knows it" if info is None else f"its workflow is {info[0]}"
            try:
                if pods.delete_pod(kube, namespace, name):
                    deleted += 1
                    log.info("reaper: deleted pod %s/%s (%s)", namespace, name, why)
            except KubeError as error:
                if error.transient:
                    raise
                log.warning("reaper: %s", error)
    return deleted
