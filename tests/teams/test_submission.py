"""Which project a workflow is charged to, through every door (API, CLI, self-service page)."""

from __future__ import annotations

import json
from io import StringIO

import pytest
import yaml
from django.core.management import call_command

from access.models import Role
from tests.factories import ProjectFactory, TokenFactory
from tests.teams.conftest import api, member, spec
from workflows.models import Workflow

SUBMIT = "/api/pool/batch/workflow"


def submit(user, name: str, query: str = ""):
    return api(user).post(f"{SUBMIT}{query}", spec(name), format="json")


@pytest.mark.django_db
def test_no_project_is_allowed_and_recorded_as_none(pool, alice):
    response = submit(alice, "free")
    assert response.status_code == 200 and response.json()["project"] is None
    assert Workflow.objects.get(workflow_id="free-1").project is None
    assert api(alice).get("/api/workflow/free-1").json()["project"] is None


@pytest.mark.django_db
def test_the_only_project_is_charged(pool, alice, vision):
    member(alice, vision)
    response = submit(alice, "mine")
    assert response.status_code == 200 and response.json()["project"] == "vision"
    assert Workflow.objects.get(workflow_id="mine-1").project == vision
    assert api(alice).get("/api/workflow/mine-1").json()["project"] == "vision"
    assert api(alice).get("/api/workflow").json()["workflows"][0]["project"] == "vision"


@pytest.mark.django_db
def test_several_projects_need_a_choice(pool, alice, vision, speech):
    member(alice, vision, speech)
    refused = submit(alice, "which")
    assert refused.status_code == 400
    assert refused.json() == {
        "code": "project_required",
        "field": "project",
        "value": None,
        "choices": ["speech", "vision"],
        "reason": "you belong to several projects (speech, vision); name the one to charge with project=<name>",
        "error_code": "USER",
        "message": "project: you belong to several projects (speech, vision); "
        "name the one to charge with project=<name>",
    }
    assert not Workflow.objects.filter(name="which").exists()
    chosen = submit(alice, "which", "?project=speech")
    assert chosen.status_code == 200 and chosen.json()["project"] == "speech"
    dry = submit(alice, "which", "?project=vision&dry_run=true")
    assert dry.json()["status"] == "DRY_RUN" and dry.json()["project"] == "vision"


@pytest.mark.django_db
def test_a_named_project_must_exist_and_be_yours(pool, alice, vision, speech, team_admin):
    member(alice, vision)
    unknown = submit(alice, "x", "?project=nope").json()
    assert unknown["code"] == "unknown_project" and unknown["field"] == "project" and unknown["value"] == "nope"
    assert unknown["reason"] == "no project named 'nope'; your projects: vision"
    other = submit(alice, "x", "?project=speech")
    assert other.status_code == 403 and other.json()["field"] == "project"
    assert "is not a member of project speech (its members hold role osmo-speech)" in other.json()["reason"]
    assert submit(team_admin, "ops", "?project=speech").json()["project"] == "speech"  # admins charge any


@pytest.mark.django_db
def test_a_token_without_the_project_role_charges_nothing(pool, alice, vision):
    member(alice, vision)
    token = TokenFactory(user=alice, roles=list(Role.objects.filter(name__in=["osmo-batch", "osmo-user"])))
    client = api()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token.secret}")
    response = client.post(SUBMIT, spec("tok"), format="json")
    assert response.status_code == 200 and response.json()["project"] is None


@pytest.mark.django_db
def test_cli_submit_and_show_name_the_project(pool, alice, vision, speech, tmp_path):
    member(alice, vision, speech)
    path = tmp_path / "w.yaml"
    path.write_text(yaml.safe_dump(spec("cli")))
    out = StringIO()
    call_command(
        "workflow",
        "submit",
        str(path),
        "--pool",
        "batch",
        "--user",
        "alice",
        "--project",
        "vision",
        "--format",
        "json",
        stdout=out,
        stderr=StringIO(),
    )
    assert json.loads(out.getvalue())["project"] == "vision"
    shown = StringIO()
    call_command("workflow", "show", "cli-1", stdout=shown)
    assert "project: vision" in shown.getvalue()


@pytest.mark.django_db
def test_self_service_page_charges_and_shows_the_project(client, pool, alice, vision, speech):
    member(alice, vision, speech)
    client.force_login(alice)
    text = yaml.safe_dump(spec("page"))
    refused = client.post("/pools/batch/submit/", {"spec": text, "priority": "NORMAL", "project": ""})
    assert refused.status_code == 400 and b"several projects (speech, vision)" in refused.content
    done = client.post("/pools/batch/submit/", {"spec": text, "priority": "NORMAL", "project": "speech"})
    assert done.status_code == 302, done.content.decode()[:500]
    assert Workflow.objects.get(workflow_id="page-1").project.name == "speech"
    assert b"project speech" in client.get("/workflows/page-1/").content


@pytest.mark.django_db
def test_admin_workflow_list_shows_projects_in_constant_queries(client, team_admin, pool, alice):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from tests.factories import WorkflowFactory

    client.force_login(team_admin)
    WorkflowFactory(pool=pool, submitted_by=alice, project=ProjectFactory())
    client.get("/admin/workflows/workflow/")
    with CaptureQueriesContext(connection) as few:
        client.get("/admin/workflows/workflow/")
    for _ in range(6):
        WorkflowFactory(pool=pool, submitted_by=alice, project=ProjectFactory())
    with CaptureQueriesContext(connection) as many:
        page = client.get("/admin/workflows/workflow/")
    assert page.status_code == 200 and b"project-" in page.content
    assert len(few) == len(many)


@pytest.mark.django_db
def test_charge_projects_charges_past_workflows_unambiguously(pool, alice, carol, bob):
    from tests.factories import WorkflowFactory

    old = {user.username: WorkflowFactory(pool=pool, submitted_by=user) for user in (alice, carol, bob)}
    vision, speech = ProjectFactory(name="vision"), ProjectFactory(name="speech")
    member(alice, vision)
    member(carol, vision, speech)
    out = StringIO()
    call_command("workflow", "charge-projects", stdout=out)
    assert out.getvalue().strip() == "1 workflow charged to their submitter's project"
    charged = {name: Workflow.objects.get(pk=w.pk).project for name, w in old.items()}
    assert charged == {"alice": vision, "carol": None, "bob": None}
