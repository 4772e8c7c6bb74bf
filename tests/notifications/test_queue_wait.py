"""A workflow that has waited past NOTIFY_QUEUE_WAIT_SECONDS without starting is announced once, by the
periodic sweep (notifications.tasks.sweep)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from notifications import tasks
from notifications.models import Delivery, Event, Notification
from tests.factories import WorkflowFactory
from tests.notifications.conftest import switched_on
from workflows.models import Workflow

pytestmark = pytest.mark.django_db


def submitted(user, status: str, waited: timedelta) -> Workflow:
    workflow = WorkflowFactory(submitted_by=user, status=status)
    Workflow.objects.filter(pk=workflow.pk).update(created_at=timezone.now() - waited)
    return workflow


def test_a_long_wait_is_emailed_once_and_a_short_one_not_at_all(
    ana, smtp, notify_settings, django_capture_on_commit_callbacks
):
    notify_settings.NOTIFY_QUEUE_WAIT_SECONDS = 3600
    switched_on(ana, email=True)
    long = submitted(ana, "QUEUED", timedelta(hours=2, minutes=5))
    submitted(ana, "QUEUED", timedelta(minutes=10))
    submitted(ana, "RUNNING", timedelta(hours=3))  # started: not waiting
    for _ in range(2):
        with django_capture_on_commit_callbacks(execute=True):
            tasks.sweep()
    [mail] = smtp.mails
    assert mail.message["Subject"] == f"Workflow {long.workflow_id} has waited 2h 05m without starting"
    assert "still queued" in mail.message.get_payload()
    [note] = Notification.objects.all()
    assert (note.workflow_id, note.event, note.status) == (long.pk, Event.QUEUED, Delivery.SENT)


def test_no_threshold_no_queue_notification(ana, smtp, notify_settings, django_capture_on_commit_callbacks):
    notify_settings.NOTIFY_QUEUE_WAIT_SECONDS = 0
    switched_on(ana, email=True)
    submitted(ana, "QUEUED", timedelta(days=3))
    with django_capture_on_commit_callbacks(execute=True):
        tasks.sweep()
    assert smtp.mails == [] and not Notification.objects.exists()
