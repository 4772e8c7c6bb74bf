"""The portal's own Prometheus metrics (docs/operations.md), defined once; call sites import this module.

Foundation: every app may import it. Call sites stay one line (`metrics.SUBMISSIONS.labels(...).inc()`).
What the web process counts lives in its memory (prometheus_client); what Celery workers and the watchers
count lives in the database (portal.shared_metrics), read with the queue depth and the watchers' lag by a
collector in the wiring (`portal.ops.collectors`). Label values are names the portal already knows (pools,
backends, node pools, task names): never user input that matched nothing.
"""

from __future__ import annotations

from prometheus_client import Counter

from portal.shared_metrics import SharedCounter, SharedHistogram

SUBMISSIONS = Counter(
    "portal_workflow_submissions",
    "Workflow submissions by pool and outcome (pending, queued, dry_run, valid, refused).",
    ["pool", "outcome"],
)
ADMISSIONS = SharedCounter(  # counted in the workers (portal.shared_metrics)
    "portal_workflow_admissions", "Workflows admitted from a node pool's queue (QUEUED to PENDING).", ["node_pool"]
)
POD_CREATIONS = SharedCounter(  # counted in the workers (portal.shared_metrics)
    "portal_pod_creations",
    "Pods of workflow tasks by backend and outcome (created, adopted: already there, failed: refused).",
    ["backend", "outcome"],
)
POD_CREATION_ERRORS = SharedCounter(  # counted in the workers (portal.shared_metrics)
    "portal_pod_creation_errors",
    "Failed pod creation calls by backend and kind (transient: retried; refused: the task failed).",
    ["backend", "kind"],
)
INVENTORY_SYNC_SECONDS = SharedHistogram(  # the watcher's first sync, the periodic task's in a worker
    "portal_inventory_sync_seconds",
    "Duration of a full inventory sync (list nodes and pods, write them) per backend.",
    ["backend"],
    buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120),
)
NOTIFICATIONS = SharedCounter(  # counted in the workers (portal.shared_metrics)
    "portal_notifications",
    "Notification delivery attempts by channel (email, slack) and outcome (sent, retrying, failed).",
    ["channel", "outcome"],
)
CELERY_TASKS = SharedCounter(  # counted in the workers (portal.shared_metrics)
    "portal_celery_tasks",
    "Celery task outcomes (success, failure, retry) by task name.",
    ["task", "outcome"],
    after_commit=False,  # counted after the task returned, outside its transactions (an eager one's caller's)
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


SHARED = (  # read by the web
    ADMISSIONS,
    POD_CREATIONS,
    POD_CREATION_ERRORS,
    NOTIFICATIONS,
    CELERY_TASKS,
    INVENTORY_SYNC_SECONDS,
)
