"""Department admins: an object right (`teams.manage_department`, django-guardian) decided only by
`access.policy`. An admin of department D sees D and its projects and creates projects in D, through the
API, the admin and the services alike; elsewhere they are refused (403, audited). Appointed by team
admins (CLI `team admins`, REST, the department's admin page)."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from access import actions, policy
from access.models import AuditEvent
from access.services import audit
from portal.errors import Conflict, DomainError, NotFound
from teams import services
from teams.models import Project
from tests.access.conftest import api as token_api
from tests.factories import DepartmentFactory, ProjectFactory, TokenFactory, UserFactory
from tests.teams.conftest import api, member

pytestmark = pytest.mark.django_db

PROJECTS, DEPARTMENTS = "/api/teams/projects", "/api/teams/departments"


@pytest.fixture
def ops(db):
    return DepartmentFactory(name="ops", description="Operations")


@pytest.fixture
def dora(research):
    """An admin of department research, appointed as a team admin does (audited)."""
    user = UserFactory(username="dora")
    services.add_department_admin("research", "dora", audit.SYSTEM_CLI)
    return user


def team(*arguments: str) -> str:
    out = StringIO()
    call_command("team", *arguments, stdout=out)
    return out.getvalue()


# --- creating projects -------------------------------------------------------------------------------------


def test_an_admin_of_d_creates_projects_in_d_only(dora, ops):
    created = api(dora).post(PROJECTS, {"name": "vision", "department": "research"}, format="json")
    assert created.status_code == 201, created.json()
    assert Project.objects.get(name="vision").department.name == "research"
    refused = api(dora).post(PROJECTS, {"name": "pager", "department": "ops"}, format="json")
    assert refused.status_code == 403
    body = refused.json()
    assert body["code"] == "forbidden" and body["field"] == "department" and body["value"] == "ops"
    assert body["reason"].startswith(
        "dora may not create projects in department ops (it takes a team admin or an admin of that department)"
    )
    assert (
        AuditEvent.objects.filter(
            action="access.denied", outcome="denied", target="config:Update on department/ops"
        ).count()
        == 1
    )
    assert not Project.objects.filter(name="pager").exists()
    # a department admin creates no departments
    assert api(dora).post(DEPARTMENTS, {"name": "lab"}, format="json").status_code == 403


def test_someone_administering_no_department_is_refused_before_any_lookup(research):
    olaf = UserFactory(username="olaf")
    refused = api(olaf).post(PROJECTS, {"name": "x", "department": "nowhere"}, format="json")
    assert refused.status_code == 403 and refused.json()["reason"].startswith("olaf may not create projects:")


# --- seeing ------------------------------------------------------------------------------------------------


def test_an_admin_sees_their_departments_projects_in_constant_queries(dora, ops, vision):
    ProjectFactory(name="pager", department=ops)
    client = api(dora)
    assert [p["name"] for p in client.get(PROJECTS).json()["projects"]] == ["vision"]
    assert client.get(DEPARTMENTS).json()["departments"][0]["projects"] == ["vision"]
    assert [d["name"] for d in client.get(DEPARTMENTS).json()["departments"]] == ["research"]
    assert client.get(f"{PROJECTS}/pager").status_code == 404
    assert client.get(f"{DEPARTMENTS}/ops").status_code == 404
    with CaptureQueriesContext(connection) as few:
        client.get(PROJECTS)
    for index in range(5):
        ProjectFactory(name=f"eyes-{index}", department=DepartmentFactory(name="research"))
        ProjectFactory(name=f"ops-{index}", department=ops)
    with CaptureQueriesContext(connection) as many:
        names = [p["name"] for p in client.get(PROJECTS).json()["projects"]]
    assert names == [*(f"eyes-{index}" for index in range(5)), "vision"]
    assert len(few) == len(many)


def test_membership_and_administration_add_up(dora, ops):
    pager = ProjectFactory(name="pager", department=ops)
    member(dora, pager)
    ProjectFactory(name="vision", department=DepartmentFactory(name="research"))
    assert [p.name for p in services.projects_visible_to(dora)] == ["pager", "vision"]
    assert [d.name for d in services.departments_visible_to(dora)] == ["ops", "research"]


def test_a_token_carries_no_object_rights(dora, vision):
    token = TokenFactory(user=dora)
    assert not policy.decide(token, actions.CONFIG_UPDATE, services.RESOURCE, obj=vision.department)
    assert token_api(secret=token.secret).get(PROJECTS).json() == {"projects": []}
    refused = token_api(secret=token.secret).post(PROJECTS, {"name": "x", "department": "research"}, format="json")
    assert refused.status_code == 403


def test_a_revocation_takes_effect_at_the_next_request(client, dora, vision):
    client.force_login(dora)
    assert client.get("/admin/teams/project/").status_code == 200
    assert [p["name"] for p in api(dora).get(PROJECTS).json()["projects"]] == ["vision"]
    services.remove_department_admin("research", "dora", audit.SYSTEM_CLI)
    assert client.get("/admin/teams/project/").status_code == 302  # no longer an admin of anything
    assert api(dora).get(PROJECTS).json() == {"projects": []}
    assert AuditEvent.objects.filter(
        action="access.object_right.revoke", target="admin of department research: dora"
    ).exists()


# --- the admin ---------------------------------------------------------------------------------------------


def test_an_admin_gets_the_console_with_only_their_department(client, dora, ops, vision):
    ProjectFactory(name="pager", department=ops)
    client.force_login(dora)
    assert client.get("/admin/").status_code == 200
    projects = client.get("/admin/teams/project/")
    assert projects.status_code == 200 and b"vision" in projects.content and b"pager" not in projects.content
    departments = client.get("/admin/teams/department/")
    assert b"research" in departments.content and b"Operations" not in departments.content
    assert client.get(f"/admin/teams/department/{ops.pk}/change/").status_code in (302, 404)
    assert client.get("/admin/pools/pool/").status_code == 403
    assert client.get("/admin/teams/department/add/").status_code == 403
    form = client.get("/admin/teams/project/add/")
    assert form.status_code == 200
    assert (
        f'value="{vision.department.pk}"'.encode() in form.content and f'value="{ops.pk}"'.encode() not in form.content
    )
    added = client.post("/admin/teams/project/add/", {"name": "eyes", "department": vision.department.pk})
    assert added.status_code == 302 and Project.objects.get(name="eyes").department.name == "research"
    elsewhere = client.post("/admin/teams/project/add/", {"name": "pager2", "department": ops.pk})
    assert elsewhere.status_code == 200 and b"Select a valid choice" in elsewhere.content
    assert not Project.objects.filter(name="pager2").exists()
    # appointing admins takes a team admin's role: an admin makes no more admins
    rights = f"/admin/teams/department/{vision.department.pk}/rights/"
    assert client.post(rights, {"right": 0, "username": "dora"}).status_code == 403


def test_the_admin_changelist_of_an_admin_is_constant_queries(client, dora, vision):
    client.force_login(dora)
    client.get("/admin/teams/project/")  # warm caches
    with CaptureQueriesContext(connection) as few:
        assert client.get("/admin/teams/project/").status_code == 200
    for index in range(6):
        member(UserFactory(), ProjectFactory(name=f"eyes-{index}", department=vision.department))
        ProjectFactory(name=f"elsewhere-{index}")
    with CaptureQueriesContext(connection) as many:
        page = client.get("/admin/teams/project/")
    assert b"eyes-5" in page.content and b"elsewhere-5" not in page.content
    assert len(few) == len(many)


def test_team_admins_appoint_admins_on_the_department_page(client, team_admin, research):
    UserFactory(username="dora")
    client.force_login(team_admin)
    rights = f"/admin/teams/department/{research.pk}/rights/"
    assert rights.encode() in client.get(f"/admin/teams/department/{research.pk}/change/").content
    assert client.get(rights).status_code == 200
    assert client.post(rights, {"right": 0, "username": "dora"}).status_code == 302
    assert services.department_admins("research") == ["dora"]
    assert AuditEvent.objects.filter(
        action="access.object_right.grant", target="admin of department research: dora"
    ).exists()
    assert client.get(rights).status_code == 200
    bad = client.post(rights, {"right": 7, "username": "dora"}, follow=True)
    assert b"no such object right" in bad.content  # never a 500


# --- the command line, REST and explain ----------------------------------------------------------------------


def test_team_admins_command(research):
    UserFactory(username="dora")
    assert team("admins", "add", "research", "dora") == (
        "dora is now an admin of department research\nadmins of department research: dora\n"
    )
    assert json.loads(team("admins", "list", "research", "--format", "json")) == {
        "department": "research",
        "admins": ["dora"],
    }
    with pytest.raises(Conflict, match="dora is already admin of research"):
        team("admins", "add", "research", "dora")
    with pytest.raises(NotFound, match="no user named 'nobody'"):
        team("admins", "add", "research", "nobody")
    with pytest.raises(NotFound, match="no department named 'nowhere'"):
        team("admins", "list", "nowhere")
    with pytest.raises(DomainError, match="name the user to add"):
        team("admins", "add", "research")
    assert json.loads(team("admins", "remove", "research", "dora", "--format", "json"))["admins"] == []
    with pytest.raises(Conflict, match="dora is not admin of research"):
        team("admins", "remove", "research", "dora")
    assert AuditEvent.objects.filter(action__startswith="access.object_right.").count() == 2


def test_admins_rest(team_admin, dora, vision):
    url = f"{DEPARTMENTS}/research/admins"
    assert api(team_admin).get(url).json() == {"department": "research", "admins": ["dora"]}
    assert api(dora).get(url).json()["admins"] == ["dora"]  # an admin sees their fellow admins
    ana = member(UserFactory(username="ana"), vision)
    assert api(ana).get(url).status_code == 403  # a member sees the department, not who runs it
    assert api(dora).post(url, {"username": "ana"}, format="json").status_code == 403
    added = api(team_admin).post(url, {"username": "ana"}, format="json")
    assert added.status_code == 201 and added.json()["admins"] == ["ana", "dora"]
    assert api(team_admin).delete(f"{url}/ana").status_code == 204
    again = api(team_admin).delete(f"{url}/ana")
    assert again.status_code == 409 and again.json()["field"] == "username"
    assert api(team_admin).get(f"{DEPARTMENTS}/nowhere/admins").status_code == 404


def test_explain_shows_a_department_admins_object_right(dora, ops):
    out = StringIO()
    call_command("access", "explain", "dora", "department/research", "--action", "config:Update", stdout=out)
    text = out.getvalue()
    assert text.startswith("ALLOWED: dora config:Update on department/research\n")
    assert (
        "object right: dora is admin (config:Read, config:Update) of department research "
        "(object right teams.manage_department)"
    ) in text
    out = StringIO()
    call_command(
        "access", "explain", "dora", "department/ops", "--action", "config:Update", "--format", "json", stdout=out
    )
    assert json.loads(out.getvalue())["allowed"] is False and "object_rights" not in json.loads(out.getvalue())
