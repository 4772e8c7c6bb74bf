"""Which messages a workflow gets, as rows of the outbox (`notifications.models.Notification`), and which rows
are due for delivery.

`notify(workflow_pk, event)`: one row per channel its submitter switched on (`pools.UserProfile`: email,
Slack), at most one per (workflow, event, channel), each delivered by the Celery task `notifications.tasks.deliver`
after the rows commit. The receiver of `workflow_finished` calls it when a workflow ends; `queue_waits` when a
workflow has waited NOTIFY_QUEUE_WAIT_SECONDS without starting (once per workflow). `due()`: rows whose
first delivery was lost or whose retry time has come, for the periodic sweep.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from notifications.models import Channel, Delivery, Event, Notification
from pools.models import UserProfile
from workflows.models import Workflow, WorkflowStatus

FINISHED, QUEUED = Event.FINISHED, Event.QUEUED
# not started yet: waiting for admission (QUEUED), for its pods to be created or scheduled
NOT_STARTED = (WorkflowStatus.QUEUED, WorkflowStatus.PENDING, WorkflowStatus.WAITING)
SWEEP_BATCH = 500  # rows (or waiting workflows) one sweep takes on; the next takes the rest


def channels_of(user_id: int) -> list[str]:
    """The channels the user switched on, in a fixed order."""
    profile = UserProfile.objects.filter(user_id=user_id).values("email_notification", "slack_notification").first()
    if profile is None:
        return []
    switches = {Channel.EMAIL: profile["email_notification"], Channel.SLACK: profile["slack_notification"]}
    return [channel for channel, on in switches.items() if on]


def notify(workflow_pk: int, event: str) -> list[int]:
    """Create the workflow's rows for `event` (those missing) and queue their delivery after commit; the ids of
    the rows created."""
    submitter = Workflow.objects.filter(pk=workflow_pk).values_list("submitted_by_id", flat=True).first()
    if submitter is None:
        return []
    created = []
    with transaction.atomic():
        for channel in channels_of(submitter):
            row, new = Notification.objects.get_or_create(workflow_id=workflow_pk, event=event, channel=channel)
            if new:
                created.append(row.pk)
        transaction.on_commit(lambda: _enqueue(created), robust=True)
    return created


def _enqueue(ids: list[int]) -> None:
    from notifications import tasks  # the Celery shells sit above the services

    for notification_id in ids:
        tasks.deliver.delay(notification_id)


def queue_waits(now: datetime | None = None) -> list[int]:
    """Rows for workflows that have waited past NOTIFY_QUEUE_WAIT_SECONDS without starting and were never told
    so (0: never). The ids of the rows created."""
    threshold = settings.NOTIFY_QUEUE_WAIT_SECONDS
    if threshold <= 0:
        return []
    cutoff = (now or timezone.now()) - timedelta(seconds=threshold)
    switched_on = Q(submitted_by__pool_profile__email_notification=True) | Q(
        submitted_by__pool_profile__slack_notification=True
    )
    waiting = (
        Workflow.objects.filter(switched_on, status__in=NOT_STARTED, started_at__isnull=True, created_at__lte=cutoff)
        .exclude(notifications__event=QUEUED)
        .order_by("created_at")
        .values_list("pk", flat=True)[:SWEEP_BATCH]
    )
    created = []
    for workflow_pk in list(waiting):
        created += notify(workflow_pk, QUEUED)
    return created


def due(now: datetime | None = None, grace: float = 0) -> list[int]:
    """Rows to deliver now: pending ones (their first delivery lost) and retrying ones whose time has come,
    `grace` seconds late at least (a worker's own retry goes first)."""
    late = (now or timezone.now()) - timedelta(seconds=grace)
    rows = Notification.objects.filter(
        Q(status=Delivery.PENDING, created_at__lte=late) | Q(status=Delivery.RETRYING, next_attempt_at__lte=late)
    )
    return list(rows.order_by("id").values_list("pk", flat=True)[:SWEEP_BATCH])


def of_workflow(workflow: Workflow) -> list[Notification]:
    """The workflow's notifications, oldest first, for its page (one query)."""
    return list(Notification.objects.filter(workflow=workflow).order_by("created_at", "id"))
