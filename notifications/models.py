"""One row per message the portal sends about a workflow: what it is about, to which channel, and how its
delivery went (sent, retrying, failed and why). The row is the outbox (the Celery task delivers it, the
periodic sweep retries what is due) and the record the workflow page's timeline shows.

At most one row per (workflow, event, channel): a workflow is announced once when it ends and once when it
has waited past the threshold, however often the signal or the sweep runs.
"""

from __future__ import annotations

from django.db import models
from django.utils import timezone


class Event(models.TextChoices):
    FINISHED = "finished"  # completed, failed, cancelled, preempted, timed out (a spot interruption ends it failed)
    QUEUED = "queued"  # waited in the queue past NOTIFY_QUEUE_WAIT_SECONDS


class Channel(models.TextChoices):
    EMAIL = "email"
    SLACK = "slack"


class Delivery(models.TextChoices):
    PENDING = "pending"  # not tried yet
    RETRYING = "retrying"  # tried, failed for a reason that may pass (network, 5xx); tried again at `next_attempt_at`
    SENT = "sent"
    FAILED = "failed"  # given up: refused (4xx, no address, no webhook) or out of attempts


class Notification(models.Model):
    workflow = models.ForeignKey("workflows.Workflow", on_delete=models.CASCADE, related_name="notifications")
    event = models.CharField(max_length=16, choices=Event.choices)
    channel = models.CharField(max_length=16, choices=Channel.choices)
    status = models.CharField(max_length=16, choices=Delivery.choices, default=Delivery.PENDING)
    # whom it goes to, as it may be shown: an email address, or a webhook's redacted form and whose it is
    target = models.CharField(max_length=300, blank=True, default="")
    attempts = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True, default="")  # why the last attempt failed ("" once sent)
    created_at = models.DateTimeField(default=timezone.now)
    last_attempt_at = models.DateTimeField(null=True, blank=True)
    next_attempt_at = models.DateTimeField(null=True, blank=True)  # set while RETRYING
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["workflow_id", "created_at", "id"]
        constraints = [
            models.UniqueConstraint(fields=["workflow", "event", "channel"], name="one_notification_per_event")
        ]
        indexes = [models.Index(fields=["status", "next_attempt_at"])]

    def __str__(self) -> str:
        return f"{self.workflow_id} {self.event} by {self.channel}: {self.status}"
