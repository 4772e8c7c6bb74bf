"""Notifications of the endings the cluster causes, through the real path: a workflow runs on the simulated
cluster (kubesim over HTTP), is preempted (the lifecycle's `preempt`, what the admission pass calls for a
victim) or loses its spot node (the cloud's steps done through the Kubernetes API, followed by the reconciler),
and the email that says so reaches the SMTP server on 127.0.0.1. `test_delivery.py::test_each_ending_is_named`
checks the wording alone."""

from __future__ import annotations

import pytest

from notifications.models import Channel, Delivery, Event, Notification
from tests.notifications.conftest import switched_on
from tests.workflows.conftest import settle_until, spec
from tests.workflows.test_spot_interruption import interrupt, running
from workflows.lifecycle.admit_hold_preempt import preempt
from workflows.lifecycle.create import create_pods
from workflows.lifecycle.interruption import SPOT_REASON
from workflows.models import WorkflowStatus

pytestmark = pytest.mark.django_db


def the_email(smtp, workflow):
    [mail] = smtp.mails
    assert mail.recipients == ["alice@example.com"]
    [note] = Notification.objects.filter(workflow=workflow, channel=Channel.EMAIL)
    assert (note.event, note.status, note.attempts) == (Event.FINISHED, Delivery.SENT, 1)
    return mail


def test_a_preempted_workflow_is_emailed_with_who_preempted_it(alice, backend, submitted, run_on_commit, smtp):
    switched_on(alice, email=True)
    workflow = submitted(platform="forever")
    run_on_commit(create_pods, workflow.pk)
    settle_until(backend, workflow, {WorkflowStatus.RUNNING}, run_on_commit)
    assert smtp.mails == []

    status = run_on_commit(preempt, workflow.pk, {"text": "reclaimed for a guaranteed workflow", "by": "bob's train-2"})

    assert status == WorkflowStatus.FAILED_PREEMPTED
    mail = the_email(smtp, workflow)
    assert mail.message["Subject"] == f"Workflow {workflow.workflow_id} was preempted by bob's train-2"


def test_a_spot_interrupted_workflow_is_emailed_with_the_node(
    alice, spot_pool, backend, kube, submitted, run_on_commit, smtp
):
    switched_on(alice, email=True)
    workflow = submitted(spec("spotmail", platform="forever"))
    run_on_commit(create_pods, workflow.pk)
    node = running(backend, workflow, run_on_commit).node
    assert smtp.mails == []

    interrupt(kube, node)
    settle_until(backend, workflow, {WorkflowStatus.FAILED_BACKEND_ERROR}, run_on_commit)

    mail = the_email(smtp, workflow)
    assert mail.message["Subject"] == f"Workflow {workflow.workflow_id} failed: {SPOT_REASON} on node {node}"
    assert f"{SPOT_REASON} on node {node}" in mail.message.get_payload()
