"""`/api/teams/…` and the admin: who sees and creates what, the error envelope, constant query counts."""

from __future__ import annotations

import pytest
import yaml
from django.db import connection
from django.test.utils import CaptureQueriesContext

from access.models import Role
from teams.models import Department, Project
from tests.factories import DepartmentFactory, ProjectFactory, UserFactory
from tests.teams.conftest import api, member

PROJECTS, DEPARTMENTS = "/api/teams/projects", "/api/teams/departments"


@pytest.mark.django_db
def test_admins_see_everything_members_their_own_outsiders_nothing(team_admin, vision, speech):
    ana = member(UserFactory(username="ana"), vision)
    outsider = UserFactory(username="olaf")
    assert [p["name"] for p in api(team_admin).get(PROJECTS).json()["projects"]] == ["speech", "vision"]
    mine = api(ana).get(PROJECTS).json()["projects"]
    assert mine == [
        {
            "name": "vision",
            "department": "research",
            "description": "test project",
            "role": "osmo-vision",
            "idp_groups": ["osmo-vision"],
            "member_count": 1,
            "priority": 0,
            "created_at": mine[0]["created_at"],
        }
    ]
    assert api(outsider).get(PROJECTS).json() == {"projects": []}
    assert api(ana).get(DEPARTMENTS).json()["departments"][0]["projects"] == ["vision"]
    assert api(outsider).get(DEPARTMENTS).json() == {"departments": []}
    assert api().get(PROJECTS).status_code == 401


@pytest.mark.django_db
def test_detail_lists_members_and_hides_other_teams(team_admin, vision, speech):
    ana = member(UserFactory(username="ana"), vision)
    detail = api(ana).get(f"{PROJECTS}/vision").json()
    assert detail["members"] == ["ana"] and detail["member_count"] == 1
    hidden, unknown = api(ana).get(f"{PROJECTS}/speech"), api(ana).get(f"{PROJECTS}/nope")
    assert hidden.status_code == unknown.status_code == 404
    assert hidden.json()["reason"] == "no project named 'speech'" and hidden.json()["code"] == "project_not_found"
    assert api(team_admin).get(f"{DEPARTMENTS}/research").json()["projects"] == ["speech", "vision"]
    assert api(ana).get(f"{DEPARTMENTS}/other").status_code == 404


@pytest.mark.django_db
def test_admins_create_others_may_not(team_admin):
    client = api(team_admin)
    assert client.post(DEPARTMENTS, {"name": "research"}, format="json").status_code == 201
    created = client.post(
        PROJECTS, {"name": "vision", "department": "research", "idp_groups": ["vision-users"]}, format="json"
    )
    assert created.status_code == 201, created.json()
    assert created.json()["role_created"] is True and created.json()["idp_groups"] == ["osmo-vision", "vision-users"]
    assert Role.objects.get(name="osmo-vision").external_roles == ["vision-users"]
    duplicate = client.post(PROJECTS, {"name": "vision", "department": "research"}, format="json")
    assert duplicate.status_code == 409 and duplicate.json()["code"] == "exists"
    bad = client.post(PROJECTS, {"name": "9x", "department": "research"}, format="json").json()
    assert bad["field"] == "name" and bad["value"] == "9x" and "start with a letter" in bad["reason"]
    missing = client.post(PROJECTS, {"name": "nlp"}, format="json").json()
    assert missing["field"] == "department" and missing["code"] == "invalid"
    ana = UserFactory(username="ana")
    refused = api(ana).post(DEPARTMENTS, {"name": "ops"}, format="json")
    assert refused.status_code == 403 and refused.json()["value"] == "config/team"
    assert not Department.objects.filter(name="ops").exists()


@pytest.mark.django_db
def test_list_query_count_does_not_grow_with_rows(team_admin, research):
    client = api(team_admin)
    ProjectFactory(department=research)
    client.get(PROJECTS)  # warm up
    with CaptureQueriesContext(connection) as few:
        assert client.get(PROJECTS).status_code == 200
    with CaptureQueriesContext(connection) as few_departments:
        client.get(DEPARTMENTS)
    for _ in range(6):
        department = DepartmentFactory()
        member(UserFactory(), ProjectFactory(department=department), ProjectFactory(department=department))
    with CaptureQueriesContext(connection) as many:
        assert len(client.get(PROJECTS).json()["projects"]) == 13
    with CaptureQueriesContext(connection) as many_departments:
        client.get(DEPARTMENTS)
    assert len(few) == len(many) <= 3
    assert len(few_departments) == len(many_departments) <= 4


@pytest.mark.django_db
def test_openapi_schema_documents_the_teams_endpoints(admin_api):
    paths = yaml.safe_load(admin_api.get("/api/schema/").content)["paths"]
    assert {
        "/api/teams/projects",
        "/api/teams/projects/{name}",
        "/api/teams/projects/{name}/history",
        "/api/teams/departments",
        "/api/teams/departments/{name}",
    } <= set(paths)
    assert "project" in {p["name"] for p in paths["/api/pool/{pool}/workflow"]["post"]["parameters"]}


# --- admin -----------------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_admin_changelist_query_count_is_constant(client, team_admin, research):
    client.force_login(team_admin)
    ProjectFactory(department=research)
    client.get("/admin/teams/project/")
    with CaptureQueriesContext(connection) as few:
        assert client.get("/admin/teams/project/").status_code == 200
    for _ in range(8):
        member(UserFactory(), ProjectFactory(department=research))
    with CaptureQueriesContext(connection) as many:
        page = client.get("/admin/teams/project/")
    assert page.status_code == 200 and b"osmo-project" in page.content
    assert len(few) == len(many)
    assert client.get("/admin/teams/department/").status_code == 200


@pytest.mark.django_db
def test_admin_adds_a_project_through_the_service_and_shows_it_read_only(client, team_admin, research):
    client.force_login(team_admin)
    response = client.post(
        "/admin/teams/project/add/",
        {"name": "vision", "department": research.pk, "description": "eyes", "idp_groups": "vision-users"},
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    project = Project.objects.get(name="vision")
    assert project.role.name == "osmo-vision" and project.role.external_roles == ["vision-users"]
    page = client.get(f"/admin/teams/project/{project.pk}/change/")
    assert page.status_code == 200 and b"osmo-vision" in page.content and b'name="description"' not in page.content
    assert b'name="priority"' in page.content  # the one field a project changes here (tests/teams/test_priority.py)
    refused = client.post("/admin/teams/project/add/", {"name": "admin", "department": research.pk})
    assert refused.status_code == 200 and b"built-in role" in refused.content
    added = client.post("/admin/teams/department/add/", {"name": "ops", "description": "Operations"})
    assert added.status_code == 302 and Department.objects.filter(name="ops").exists()


@pytest.mark.django_db
def test_researchers_do_not_get_the_team_admin(client, vision):
    client.force_login(member(UserFactory(username="ana"), vision))
    assert client.get("/admin/teams/project/").status_code == 302  # to the self-service home
