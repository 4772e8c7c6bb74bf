"""The admin's quota grid: departments and projects × resources; saving writes every team that changed as one
NODE_POOL revision; a refusal is shown on its cell in the grid's words and nothing is written; a reader sees it
read-only and may not save; constant queries; the list links each node pool to its grid and says whether it is
managed."""

from __future__ import annotations

from django.urls import reverse

from access.services import roles
from configs import revisions
from quotas.models import NodePool, Quota
from quotas.services import quotas
from tests.factories import ProjectFactory, RoleFactory, UserFactory
from tests.queries import assert_constant_queries
from tests.quotas.conftest import CLI


def grid_url(name: str = "h100") -> str:
    return reverse("admin:quotas_nodepool_quotas", args=[NodePool.objects.get(name=name).pk])


def row(team: str, resource: str = "gpu") -> tuple:
    field = "department__name" if team in ("research", "ops") else "project__name"
    found = Quota.objects.get(node_pool__name="h100", resource=resource, **{field: team})
    return found.deserved, found.limit, found.weight


def cell(kind: str, team: str, resource: str, deserved: str, limit: str = "", weight: str = "1") -> dict:
    prefix = f"{kind}:{team}:{resource}:"
    return {f"{prefix}deserved": deserved, f"{prefix}limit": limit, f"{prefix}weight": weight}


def test_the_grid_shows_every_team_grouped_by_department(carved, teams, admin_client):
    quotas.set_quota(None, "h100", "department", "research", "memory", deserved="1Ti")
    page = admin_client.get(grid_url())
    assert page.status_code == 200
    text = page.content.decode()
    order = [text.index(f"{kind} {name}</td>") for kind, name in (
        ("department", "ops"), ("project", "infer"), ("department", "research"), ("project", "speech"),
        ("project", "vision"),
    )]  # fmt: skip
    assert order == sorted(order)
    assert 'name="department:research:memory:deserved" value="1Ti"' in text
    assert 'name="project:vision:gpu:limit" value=""' in text
    assert "Save quotas" in text


def test_saving_writes_every_changed_team_as_one_revision(carved, teams, admin_client):
    before = revisions.history("NODE_POOL", "h100")[0].revision
    form = {
        **cell("department", "research", "gpu", "16"),
        **cell("project", "vision", "gpu", "8", "12", "2"),
        **cell("project", "speech", "gpu", "4"),
        **cell("project", "infer", "gpu", "0"),  # unchanged: not in the revision
        **cell("department", "research", "memory", "1Ti"),
    }
    answer = admin_client.post(grid_url(), form, follow=True)
    assert answer.status_code == 200
    assert f"Quotas of h100 saved: 3 team(s) changed, one revision (r{before + 1})." in answer.content.decode()
    history = revisions.history("NODE_POOL", "h100")
    assert history[0].revision == before + 1
    assert history[0].description == (
        "quotas in h100: department research gpu deserved=16 limit=None weight=1, "
        f"memory deserved={2**40} limit=None weight=1; project speech gpu deserved=4 limit=None weight=1; "
        "project vision gpu deserved=8 limit=12 weight=2"
    )
    assert history[0].author_name == "root-admin (admin)"
    assert row("research") == (16, None, 1) and row("vision") == (8, 12, 2) and row("speech") == (4, None, 1)
    # lowering a department and its projects together: the document is checked as a whole, in no order
    form = {**cell("department", "research", "gpu", "6"), **cell("project", "vision", "gpu", "2", "", "2")}
    assert admin_client.post(grid_url(), {**form, "change_description": "spring plan"}).status_code == 302
    assert row("research") == (6, None, 1) and row("vision") == (2, None, 2)
    assert revisions.history("NODE_POOL", "h100")[0].description == (
        "quotas in h100: department research gpu deserved=6 limit=None weight=1;"
        " project vision gpu deserved=2 limit=None weight=2; spring plan"
    )
    assert revisions.history("NODE_POOL", "h100")[0].revision == before + 2
    # one team: the revision says it as `quota set` does
    assert admin_client.post(grid_url(), cell("project", "speech", "gpu", "3")).status_code == 302
    assert revisions.history("NODE_POOL", "h100")[0].description == (
        "quota of project speech in h100: gpu deserved=3 limit=None weight=1"
    )
    too_long = admin_client.post(grid_url(), {**cell("project", "vision", "gpu", "3"), "change_description": "x" * 501},
                                 follow=True)  # fmt: skip
    assert "the change description has 501 characters, at most 500" in too_long.content.decode()
    assert row("vision") == (2, None, 2)  # nothing written


def test_refusals_are_shown_on_their_cells_and_nothing_is_written(carved, teams, admin_client):
    quotas.set_quota(None, "h100", "department", "research", "gpu", deserved=8)
    before = revisions.history("NODE_POOL", "h100")[0].revision
    form = {
        **cell("project", "vision", "gpu", "4", "2"),  # limit below deserved
        **cell("project", "speech", "memory", "-1Gi"),
        **cell("department", "ops", "cpu", "2", weight="heavy"),
    }
    page = admin_client.post(grid_url(), form)
    assert page.status_code == 200
    text = page.content.decode()
    assert "project vision, GPU limit: is below deserved (4)" in text
    assert "project speech, memory deserved: must not be negative (you entered &#x27;-1Gi&#x27;)" in text
    assert "department ops, CPU weight: must be a whole number, 0 or more" in text
    assert 'name="project:vision:gpu:limit" value="2"' in text  # what was entered stays in the grid
    # a write the department rule refuses: the department's cell says so, and the other team is not saved
    page = admin_client.post(
        grid_url(), {**cell("project", "vision", "gpu", "12"), **cell("department", "ops", "gpu", "2")}
    )
    text = page.content.decode()
    assert "department research, GPU deserved: department research&#x27;s deserved gpu (8) is below" in text
    assert revisions.history("NODE_POOL", "h100")[0].revision == before
    assert row("vision") == (0, None, 1) and row("ops") == (0, None, 1)


def test_readers_see_the_grid_read_only_and_may_not_save(carved, teams, client):
    RoleFactory(
        name="quota-reader",
        policies=[{"effect": "Allow", "actions": ["config:Read"], "resources": ["config/node_pool"]}],
    )
    reader = UserFactory(username="reader", is_staff=True)
    roles.update_user_roles(reader, add=["quota-reader"], actor=CLI)
    client.force_login(reader)
    page = client.get(grid_url())
    assert page.status_code == 200
    text = page.content.decode()
    assert "disabled" in text and "Save quotas" not in text
    refused = client.post(grid_url(), cell("project", "vision", "gpu", "1"), follow=True)
    assert "may not change quotas" in refused.content.decode()
    assert row("vision") == (0, None, 1)


def test_the_grid_takes_constant_queries(carved, teams, admin_client):
    url = grid_url()

    def grow():
        for index in range(4):
            ProjectFactory(name=f"more-{index}", department=teams["ops"])

    assert_constant_queries(lambda: admin_client.get(url), grow)


def test_the_list_links_each_node_pool_to_its_grid_and_says_managed(carved, teams, admin_client):
    quotas.set_quota(None, "h100", "department", "research", "gpu", deserved=40)
    page = admin_client.get(reverse("admin:quotas_nodepool_changelist"))
    text = page.content.decode()
    assert grid_url("h100") in text and grid_url("sim-default") in text
    assert "40 / 32" in text and "over-committed: gpu" in text
