"""With a real Celery worker (Redis): a webhook answering 503 is retried by Celery with the row's backoff
until it takes the message; every attempt is counted on the row."""

from __future__ import annotations

import pytest

from notifications.models import Delivery, Notification
from tests.notifications.conftest import switched_on
from tests.ops.test_shared_counters import counted as counted_shared
from tests.polling import wait_until


def counted_notifications(**labels: str) -> int:
    return counted_shared("portal_notifications", **labels)


@pytest.mark.django_db(transaction=True)
def test_celery_retries_a_webhook_that_fails_then_recovers(redis_worker, ana, running, finish, hook, notify_settings):
    hook.statuses = [503, 503]
    switched_on(ana, slack=True, webhook=hook.url)
    workflow = finish(running())
    note = wait_until(
        lambda: Notification.objects.filter(workflow=workflow, status=Delivery.SENT).first(),
        what="the third attempt delivered",
    )
    assert (note.attempts, note.error) == (3, "")
    assert len(hook.posts) == 3
    # portal_notifications_total (docs/operations.md): counted once the row's transaction is committed, so the
    # worker's count may come a moment after the test has read the row as sent
    expected = {"retrying": 2, "sent": 1, "failed": 0}
    wait_until(
        lambda: {outcome: counted_notifications(channel="slack", outcome=outcome) for outcome in expected} == expected,
        what=f"the deliveries counted as {expected}",
    )
