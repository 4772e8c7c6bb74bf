"""A project's priority at every door (issue #30 point 4): the CLI (`team update --priority`), REST (`PATCH
/api/teams/projects/NAME`), the admin's project page; bounded to -100…100, bad values refused with field, value
and reason and nothing changed; every change in the project's history (`team history`, `…/history`), and the
admission order and KAI queue priority follow it."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from access.services import audit
from teams import services
from teams.errors import ProjectNotFound, TeamInvalid
from teams.models import Project
from tests.factories import DepartmentFactory, ProjectFactory, UserFactory
from tests.teams.conftest import api, member

pytestmark = pytest.mark.django_db

PROJECTS = "/api/teams/projects"


def team(*arguments: str) -> str:
    out = StringIO()
    call_command("team", *arguments, stdout=out)
    return out.getvalue()


def priority_of(name: str) -> int:
    return Project.objects.get(name=name).priority


# --- the service -----------------------------------------------------------------------------------------


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(
    value=st.integers(min_value=-(2**40), max_value=2**40)
    | st.booleans()
    | st.text(alphabet="+-0123456789² x", max_size=6)
    | st.none()
)
def test_a_priority_is_kept_exactly_when_it_is_an_integer_in_bounds(vision, value):
    before = priority_of("vision")
    in_bounds = isinstance(value, int) and not isinstance(value, bool) and -100 <= value <= 100
    try:
        services.update_project("vision", audit.SYSTEM_CLI, priority=value)
    except TeamInvalid as refused:
        assert not in_bounds and refused.field == "priority" and refused.value == value
        assert "from -100 to 100" in refused.reason
        assert priority_of("vision") == before
    else:
        expected = before if value is None else int(value)
        assert (in_bounds or value is None or isinstance(value, str)) and priority_of("vision") == expected


def test_a_change_is_one_audit_event_and_no_change_none(vision):
    services.update_project("vision", audit.SYSTEM_CLI, priority=7)
    services.update_project("vision", audit.SYSTEM_CLI, priority=7)  # the same value: nothing to record
    services.update_project("vision", audit.SYSTEM_CLI, priority=-3, description="eyes")
    changes = [event["changes"] for event in services.project_history("vision") if event["action"] == "team.update"]
    assert changes == [{"priority": [7, -3], "description": ["test project", "eyes"]}, {"priority": [0, 7]}]


# --- CLI -------------------------------------------------------------------------------------------------


def test_cli_sets_shows_lists_and_tells_the_history(vision, speech):
    assert team("update", "vision", "--priority", "5") == "project vision: priority 5\n"
    assert "priority: 5" in team("show", "project", "vision")
    rows = {line.split()[0]: line.split()[3] for line in team("list").splitlines()[1:]}
    assert rows == {"speech": "0", "vision": "5"}
    team("update", "vision", "--priority", "-2")
    history = json.loads(team("history", "vision", "--format", "json"))["history"]
    assert [e["changes"] for e in history if e["action"] == "team.update"] == [
        {"priority": [5, -2]},
        {"priority": [0, 5]},
    ]
    assert [e["source"] for e in history if e["action"] == "team.update"] == ["cli", "cli"]
    assert "priority 5 → -2" in team("history", "vision").splitlines()[0]


@pytest.mark.parametrize("value", ["101", "-101", "high", "1.5"])
def test_cli_refuses_a_bad_priority(vision, value):
    with pytest.raises(TeamInvalid) as refused:
        team("update", "vision", "--priority", value)
    assert (refused.value.field, refused.value.value) == ("priority", value)
    assert f"error: {refused.value}" == (
        f"error: priority: must be an integer from -100 to 100 (higher is served first for over-quota capacity; 0 "
        f"is the default) (value: {value!r})"
    )
    assert priority_of("vision") == 0


def test_cli_refuses_an_update_that_changes_nothing_or_an_unknown_project(vision):
    with pytest.raises(TeamInvalid, match="give what to change"):
        team("update", "vision")
    with pytest.raises(ProjectNotFound, match="no project named 'nope'"):
        team("update", "nope", "--priority", "1")


# --- REST ------------------------------------------------------------------------------------------------


def test_rest_team_admin_sets_it_and_reads_the_history(team_admin, vision):
    client = api(team_admin)
    answer = client.patch(f"{PROJECTS}/vision", {"priority": 12}, format="json")
    assert answer.status_code == 200 and answer.json()["priority"] == 12, answer.json()
    assert client.get(f"{PROJECTS}/vision").json()["priority"] == 12
    history = client.get(f"{PROJECTS}/vision/history").json()["history"]
    assert history[0]["changes"] == {"priority": [0, 12]} and history[0]["actor"] == "tess"
    assert history[0]["source"] == "api"


@pytest.mark.parametrize("value", [101, -500, "x", True, None, [1]])
def test_rest_refuses_a_bad_priority_with_field_value_and_reason(team_admin, vision, value):
    answer = api(team_admin).patch(f"{PROJECTS}/vision", {"priority": value}, format="json")
    assert answer.status_code == 400, answer.json()
    error = answer.json()
    assert error["field"] == "priority" and error["reason"], error
    assert priority_of("vision") == 0


def test_rest_members_may_not_change_it_and_outsiders_do_not_see_it(vision, speech):
    ana = member(UserFactory(username="ana"), vision)
    refused = api(ana).patch(f"{PROJECTS}/vision", {"priority": 50}, format="json")
    assert refused.status_code == 403 and refused.json()["field"] == "department"
    assert api(ana).patch(f"{PROJECTS}/speech", {"priority": 50}, format="json").status_code == 404
    assert api(ana).get(f"{PROJECTS}/speech/history").status_code == 404
    assert priority_of("vision") == priority_of("speech") == 0


def test_rest_a_department_admin_changes_their_departments_projects_only(vision):
    ProjectFactory(name="pager", department=DepartmentFactory(name="ops"))
    dora = UserFactory(username="dora")
    services.add_department_admin("research", "dora", audit.SYSTEM_CLI)
    assert api(dora).patch(f"{PROJECTS}/vision", {"priority": 3}, format="json").status_code == 200
    assert api(dora).patch(f"{PROJECTS}/pager", {"priority": 3}, format="json").status_code == 404
    assert (priority_of("vision"), priority_of("pager")) == (3, 0)


# --- admin -----------------------------------------------------------------------------------------------


def test_admin_project_page_edits_the_priority_through_the_service(client, team_admin, vision):
    client.force_login(team_admin)
    url = f"/admin/teams/project/{vision.pk}/change/"
    page = client.get(url)
    assert page.status_code == 200 and b'name="priority"' in page.content and b'name="description"' not in page.content
    saved = client.post(url, {"priority": "9"})
    assert saved.status_code == 302, saved.content.decode()[:2000]
    assert priority_of("vision") == 9
    assert services.project_history("vision")[0]["changes"] == {"priority": [0, 9]}
    assert services.project_history("vision")[0]["source"] == "admin"
    refused = client.post(url, {"priority": "1000"})
    assert refused.status_code == 200 and b"from -100 to 100" in refused.content
    assert priority_of("vision") == 9


def test_admin_project_page_is_read_only_for_a_member(client, vision):
    ana = member(UserFactory(username="ana", is_staff=True), vision)
    client.force_login(ana)
    assert client.post(f"/admin/teams/project/{vision.pk}/change/", {"priority": "9"}).status_code in (302, 403)
    assert priority_of("vision") == 0
