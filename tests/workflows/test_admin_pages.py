"""The admin's workflow pages are not a dead end (issue #35, point 2): cancel with a confirmation page through
the service (and `access.policy`), a task's log, the timeline and the live page's link; constant queries on the
list with its row actions."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from access.services import roles
from tests.factories import RoleFactory
from tests.queries import assert_constant_queries
from tests.workflows.conftest import CLI, NAMESPACE
from tests.workflows.test_logs import _running
from workflows.models import TaskEvent, Workflow

pytestmark = pytest.mark.django_db


@pytest.fixture
def console(db):
    """A role that lets into the admin console (a config action) and no more."""
    return RoleFactory(
        name="console", policies=[{"effect": "Allow", "actions": ["config:Read"], "resources": ["config/pool"]}]
    )


def _client(user) -> Client:
    roles.update_user_roles(user, add=["console"], actor=CLI)
    client = Client()
    client.force_login(user)
    return client


def _urls(workflow: Workflow) -> dict[str, str]:
    return {
        name: reverse(f"admin:workflows_workflow_{name}", args=[workflow.pk])
        for name in ("change", "cancel_workflow", "task_logs", "live_page", "cancel_workflow_row")
    }


def test_the_page_has_cancel_logs_live_page_and_the_timeline(submitted, carol, console):
    workflow = submitted()
    answer = _client(carol).get(_urls(workflow)["change"])
    assert answer.status_code == 200, (answer.status_code, answer.get("Location"))
    page = answer.content.decode()
    urls = _urls(workflow)
    assert urls["cancel_workflow"] in page and urls["task_logs"] in page and urls["live_page"] in page
    assert f"/workflows/{workflow.workflow_id}/" in page  # the live page's link
    assert "<th>event</th>" in page and "<td class='wf-nowrap wf-kind'>SUBMITTED</td>" in page


def test_cancel_asks_first_then_cancels_through_the_service(submitted, carol, console):
    workflow = submitted(tasks=2)
    client, urls = _client(carol), _urls(workflow)
    asked = client.get(urls["cancel_workflow"])
    assert asked.status_code == 200
    text = asked.content.decode()
    assert f"Cancel workflow {workflow.workflow_id}?" in text and "Its 2 unfinished task(s)" in text
    assert Workflow.objects.get(pk=workflow.pk).status == "PENDING"  # a GET changes nothing
    done = client.post(urls["cancel_workflow"], {"message": "bad data"}, follow=True)
    workflow.refresh_from_db()
    assert workflow.status == "CANCELLED" and workflow.cancelled_by == "carol"
    assert f"Workflow {workflow.workflow_id}: cancelled." in done.content.decode()
    messages = set(
        TaskEvent.objects.filter(task__workflow=workflow, kind="CANCELLED").values_list("message", flat=True)
    )
    assert messages == {"cancelled by carol: bad data"}
    # the button is gone once it has finished, and the page says why a second cancel is refused
    assert urls["cancel_workflow"] not in client.get(urls["change"]).content.decode()
    assert client.get(urls["cancel_workflow"]).status_code == 403  # the page's action: unfold asks the same rule
    again = client.get(urls["cancel_workflow_row"], follow=True).content.decode()
    assert "Cannot cancel: workflow" in again and "has already finished (CANCELLED)" in again


def test_cancel_is_refused_to_an_admin_without_workflow_cancel(submitted, bob, console):
    """bob may read every workflow (osmo-user) but not cancel alice's: no button, a refusal, nothing changed."""
    workflow = submitted()
    client, urls = _client(bob), _urls(workflow)
    assert urls["cancel_workflow"] not in client.get(urls["change"]).content.decode()
    asked = client.get(urls["cancel_workflow_row"], follow=True).content.decode()
    assert "Cannot cancel: bob may not cancel workflow" in asked
    assert client.post(urls["cancel_workflow"], {"message": "x"}).status_code == 403
    refused = client.post(urls["cancel_workflow_row"], {"message": "x"}, follow=True).content.decode()
    assert "Not cancelled: bob may not cancel workflow" in refused  # the service's refusal (access.policy)
    assert Workflow.objects.get(pk=workflow.pk).status == "PENDING"


def test_a_too_long_message_is_refused_and_nothing_is_cancelled(submitted, carol, console):
    workflow = submitted()
    answer = _client(carol).post(_urls(workflow)["cancel_workflow"], {"message": "x" * 501}, follow=True)
    assert "the message has 501 characters, at most 500" in answer.content.decode()
    assert Workflow.objects.get(pk=workflow.pk).status == "PENDING"


def test_logs_read_the_tasks_log_from_the_cluster(submitted, kube_server, carol, console):
    workflow = _running(submitted, kube_server)
    task = workflow.tasks.get()
    page = _client(carol).get(_urls(workflow)["task_logs"] + "?tail=5")
    text = page.content.decode()
    assert page.status_code == 200 and 'id="log-lines"' in text
    assert f"pod {task.pod_name}" in text and text.count('<span class="at">') <= 5
    assert kube_server.emulator.get("pods", task.pod_name, NAMESPACE)  # read, not deleted


def test_logs_say_why_there_is_none_and_refuse_a_bad_tail(submitted, carol, console):
    workflow = submitted()
    client, url = _client(carol), _urls(workflow)["task_logs"]
    assert "the task&#x27;s pod has not been created" in client.get(url).content.decode()
    bad = client.get(url + "?tail=0").content.decode()
    assert 'id="log-error"' in bad and "tail" in bad
    missing = client.get(url + "?task=ghost").content.decode()
    assert "has no task &#x27;ghost&#x27;" in missing


def test_live_page_redirects_to_the_researchers_page(submitted, carol, console):
    workflow = submitted()
    answer = _client(carol).get(_urls(workflow)["live_page"])
    assert answer.status_code == 302 and answer["Location"] == f"/workflows/{workflow.workflow_id}/"


def test_the_list_with_row_actions_takes_constant_queries(submitted, carol, console):
    client, url = _client(carol), reverse("admin:workflows_workflow_changelist")
    submitted()
    assert "Cancel…" in client.get(url).content.decode()
    assert_constant_queries(lambda: client.get(url), lambda: [submitted() for _ in range(3)])
