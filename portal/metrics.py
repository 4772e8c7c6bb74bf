"""The portal's own Prometheus metrics (docs/operations.md), defined once; call sites import this module.

Foundation: every app may import it. Call sites stay one line (`metrics.SUBMISSIONS.labels(...).inc()`).
What is read from the database at scrape time (queue depth, watcher lag) is a collector in the wiring
(`portal.ops.collectors`), since it reads the apps' models. Label values are names the portal already
knows (pools, backends, node pools, task names): never user input that matched nothing.
"""

from __future__ import annotations

from prometheus_client import Counter, Histogram

SUBMISSIONS = Counter(
    "portal_workflow_submissions",
    "Workflow submissions by pool and outcome (pending, queued, dry_run, valid, refused).",
    ["pool", "outcome"],
)
ADMISSIONS = Counter(
    "portal_workflow_admissions", "Workflows admitted from a node pool's queue (QUEUED to PENDING).", ["node_pool"]
)
POD_CREATIONS = Counter(
    "portal_pod_creations",
    "Pods of workflow tasks by backend and outcome (created, adopted: already there, failed: refused).",
    ["backend", "outcome"],
)
POD_CREATION_ERRORS = Counter(
    "portal_pod_creation_errors",
    "Failed pod creation calls by backend and kind (transient: retried; refused: the task failed).",
    ["backend", "kind"],
)
INVENTORY_SYNC_SECONDS = Histogram(
    "portal_inventory_sync_seconds",
    "Duration of a full inventory sync (list nodes and pods, write them) per backend.",
    ["backend"],
    buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120),
)
CELERY_TASKS = Counter(
    "portal_celery_tasks", "Celery task outcomes (success, failure, retry) by task name.", ["task", "outcome"]
)


def _task_name(sender) -> str:
    return getattr(sender, "name", None) or str(sender)


def connect_celery() -> None:
    """Count task outcomes where the task runs (the worker; the request's process for eager tasks)."""
    from celery import signals

    for signal, outcome in (
        (signals.task_success, "success"),
        (signals.task_failure, "failure"),
        (signals.task_retry, "retry"),
    ):

        def count(sender=None, outcome=outcome, **_):
            CELERY_TASKS.labels(_task_name(sender), outcome).inc()

        signal.connect(count, weak=False, dispatch_uid=f"portal-metrics-{outcome}")
