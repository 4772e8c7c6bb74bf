"""Deliver one notification and record how it went on its row (what the workflow page's timeline shows).

Email goes through Django's mail framework (the SMTP server of EMAIL_HOST…, docs/configuration.md) to the
submitter's address; Slack is a JSON POST to an incoming webhook, the submitter's own (their profile) or else
their workflow's project's. A failure that may pass (the server unreachable or timing out, SMTP 4xx, HTTP 429
or 5xx) leaves the row RETRYING with its next attempt NOTIFY_RETRY_SECONDS later, doubling, up to
NOTIFY_MAX_ATTEMPTS attempts; one that will not (no address, no webhook, a refusal) fails it at once. Nothing
here raises: a workflow's transition never waits on or fails with a notification.
"""

from __future__ import annotations

import json
import logging
import smtplib
import urllib.error
import urllib.request
from datetime import timedelta

from django.conf import settings
from django.core.mail import EmailMessage
from django.db import transaction
from django.utils import timezone

from notifications.models import Channel, Delivery, Notification
from notifications.services.messages import Message, compose
from pools.models import UserProfile
from portal import metrics, webhooks
from portal.backoff import capped

log = logging.getLogger(__name__)

OPEN = (Delivery.PENDING, Delivery.RETRYING)
EARLY = timedelta(seconds=1)  # a retry message may arrive this much before the row's time and still count


class DeliveryError(Exception):
    def __init__(self, reason: str, *, transient: bool) -> None:
        super().__init__(reason)
        self.reason, self.transient = reason, transient


def deliver(notification_id: int) -> Notification | None:
    """Try the row once if it is open and due (locked meanwhile: two workers never send it twice); the row as
    it was left, or None when there was nothing to do."""
    now = timezone.now()
    with transaction.atomic():
        row = (
            Notification.objects.select_for_update(skip_locked=True, of=("self",))
            .select_related("workflow__pool", "workflow__submitted_by", "workflow__project")
            .filter(pk=notification_id, status__in=OPEN)
            .first()
        )
        if row is None or (row.next_attempt_at is not None and row.next_attempt_at > now + EARLY):
            return None
        try:
            send(row)
            _sent(row, now)
        except DeliveryError as error:
            _failed(row, now, error)
        except Exception as error:  # a bug or a library's surprise: recorded, retried, never raised
            log.exception("notification #%s: delivery raised", row.pk)
            _failed(row, now, DeliveryError(f"{type(error).__name__}: {error}", transient=True))
        row.save()
    metrics.NOTIFICATIONS.labels(row.channel, row.status).inc()
    return row


def _sent(row: Notification, now) -> None:
    row.attempts += 1
    row.status, row.error, row.last_attempt_at, row.sent_at, row.next_attempt_at = Delivery.SENT, "", now, now, None


def _failed(row: Notification, now, error: DeliveryError) -> None:
    row.attempts += 1
    row.last_attempt_at, row.error = now, error.reason[:2000]
    if error.transient and row.attempts < settings.NOTIFY_MAX_ATTEMPTS:
        row.status, row.next_attempt_at = Delivery.RETRYING, now + timedelta(seconds=retry_delay(row.attempts))
    else:
        row.status, row.next_attempt_at = Delivery.FAILED, None
    log.info("notification #%s (%s) %s: %s", row.pk, row.channel, row.status, row.error)


def retry_delay(attempts: int) -> float:
    """Seconds before the attempt after `attempts` failed ones: NOTIFY_RETRY_SECONDS, doubling, capped."""
    return capped(settings.NOTIFY_RETRY_SECONDS, settings.NOTIFY_RETRY_MAX_SECONDS, attempts)


def send(row: Notification) -> None:
    """Send the row's message on its channel, first writing on the row whom it goes to (as it may be shown);
    DeliveryError when it could not."""
    message = compose(row)
    if row.channel == Channel.EMAIL:
        row.target = address_of(row.workflow.submitted_by)
        send_email(row.target, message)
        return
    url, whose = slack_webhook(row)
    row.target = f"{whose} webhook {webhooks.redacted(url)}"
    post_webhook(url, message.slack)


def address_of(user) -> str:
    """The user's email, else their user name when it is one (OSMO's user names are addresses)."""
    name = user.get_username()
    address = user.email or (name if "@" in name else "")
    if not address:
        raise DeliveryError(f"{name} has no email address", transient=False)
    return address


def send_email(address: str, message: Message) -> None:
    if not settings.EMAIL_HOST:
        raise DeliveryError("no SMTP server is configured (EMAIL_HOST)", transient=False)
    email = EmailMessage(message.subject, message.text, settings.DEFAULT_FROM_EMAIL, [address])
    try:
        email.send()
    except smtplib.SMTPResponseException as error:  # the server answered: 4xx may pass, 5xx will not
        reason = f"SMTP {error.smtp_code}: {_text(error.smtp_error)}"
        raise DeliveryError(reason, transient=error.smtp_code < 500) from None
    except smtplib.SMTPRecipientsRefused as error:
        codes = [code for code, _ in error.recipients.values()]
        raise DeliveryError(f"SMTP refused {address}", transient=all(c < 500 for c in codes)) from None
    except (OSError, smtplib.SMTPException) as error:  # refused, unreachable, timed out, dropped
        raise DeliveryError(
            f"SMTP server {settings.EMAIL_HOST}:{settings.EMAIL_PORT}: {error}", transient=True
        ) from None


def slack_webhook(row: Notification) -> tuple[str, str]:
    """The submitter's own webhook, else their workflow's project's; (url, "your" or "project X")."""
    workflow = row.workflow
    own = UserProfile.objects.filter(user_id=workflow.submitted_by_id).values_list("slack_webhook", flat=True).first()
    if own:
        return own, "your"
    if workflow.project is not None and workflow.project.slack_webhook:
        return workflow.project.slack_webhook, f"project {workflow.project.name}"
    raise DeliveryError(
        "no Slack webhook: set yours on your profile page, or ask for one on the project", transient=False
    )


def post_webhook(url: str, body: dict) -> None:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=settings.NOTIFY_TIMEOUT_SECONDS) as answer:
            answer.read(1024)
    except urllib.error.HTTPError as error:
        transient = error.code == 429 or error.code >= 500
        raise DeliveryError(f"webhook answered HTTP {error.code}", transient=transient) from None
    except (OSError, ValueError) as error:  # refused, unreachable, timed out; a URL urllib cannot open
        reason = getattr(error, "reason", None) or error
        raise DeliveryError(f"webhook unreachable: {reason}", transient=True) from None


def _text(raw) -> str:
    return raw.decode(errors="replace") if isinstance(raw, bytes) else str(raw)
