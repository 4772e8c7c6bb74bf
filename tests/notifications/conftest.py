"""Fixtures of the notification tests: a submitter with switches, a running workflow of theirs, and the
settings that point email at a real SMTP server on 127.0.0.1 (tests/notifications/receivers.py); and the
workflows tests' simulated cluster, for endings the cluster causes."""

from __future__ import annotations

import pytest

from pools.models import UserProfile
from tests.factories import TaskFactory, UserFactory, WorkflowFactory
from tests.notifications.receivers import smtp_server, webhook_server
from tests.workflows.conftest import (  # noqa: F401  (fixtures: the simulated cluster, its backend, pool, submission)
    alice,
    backend,
    batch_role,
    fast_password_hashing,
    kube_server,
    pool,
    portal_instance,
    run_on_commit,
    submitted,
)
from tests.workflows.test_spot_interruption import kube, spot_pool  # noqa: F401  (fixtures)
from workflows.lifecycle.settle import fail_task
from workflows.models import TaskStatus


@pytest.fixture
def notify_settings(settings):
    """Email through Django's SMTP backend (pytest-django swaps in the in-memory one), quick retries."""
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST = "127.0.0.1"
    settings.NOTIFY_RETRY_SECONDS = 0  # a failed attempt is due again at once (no test waits on a clock)
    settings.NOTIFY_MAX_ATTEMPTS = 3
    return settings


@pytest.fixture
def smtp(notify_settings):
    with smtp_server() as (port, inbox):
        notify_settings.EMAIL_PORT = port
        yield inbox


@pytest.fixture
def hook():
    with webhook_server() as (port, inbox):
        inbox.url = f"http://127.0.0.1:{port}/services/T000/B000/secret"
        yield inbox


def switched_on(user, *, email=False, slack=False, webhook="") -> UserProfile:
    return UserProfile.objects.update_or_create(
        user=user, defaults={"email_notification": email, "slack_notification": slack, "slack_webhook": webhook}
    )[0]


@pytest.fixture
def ana(db):
    return UserFactory(username="ana", email="ana@example.com")


@pytest.fixture
def running(ana):
    """A running workflow of ana's with one task."""

    def make(**fields):
        workflow = WorkflowFactory(submitted_by=ana, status="RUNNING", **fields)
        TaskFactory(workflow=workflow, status=TaskStatus.RUNNING)
        return workflow

    return make


@pytest.fixture
def finish(django_capture_on_commit_callbacks):
    """End the workflow's task with a failure (the lifecycle's own step), running what it queues after commit."""

    def end(workflow, reason="exit code 1"):
        with django_capture_on_commit_callbacks(execute=True):
            assert fail_task(workflow.tasks.get(), TaskStatus.FAILED, reason, kind="EXITED")
        workflow.refresh_from_db()
        return workflow

    return end
