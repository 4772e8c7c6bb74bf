"""The quota grid as Run:ai shows it: projects (under their departments) × node pools, each cell the deserved
GPUs opening to CPU, memory, limits and weights, each project with its priority; cells link to the node pool's
editable grid, projects to their page; read by whoever may read node pools; constant queries."""

from __future__ import annotations

import re

from django.urls import reverse

from access.services import roles
from configs import store
from quotas.models import NodePool
from quotas.services import quotas
from teams.models import Project
from tests.factories import DepartmentFactory, ProjectFactory, RoleFactory, UserFactory
from tests.queries import assert_constant_queries
from tests.quotas.conftest import CLI

URL = "/admin/quotas/nodepool/projects/"


def cells_of(text: str, row_id: str) -> list[str]:
    """The deserved GPUs a row shows, node pool by node pool."""
    row = re.search(rf'<tr[^>]*id="{row_id}">(.*?)</tr>', text, re.S).group(1)
    return re.findall(r'<summary class="cursor-pointer gpus">([^<]*)</summary>', row)


def test_projects_by_node_pools_with_deserved_gpus_priority_and_details(carved, teams, admin_client):
    quotas.set_quota(None, "h100", "department", "research", "gpu", deserved=16)
    quotas.set_quota(None, "h100", "department", "research", "cpu", deserved="64")
    quotas.set_quota(None, "h100", "project", "vision", "gpu", deserved=12, limit=16, weight=3)
    quotas.set_quota(None, "h100", "project", "vision", "cpu", deserved="32")
    quotas.set_quota(None, "a100", "department", "research", "gpu", deserved=4)
    quotas.set_quota(None, "a100", "project", "speech", "gpu", deserved=4)
    Project.objects.filter(name="vision").update(priority=7)
    page = admin_client.get(URL)
    assert page.status_code == 200
    text = page.content.decode()
    pools = [name for name in NodePool.objects.order_by("backend__name", "name").values_list("name", flat=True)]
    assert pools == ["a100", "h100", "sim-default"]
    headers = re.findall(r'href="/admin/quotas/nodepool/(\d+)/quotas/">([^<]+)</a>', text)
    assert [name for _, name in headers] == pools  # each column links to its node pool's grid
    assert cells_of(text, "department-research") == ["4", "16", "0"]
    assert cells_of(text, "project-vision") == ["0", "12", "0"]
    assert cells_of(text, "project-speech") == ["4", "0", "0"]
    assert cells_of(text, "project-infer") == ["0", "0", "0"]
    vision = re.search(r'<tr[^>]*id="project-vision">(.*?)</tr>', text, re.S).group(1)
    assert '<td class="text-right pr-4 priority">7</td>' in vision
    assert "GPU: deserved 12, limit 16, weight 3" in vision and "CPU: deserved 32, no limit, weight 1" in vision
    assert reverse("admin:teams_project_change", args=[teams["vision"].pk]) in vision
    order = [text.index(f'id="{row}"') for row in (
        "department-ops", "project-infer", "department-research", "project-speech", "project-vision",
    )]  # fmt: skip
    assert order == sorted(order)


def test_the_node_pool_grid_links_to_it(carved, teams, admin_client):
    page = admin_client.get(reverse("admin:quotas_nodepool_quotas", args=[NodePool.objects.get(name="h100").pk]))
    assert f'href="{URL}" id="projects-grid-link"' in page.content.decode()


def test_constant_queries_whatever_the_number_of_teams_and_node_pools(carved, teams, admin_client):
    admin_client.get(URL)

    def grow():
        department = DepartmentFactory(name="more")
        for index in range(6):
            ProjectFactory(name=f"more-{index}", department=department)
        for index in range(3):
            store.apply(
                "NODE_POOL",
                f"extra-{index}",
                {"backend": "sim", "selector": {"label": {"key": "x", "value": str(index)}}},
                CLI,
            )
            quotas.set_quota(None, f"extra-{index}", "department", "more", "gpu", deserved=0, limit=index + 1)

    assert_constant_queries(lambda: admin_client.get(URL), grow)
    assert cells_of(admin_client.get(URL).content.decode(), "project-more-0")[-3:] == ["0", "0", "0"]


def test_readers_see_it_and_researchers_do_not(carved, teams, client):
    reader = UserFactory(username="reader", is_staff=True)
    RoleFactory(
        name="node-pool-reader",
        policies=[{"effect": "Allow", "actions": ["config:Read"], "resources": ["config/node_pool"]}],
    )
    roles.update_user_roles(reader, add=["node-pool-reader"], actor=CLI)
    client.force_login(reader)
    assert client.get(URL).status_code == 200
    researcher = UserFactory(username="ana")
    client.force_login(researcher)
    assert client.get(URL).status_code in (302, 403)
