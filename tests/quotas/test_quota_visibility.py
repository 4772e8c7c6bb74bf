"""Whose quotas a principal sees (issue #31 point 6; docs/access.md "Quota visibility"), at every door.

Before: the quota API showed every team's name and figures to any pool member while the teams API answered
404 for the same teams. Now a researcher sees their own projects, their departments and the node pools'
totals; other teams only those with `config:Read` on `config/node_pool` (admins), or everyone when an admin
sets QUOTA_TEAMS_VISIBLE. The `quota` CLI (an operator's tool) shows every team.
"""

from __future__ import annotations

import json

import pytest
from django.core.management import base
from django.test import Client
from rest_framework.test import APIClient

from access.services import roles
from pools.models import Pool
from quotas.services import quotas
from teams.quota_visibility import OTHER_PROJECT
from tests.clirun import run_as_cli
from tests.factories import RoleFactory, UserFactory, WorkflowFactory
from tests.quotas.conftest import CLI

URL = "/api/quotas/node_pools"
NODE_POOLS = ("h100", "a100", "sim-default")
EVERY_PROJECT, EVERY_DEPARTMENT = {"vision", "speech", "infer"}, {"research", "ops"}


def api(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def person(name: str, *role_names: str):
    user = UserFactory(username=name)
    roles.update_user_roles(user, add=["osmo-user", *role_names], actor=CLI)
    return user


@pytest.fixture
def people(carved, teams, admin_user):
    roles.ensure_builtin_roles()
    RoleFactory(
        name="quota-reader",
        policies=[{"effect": "Allow", "actions": ["config:Read"], "resources": ["config/node_pool"]}],
    )
    quotas.set_quota(None, "h100", "department", "research", "gpu", deserved=16)
    quotas.set_quota(None, "h100", "project", "vision", "gpu", deserved=8)
    quotas.set_quota(None, "h100", "project", "speech", "gpu", deserved=4)
    quotas.set_quota(None, "a100", "department", "ops", "gpu", deserved=8)
    quotas.set_quota(None, "a100", "project", "infer", "gpu", deserved=8)
    return {
        "rita": person("rita", teams["vision"].role.name),  # a researcher in vision (department research)
        "sam": person("sam", teams["speech"].role.name, teams["infer"].role.name),  # in two departments
        "nora": person("nora"),  # in no project
        "quinn": person("quinn", "quota-reader"),
        "admin": admin_user,
    }


def named_in(detail: dict) -> tuple[set[str], set[str]]:
    """(projects, departments) a node pool's detail names anywhere."""
    projects = {row["project"] for row in detail["projects"]}
    projects |= {name for department in detail["departments"] for name in department["projects"]}
    return projects, {department["name"] for department in detail["departments"]}


def test_a_researcher_sees_their_project_their_department_and_the_totals(people):
    rita = api(people["rita"])
    h100 = rita.get(f"{URL}/h100").json()
    assert [d["name"] for d in h100["departments"]] == ["research"]
    assert h100["departments"][0]["projects"] == ["vision"]  # not speech, in the same department
    assert h100["departments"][0]["quotas"]["gpu"]["deserved"] == 16  # the department's numbers
    assert {row["project"] for row in h100["projects"]} == {"vision"}
    assert (h100["deserved"]["gpu"], h100["capacity"]["gpu"]) == (16, 32)  # the node pool's totals
    assert "speech" not in json.dumps(h100)

    a100 = rita.get(f"{URL}/a100").json()
    assert named_in(a100) == ({"vision"}, {"research"})  # her own teams, with no quota there
    assert {row["deserved"] for row in a100["projects"]} == {0}
    assert a100["deserved"]["gpu"] == 8 and a100["managed"]
    assert "infer" not in json.dumps(a100) and '"ops"' not in json.dumps(a100)


@pytest.mark.parametrize("who", ["rita", "sam", "nora"])
def test_the_quota_api_names_no_team_the_teams_api_hides(people, who):
    """The invariant, per principal and node pool: a name in the quota API is a 200 in the teams API, and
    each team the teams API shows that has quotas in the node pool is in the quota API."""
    client = api(people[who])
    visible_projects = {p["name"] for p in client.get("/api/teams/projects").json()["projects"]}
    visible_departments = {d["name"] for d in client.get("/api/teams/departments").json()["departments"]}
    for node_pool in NODE_POOLS:
        projects, departments = named_in(client.get(f"{URL}/{node_pool}").json())
        assert projects <= visible_projects and departments <= visible_departments
        for name in projects:
            assert client.get(f"/api/teams/projects/{name}").status_code == 200
        everything = named_in(api(people["admin"]).get(f"{URL}/{node_pool}").json())
        assert projects == everything[0] & visible_projects
        assert departments == everything[1] & visible_departments


@pytest.mark.parametrize("who", ["quinn", "admin"])
def test_a_right_to_read_node_pool_configs_shows_every_team(people, who):
    projects, departments = set(), set()
    for node_pool in NODE_POOLS:
        named = named_in(api(people[who]).get(f"{URL}/{node_pool}").json())
        projects, departments = projects | named[0], departments | named[1]
    assert (projects, departments) == (EVERY_PROJECT, EVERY_DEPARTMENT)


def test_an_admin_can_show_every_team_to_pool_members(people, settings):
    settings.QUOTA_TEAMS_VISIBLE = True
    h100 = api(people["nora"]).get(f"{URL}/h100").json()
    assert named_in(h100) == (EVERY_PROJECT, EVERY_DEPARTMENT)


def test_the_command_line_is_the_operators_and_shows_every_team(people, capsys, monkeypatch):
    monkeypatch.setattr(base.connections, "close_all", lambda: None)  # keep the test's transaction
    code, out, _ = run_as_cli(capsys, "quotas", "quota", "show", "h100", "--format", "json")
    assert code == 0 and named_in(json.loads(out)) == (EVERY_PROJECT, EVERY_DEPARTMENT)


# --- a preemption names the workflow and project it was for --------------------------------------------------

REASON = {
    "code": "RECLAIMED",
    "preemptor": "train-7",
    "preemptor_project": "vision",
    "count": 1,
    "text": "preempted: project speech was using 12 GPUs over quota; reclaimed for workflow train-7 of project "
    "vision, which is within its guaranteed quota",
}


@pytest.fixture
def preempted(people, teams):
    return WorkflowFactory(
        pool=Pool.objects.get(name="train"),
        project=teams["speech"],
        submitted_by=people["sam"],
        node_pool="h100",
        status="FAILED_PREEMPTED",
        preemption=REASON,
    )


def test_the_workflow_api_leaves_out_a_preemptor_the_viewer_may_not_see(people, preempted):
    seen = api(people["sam"]).get(f"/api/workflow/{preempted.workflow_id}").json()["preemption"]
    assert seen == {"code": "RECLAIMED", "count": 1, "text": OTHER_PROJECT}
    full = api(people["admin"]).get(f"/api/workflow/{preempted.workflow_id}").json()["preemption"]
    assert full == REASON


def test_the_workflow_pages_leave_out_a_preemptor_the_viewer_may_not_see(people, preempted):
    client = Client()
    client.force_login(people["sam"])
    for url in (f"/workflows/{preempted.workflow_id}/", "/workflows/"):
        page = client.get(url).content.decode()
        assert OTHER_PROJECT in page and "train-7" not in page and "vision" not in page


def test_the_pool_page_quota_box_shows_only_the_viewers_projects(people):
    client = Client()
    client.force_login(people["rita"])
    page = client.get("/pools/train/").content.decode()
    assert 'data-project="vision"' in page
    assert 'data-project="speech"' not in page and "infer" not in page
