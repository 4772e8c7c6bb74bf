"""Celery tasks of the notifications app: thin shells (ids in) around `notifications.services`.

* `deliver(notification_id)`: one attempt at one notification (notifications.services.delivery), queued after
  the rows commit. A failure that may pass is retried by Celery after the row's backoff (NOTIFY_RETRY_SECONDS,
  doubling) up to NOTIFY_MAX_ATTEMPTS attempts; the row says each outcome. In the embedded default (no broker,
  eager) a retry would run at once in the writer's thread: there the periodic sweep retries instead.
* `sweep`: the periodic job (every NOTIFY_SWEEP_SECONDS): rows for workflows that have waited past
  NOTIFY_QUEUE_WAIT_SECONDS, and rows whose delivery message was lost or whose retry time has come.
"""

from __future__ import annotations

from celery import shared_task
from django.conf import settings

from notifications.models import Delivery
from notifications.services import delivery, outbox
from portal.celery import app as _celery_app  # noqa: F401  (the app these tasks bind to: `portal` does not load it)


@shared_task(name="notifications.tasks.deliver", bind=True, acks_late=True, ignore_result=True, max_retries=None)
def deliver(self, notification_id: int) -> str:
    row = delivery.deliver(notification_id)
    if row is None:
        return "nothing to do"
    if row.status == Delivery.RETRYING and not self.request.is_eager:
        raise self.retry(countdown=delivery.retry_delay(row.attempts))
    return row.status


@shared_task(name="notifications.tasks.sweep", ignore_result=True)
def sweep() -> dict:
    """Queue-wait notifications, then what is due; returns how many of each were queued."""
    waits = outbox.queue_waits()  # their delivery is queued after they commit
    grace = 0 if _eager() else settings.NOTIFY_SWEEP_SECONDS  # a worker's own retry comes first
    due = [pk for pk in outbox.due(grace=grace) if pk not in waits]
    for notification_id in due:
        deliver.delay(notification_id)
    return {"queue_waits": len(waits), "due": len(due)}


def _eager() -> bool:
    return bool(_celery_app.conf.task_always_eager)
