"""Notifications sent for real (docs/self-service.md, "Notifications"): email to an SMTP server and Slack
posts to an HTTP receiver, both on 127.0.0.1; a receiver that is down is retried with backoff and each
outcome recorded, and the workflow is never held up or changed by it."""

from __future__ import annotations

import pytest

from notifications import tasks
from notifications.models import Channel, Delivery, Event, Notification
from notifications.services.messages import outcome
from tests.factories import ProjectFactory, TaskFactory, WorkflowFactory
from tests.notifications.conftest import switched_on
from tests.notifications.receivers import closed_port
from workflows.lifecycle.cancel import cancel
from workflows.models import WorkflowStatus

pytestmark = pytest.mark.django_db


def notes(workflow) -> dict[str, Notification]:
    return {n.channel: n for n in Notification.objects.filter(workflow=workflow)}


def test_a_finished_workflow_is_emailed_through_the_smtp_server(ana, running, finish, smtp):
    switched_on(ana, email=True)
    workflow = finish(running(), reason="exit code 3")
    assert workflow.status == WorkflowStatus.FAILED
    [mail] = smtp.mails
    assert mail.recipients == ["ana@example.com"]
    assert mail.message["Subject"] == f"Workflow {workflow.workflow_id} failed"
    body = mail.message.get_payload()
    assert "exit code 3" in body and f"/workflows/{workflow.workflow_id}/" in body
    note = notes(workflow)[Channel.EMAIL]
    assert (note.event, note.status, note.target, note.attempts, note.error) == (
        Event.FINISHED,
        Delivery.SENT,
        "ana@example.com",
        1,
        "",
    )


def test_slack_goes_to_the_users_webhook_else_the_projects(ana, running, finish, hook):
    switched_on(ana, slack=True)
    project = ProjectFactory(name="vision", slack_webhook=hook.url + "/project")
    project_workflow = finish(running(project=project))
    switched_on(ana, slack=True, webhook=hook.url)
    own_workflow = finish(running(project=project))
    assert [post["path"] for post in hook.posts] == ["/services/T000/B000/secret/project", "/services/T000/B000/secret"]
    assert hook.posts[1]["body"]["text"].startswith(f"*Workflow {own_workflow.workflow_id} failed*")
    assert notes(project_workflow)[Channel.SLACK].target == "project vision webhook http://127.0.0.1/…ject"
    assert notes(own_workflow)[Channel.SLACK].target == "your webhook http://127.0.0.1/…cret"
    assert {n.status for n in Notification.objects.all()} == {Delivery.SENT}


def test_nothing_is_sent_when_no_switch_is_on(ana, running, finish, smtp, hook):
    switched_on(ana, webhook=hook.url)
    finish(running())
    assert (smtp.mails, hook.posts, Notification.objects.count()) == ([], [], 0)


def test_a_receiver_that_is_down_is_retried_recorded_and_leaves_the_workflow_alone(
    ana, running, finish, notify_settings, hook
):
    notify_settings.EMAIL_PORT = closed_port()
    switched_on(ana, email=True, slack=True, webhook=f"http://127.0.0.1:{closed_port()}/hook")
    workflow = finish(running(), reason="exit code 2")
    assert workflow.status == WorkflowStatus.FAILED and workflow.error.endswith(": exit code 2")  # its own
    first = notes(workflow)
    assert {n.status for n in first.values()} == {Delivery.RETRYING}
    assert first[Channel.EMAIL].attempts == first[Channel.SLACK].attempts == 1
    assert "SMTP server 127.0.0.1" in first[Channel.EMAIL].error
    assert first[Channel.SLACK].error.startswith("webhook unreachable: ")
    assert first[Channel.SLACK].target == "your webhook http://127.0.0.1/…hook"  # never the whole URL

    tasks.sweep()  # the periodic retry: still down
    assert {(n.status, n.attempts) for n in notes(workflow).values()} == {(Delivery.RETRYING, 2)}

    switched_on(ana, email=True, slack=True, webhook=hook.url)  # Slack's side is back; the SMTP server is not
    tasks.sweep()
    after = notes(workflow)
    assert (after[Channel.SLACK].status, after[Channel.SLACK].attempts, after[Channel.SLACK].error) == (
        Delivery.SENT,
        3,
        "",
    )
    assert (after[Channel.EMAIL].status, after[Channel.EMAIL].attempts) == (Delivery.FAILED, 3)  # out of attempts
    assert "SMTP server" in after[Channel.EMAIL].error
    assert len(hook.posts) == 1
    tasks.sweep()  # nothing is due any more
    assert len(hook.posts) == 1 and notes(workflow)[Channel.EMAIL].attempts == 3
    workflow.refresh_from_db()
    assert workflow.status == WorkflowStatus.FAILED and workflow.error.endswith(": exit code 2")


def test_a_refusal_is_not_retried(ana, running, finish, hook, notify_settings):
    hook.statuses = [404]
    switched_on(ana, slack=True, webhook=hook.url)
    workflow = finish(running())
    note = notes(workflow)[Channel.SLACK]
    assert (note.status, note.attempts, note.error) == (Delivery.FAILED, 1, "webhook answered HTTP 404")


def test_slack_without_any_webhook_and_email_without_an_address_fail_with_the_reason(running, finish, ana, smtp):
    ana.email = ""
    ana.save()
    switched_on(ana, email=True, slack=True)
    workflow = finish(running())
    found = notes(workflow)
    assert found[Channel.EMAIL].status == found[Channel.SLACK].status == Delivery.FAILED
    assert found[Channel.EMAIL].error == "ana has no email address"
    assert found[Channel.SLACK].error.startswith("no Slack webhook")


def test_a_cancelled_workflow_says_who_cancelled_it(ana, smtp, django_capture_on_commit_callbacks):
    switched_on(ana, email=True)
    workflow = WorkflowFactory(submitted_by=ana, status="QUEUED")
    TaskFactory(workflow=workflow)
    with django_capture_on_commit_callbacks(execute=True):
        cancel(workflow.workflow_id, message="wrong data")
    [mail] = smtp.mails
    assert mail.message["Subject"] == f"Workflow {workflow.workflow_id} was cancelled by the command line"


@pytest.mark.parametrize(
    ("fields", "task", "said"),
    [
        ({"status": "COMPLETED"}, {"status": "COMPLETED"}, "completed"),
        ({"status": "FAILED_PREEMPTED", "preemption": {"by": "bob's train-2"}}, {}, "was preempted by bob's train-2"),
        (
            {"status": "FAILED"},
            {"status": "FAILED", "exit_reason": "spot interruption", "node": "spot-3"},
            "failed: spot interruption on node spot-3",
        ),
        ({"status": "FAILED_EXEC_TIMEOUT"}, {}, "timed out running"),
    ],
)
def test_each_ending_is_named(ana, fields, task, said):
    workflow = WorkflowFactory(submitted_by=ana, **fields)
    TaskFactory(workflow=workflow, **task)
    assert outcome(workflow) == said
