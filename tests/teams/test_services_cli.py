"""Departments and projects through the service and the `team` command: validation, the project's role
(created once, with a ROLE revision; an existing one linked untouched), show and list."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connections

from access.models import AuditEvent, Role
from access.services import roles
from configs.models import Revision
from portal.errors import DomainError
from teams import services
from teams.errors import DepartmentNotFound, TeamExists, TeamInvalid
from teams.models import Project
from tests.clirun import run_as_cli
from tests.factories import RoleFactory, UserFactory
from tests.teams.conftest import CLI, member


def team(*args: str) -> str:
    out = StringIO()
    call_command("team", *args, stdout=out, stderr=StringIO())
    return out.getvalue()


@pytest.mark.django_db
def test_create_project_creates_its_role_with_one_revision():
    team("create", "department", "research", "--description", "Research")
    data = json.loads(
        team(
            "create", "project", "vision", "--department", "research", "--idp-group", "vision-users", "--format", "json"
        )
    )
    assert data["role"] == "osmo-vision" and data["role_created"] is True
    assert data["idp_groups"] == ["osmo-vision", "vision-users"] and data["members"] == []
    role = Role.objects.get(name="osmo-vision")
    assert role.policies == [{"effect": "Allow", "actions": ["workflow:*"], "resources": ["pool/vision*"]}]
    assert role.external_roles == ["vision-users"]
    assert list(Revision.objects.filter(config_type="ROLE", name="osmo-vision").values_list("revision", flat=True)) == [
        1
    ]
    assert set(AuditEvent.objects.filter(action="team.create").values_list("target", flat=True)) == {
        "department/research",
        "project/vision",
    }


@pytest.mark.django_db
def test_an_existing_role_is_linked_and_its_policies_kept(research):
    policies = [{"effect": "Allow", "actions": ["workflow:*"], "resources": ["pool/shared-gpu"]}]
    roles.set_pool_role("osmo-speech", CLI)
    Role.objects.filter(name="osmo-speech").update(policies=policies)
    created = services.create_project("speech", "research", CLI)
    assert created.role_created is False
    assert created.project.role.policies == policies
    assert Revision.objects.filter(config_type="ROLE", name="osmo-speech").count() == 1  # nothing to write


@pytest.mark.django_db
def test_idp_groups_join_an_existing_roles_mapping(research):
    RoleFactory(name="osmo-audio", external_roles=["audio-old"])
    services.create_project("audio", "research", CLI, idp_groups=["audio-new", " audio-old "])
    assert Role.objects.get(name="osmo-audio").external_roles == ["audio-new", "audio-old"]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("name", "field", "reason"),
    [
        ("", "name", "a name is required"),
        ("9lives", "name", "must start with a letter"),
        ("bad name", "name", "must start with a letter"),
        ("a" * 124, "name", "longer than"),
        ("admin", "name", "built-in role (osmo-admin)"),
        ("user", "name", "built-in role (osmo-user)"),
    ],
)
def test_bad_project_names_are_refused_clearly(research, name, field, reason):
    before = Role.objects.count()
    with pytest.raises(DomainError) as caught:
        services.create_project(name, "research", CLI)
    assert caught.value.field == field and reason in caught.value.reason
    assert not Project.objects.exists() and Role.objects.count() == before


@pytest.mark.django_db
def test_unknown_department_duplicates_and_bad_groups(research, vision):
    with pytest.raises(DepartmentNotFound) as missing:
        services.create_project("nlp", "nowhere", CLI)
    assert missing.value.field == "department" and "create it first" in missing.value.reason
    with pytest.raises(TeamExists):
        services.create_project("vision", "research", CLI)
    with pytest.raises(TeamExists):
        services.create_department("research", CLI)
    with pytest.raises(TeamInvalid) as group:
        services.create_project("nlp", "research", CLI, idp_groups=["ok", " "])
    assert group.value.field == "idp_groups[1]"
    assert not Role.objects.filter(name="osmo-nlp").exists()


@pytest.mark.django_db
def test_cli_errors_are_one_line(research, capsys, monkeypatch):
    monkeypatch.setattr(connections, "close_all", lambda: None)  # run_from_argv closes them; the test needs its own
    code, out, err = run_as_cli(capsys, "teams", "team", "create", "project", "nlp")
    assert (code, out) == (1, "")
    assert err.strip() == "error: --department: a project belongs to a department: name it with --department"


@pytest.mark.django_db
def test_show_and_list(research, vision, speech):
    member(UserFactory(username="ana"), vision)
    shown = team("show", "project", "vision")
    assert "role: osmo-vision" in shown and "members (1): ana" in shown
    assert json.loads(team("show", "department", "research", "--format", "json"))["projects"] == ["speech", "vision"]
    listed = json.loads(team("list", "--format", "json"))["projects"]
    assert [(p["name"], p["member_count"]) for p in listed] == [("speech", 0), ("vision", 1)]
    table = team("list", "departments")
    assert table.splitlines()[1].startswith("research") and "speech, vision" in table
    assert team("list", "--department", "nowhere").splitlines()[1:] == []


@pytest.mark.django_db
def test_a_projects_role_cannot_be_deleted_under_it(vision):
    from configs import store
    from configs.errors import ConfigInUse

    with pytest.raises(ConfigInUse) as refused:
        store.delete("ROLE", "osmo-vision", CLI)
    assert "vision" in str(refused.value)
    assert Role.objects.filter(name="osmo-vision").exists()
