"""Where users and projects set notifications: the profile API (`osmo profile set notifications …`, plus the
portal's `slack_webhook`), the profile page, a project's webhook in the admin; webhooks are checked, stored
encrypted and never shown back in full; the workflow page's timeline shows each notification's outcome."""

from __future__ import annotations

import pytest
from django.db import connection
from rest_framework.test import APIClient

from access.models import AuditEvent
from access.services.roles import ensure_builtin_roles
from configs.revisions import Actor
from notifications.models import Delivery, Notification
from pools.models import UserProfile
from portal.errors import DomainError
from teams import services as teams
from teams.models import Project
from tests.factories import ProjectFactory
from tests.notifications.conftest import switched_on
from workflows.models import Workflow

pytestmark = pytest.mark.django_db
URL = "/api/profile/settings"
SECRET = "https://hooks.slack.com/services/T000/B000/abcdefSECRET"


@pytest.fixture
def api(ana):
    ensure_builtin_roles()  # osmo-default: profile:Read and profile:Update for everyone
    client = APIClient()
    client.force_authenticate(ana)
    return client


def stored(table: str, pk: int) -> str:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT slack_webhook FROM {table} WHERE id = %s", [pk])
        return cursor.fetchone()[0]


def test_the_api_sets_switches_and_a_webhook_it_never_answers_back(api, ana):
    answer = api.post(URL, {"slack_notification": True, "slack_webhook": SECRET}, format="json")
    assert answer.status_code == 200, answer.content
    assert answer.json()["profile"]["slack_notification"] is True
    assert SECRET not in answer.content.decode() and "slack_webhook" not in answer.json()["profile"]
    profile = UserProfile.objects.get(user=ana)
    assert profile.slack_webhook == SECRET
    assert stored("pools_userprofile", profile.pk).startswith("fernet:")  # encrypted at rest


@pytest.mark.parametrize("bad", ["hooks.slack.com/x", "ftp://example.com/hook", "javascript:alert(1)", 7])
def test_a_bad_webhook_is_refused_naming_the_field(api, ana, bad):
    answer = api.post(URL, {"slack_notification": True, "slack_webhook": bad}, format="json")
    assert answer.status_code == 400 and answer.json()["field"] == "slack_webhook"
    assert not UserProfile.objects.filter(user=ana, slack_notification=True).exists()


def test_the_profile_page_sets_notifications_and_shows_the_webhook_redacted(client, ana, api):
    client.force_login(ana)
    page = client.get("/profile/")
    assert page.status_code == 200 and 'id="notifications-form"' in page.content.decode()
    saved = client.post(
        "/profile/", {"email_notification": "on", "slack_notification": "on", "slack_webhook": SECRET}, follow=True
    )
    text = saved.content.decode()
    assert "Notification settings saved." in text
    assert "https://hooks.slack.com/…CRET" in text and SECRET not in text
    profile = UserProfile.objects.get(user=ana)
    assert (profile.email_notification, profile.slack_notification, profile.slack_webhook) == (True, True, SECRET)
    client.post("/profile/", {"slack_notification": "on"})  # the webhook left empty stays
    assert UserProfile.objects.get(user=ana).slack_webhook == SECRET
    refused = client.post("/profile/", {"slack_webhook": "not a url"})
    assert refused.status_code == 400 and "must be an http:// or https:// URL" in refused.content.decode()
    client.post("/profile/", {"clear_slack_webhook": "on"})
    profile.refresh_from_db()
    assert (profile.email_notification, profile.slack_webhook) == (False, "")


def test_a_projects_webhook_is_checked_encrypted_and_audited_redacted(admin_user):
    project = ProjectFactory(name="vision")
    actor = Actor.of(admin_user, "test")
    with pytest.raises(DomainError) as refused:
        teams.update_project("vision", actor, slack_webhook="nope", who=admin_user)
    assert refused.value.field == "slack_webhook"
    teams.update_project("vision", actor, slack_webhook=SECRET, who=admin_user)
    assert Project.objects.get(pk=project.pk).slack_webhook == SECRET
    assert stored("teams_project", project.pk).startswith("fernet:")
    event = AuditEvent.objects.get(action="team.update", target="project/vision")
    assert event.detail == {"slack_webhook": ["", "https://hooks.slack.com/…CRET"]}


def test_the_admin_project_page_takes_a_webhook_without_showing_it(admin_client):
    project = ProjectFactory(name="vision")
    url = f"/admin/teams/project/{project.pk}/change/"
    answer = admin_client.post(url, {"priority": "0", "slack_webhook": SECRET})
    assert answer.status_code == 302, answer.content.decode()[:2000]
    assert Project.objects.get(pk=project.pk).slack_webhook == SECRET
    page = admin_client.get(url).content.decode()
    assert SECRET not in page and "https://hooks.slack.com/…CRET" in page


def test_the_workflow_page_timeline_shows_each_notification(client, ana, running, finish, smtp, notify_settings):
    switched_on(ana, email=True, slack=True)  # no webhook anywhere: Slack fails with its reason
    workflow = finish(running())
    client.force_login(ana)
    page = client.get(f"/workflows/{workflow.workflow_id}/").content.decode()
    assert 'id="notification-finished-email" data-status="sent"' in page
    assert "to ana@example.com" in page
    assert 'id="notification-finished-slack" data-status="failed"' in page and "no Slack webhook" in page
    assert Notification.objects.filter(workflow=workflow, status=Delivery.SENT).count() == 1
    assert Workflow.objects.get(pk=workflow.pk).status == "FAILED"
