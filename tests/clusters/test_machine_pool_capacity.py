"""Capacity now and at maximum (nodes, GPUs), the hourly cost of the node type and spot vs on-demand: the
service, the pool admin and the self-service catalog; list pages keep a constant number of queries."""

from __future__ import annotations

import html
import re
from decimal import Decimal

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from access.services import roles
from clusters.models import MachinePool
from configs import store
from configs.revisions import Actor
from pools.models import Pool
from pools.services import capacity_summary
from pools.services.machine_pool_capacity import growth
from pools.services.machine_pool_platforms import make_platform
from tests.clusters.conftest import CLI
from tests.factories import MachinePoolFactory, ProjectFactory, UserFactory
from tests.queries import assert_constant_queries

ADDITIONAL = "machine pool additional: m5.xlarge, 4 vCPU, 16 GiB; nodes 2 now, up to 5; on-demand, $0.192/h a node"
GPU_ZERO = (
    "machine pool gpu-zero: g4dn.xlarge, 1 × T4; nodes 0 now, up to 3; GPUs 0 now, up to 3; "
    "spot ≈ $0.18/h a node (estimate) vs on-demand $0.526/h, saving 66%; at most $0.526/h (the on-demand price)"
)


@pytest.fixture
def platforms(machine_pools):
    for name in ("additional", "ml-training", "gpu-zero"):
        make_platform(name, CLI, pool="rosa")
    return Pool.objects.get(name="rosa")


def test_each_platform_shows_its_machine_pool_now_and_at_maximum(platforms):
    grown = growth([platforms.pk], {platforms.backend_id})[platforms.pk]
    by_platform = {name: [m.text for m in g.machine_pools] for name, g in grown.platforms.items()}
    assert by_platform["additional"] == [ADDITIONAL]
    assert by_platform["gpu-zero"] == [GPU_ZERO]
    ml = grown.platforms["ml-training"].machine_pools[0]
    assert (ml.nodes_now, ml.nodes_max, ml.gpus_now, ml.gpus_max, ml.capacity_type) == (2, 3, 2, 3, "spot")
    assert ml.hourly_price == Decimal("0.526")
    assert grown.total.summary == "nodes 4 now, up to 11 · GPUs 2 now, up to 6"  # each machine pool once
    assert grown.as_dict()["platforms"]["gpu-zero"]["gpus"] == {"now": 0, "max": 3}
    assert grown.platforms["additional"].summary == "nodes 2 now, up to 5"  # no GPU type: no GPU figures


def test_a_spot_price_cap_and_a_fixed_pool(platforms):
    MachinePool.objects.filter(name="gpu-zero").update(max_price=Decimal("0.2"))
    MachinePool.objects.filter(name="additional").update(autoscaling=False, replicas=4)
    grown = growth([platforms.pk], {platforms.backend_id})[platforms.pk]
    assert (
        grown.platforms["gpu-zero"].machine_pools[0].cost
        == "spot ≈ $0.18/h a node (estimate) vs on-demand $0.526/h, saving 66%; at most $0.2/h"
    )
    assert grown.platforms["additional"].machine_pools[0].nodes_max == 4


def test_pools_without_machine_pools_cost_one_query(backend, django_assert_num_queries):
    store.apply("POOL", "plain", {"backend": "sim"}, CLI)
    pool = Pool.objects.get(name="plain")
    with django_assert_num_queries(1):
        assert growth([pool.pk], {pool.backend_id})[pool.pk].total.summary == ""


def grow(backend, start: int):
    """More machine pools, each with its platform: the list pages must not query per row."""

    def more():
        for index in range(start, start + 4):
            MachinePoolFactory(backend=backend, name=f"extra-{index}", instance_type="g5.xlarge")
            make_platform(f"extra-{index}", CLI, pool="rosa")
            store.apply("POOL", f"other-{index}", {"backend": "sim", "platforms": {"p": {}}}, CLI)

    return more


def test_pool_admin_shows_capacity_at_maximum_in_constant_queries(admin_client, platforms, backend):
    url = reverse("admin:pools_poolcapacity_changelist")
    page = admin_client.get(url).content.decode()
    assert "nodes 4 now, up to 11 · GPUs 2 now, up to 6" in page
    assert_constant_queries(lambda: admin_client.get(url), grow=grow(backend, 0))
    detail = admin_client.get(reverse("admin:pools_poolcapacity_change", args=[platforms.pk])).content.decode()
    assert GPU_ZERO.replace("×", "&times;") in detail or GPU_ZERO in detail


def test_the_catalog_shows_machine_pools_in_constant_queries(admin_client, platforms, backend):
    page = admin_client.get("/").content.decode()
    assert "Machine pools: nodes 4 now, up to 11 · GPUs 2 now, up to 6" in page
    assert GPU_ZERO in page and ADDITIONAL in page
    assert_constant_queries(lambda: admin_client.get("/"), grow=grow(backend, 10))


def test_the_capacity_summary_keeps_the_lines_the_catalog_prints(admin_client, platforms):
    """The periodic capacity summary keeps what the catalog prints of the machine pools: the same lines as computing
    them now, read with the figures in one query; a pool without a summary has them computed for the request."""
    ids = list(Pool.objects.order_by("name").values_list("pk", flat=True))
    backends = set(Pool.objects.values_list("backend_id", flat=True))
    live = capacity_summary.totals(ids, backend_ids=backends).growth
    assert live[platforms.pk].platforms["gpu-zero"].lines == (GPU_ZERO,)
    capacity_summary.refresh()
    with CaptureQueriesContext(connection) as read:
        kept = capacity_summary.totals(ids, backend_ids=backends)
    assert len(read) == 1 and kept.growth == live
    assert GPU_ZERO in admin_client.get("/").content.decode()
    MachinePool.objects.filter(name="gpu-zero").update(max_replicas=4)  # shown at the summary's next run
    assert (
        "up to 3; GPUs 0 now, up to 3"
        in capacity_summary.totals(ids, backend_ids=backends).growth[platforms.pk].platforms["gpu-zero"].lines[0]
    )
    capacity_summary.forget([platforms.backend_id])  # its nodes changed pools: computed for the request
    assert (
        "up to 4; GPUs 0 now, up to 4"
        in capacity_summary.totals(ids, backend_ids=backends).growth[platforms.pk].platforms["gpu-zero"].lines[0]
    )


def machine_pool_rows(page: str, platform: str) -> list[list[str]]:
    """The cells of a platform's machine pool table on the pool page, tags stripped."""
    section = page.split(f'id="platform-{platform}"', 1)[1].split("</section>", 1)[0]
    rows = re.findall(r'<tr class="machine-pool">(.*?)</tr>', section, re.S)
    return [
        [re.sub(r"<[^>]+>", "", cell).strip() for cell in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)] for row in rows
    ]


def test_the_pool_page_shows_each_platforms_machine_pool(admin_client, platforms):
    MachinePool.objects.filter(name="gpu-zero").update(state="failed")
    page = admin_client.get(reverse("selfservice:pool", args=["rosa"])).content.decode()
    grown = growth([platforms.pk], {platforms.backend_id})[platforms.pk]
    gpu_zero = grown.platforms["gpu-zero"].machine_pools[0]
    assert machine_pool_rows(page, "gpu-zero") == [
        ["gpu-zero", "g4dn.xlarge, 1 × T4", "spot", "0 / 3", "0 / 3", html.escape(gpu_zero.cost), "failed"]
    ]
    assert machine_pool_rows(page, "additional") == [
        ["additional", "m5.xlarge, 4 vCPU, 16 GiB", "on-demand", "2 / 5", "-", "on-demand, $0.192/h a node", "pending"]
    ]
    assert machine_pool_rows(page, "ml-training")[0][2:5] == ["spot", "2 / 3", "2 / 3"]


def researcher(team: str) -> Client:
    """A signed-in researcher, not staff, whose one role is `osmo-<team>` (OSMO's generated role: workflow:* on
    the pools whose names start with <team>)."""
    user = UserFactory(username=f"researcher-{team}", is_staff=False, is_superuser=False)
    roles.update_user_roles(user, add=[ProjectFactory(name=team).role.name], actor=Actor(name="tester", source="cli"))
    client = Client()
    client.force_login(user)
    return client


def test_a_researcher_sees_the_machine_pools_of_the_pool_page_as_the_admin_does(admin_client, platforms):
    """The figures are the pool page's, not the admin's: a researcher whose role gives the pool sees every
    platform's machine pools, now / at max, spot or on-demand, cost and state; one whose role gives other pools
    sees the same page (every signed-in user may read every pool's page, as OSMO lists every pool) with a request
    for access instead of Submit; a visitor not signed in is sent to sign in and sees nothing."""
    MachinePool.objects.filter(name="gpu-zero").update(state="failed")
    url = reverse("selfservice:pool", args=["rosa"])
    as_admin = admin_client.get(url).content.decode()
    member = researcher("rosa").get(url)
    assert member.status_code == 200
    page = member.content.decode()
    assert 'id="submit-button"' in page  # osmo-rosa may submit to rosa
    gpu_zero = growth([platforms.pk], {platforms.backend_id})[platforms.pk].platforms["gpu-zero"].machine_pools[0]
    assert machine_pool_rows(page, "gpu-zero") == [
        ["gpu-zero", "g4dn.xlarge, 1 × T4", "spot", "0 / 3", "0 / 3", html.escape(gpu_zero.cost), "failed"]
    ]
    assert machine_pool_rows(page, "additional") == [
        ["additional", "m5.xlarge, 4 vCPU, 16 GiB", "on-demand", "2 / 5", "-", "on-demand, $0.192/h a node", "pending"]
    ]
    assert machine_pool_rows(page, "ml-training")[0][2:5] == ["spot", "2 / 3", "2 / 3"]
    for platform in ("additional", "ml-training", "gpu-zero"):
        assert machine_pool_rows(page, platform) == machine_pool_rows(as_admin, platform)

    other = researcher("robotics").get(url)
    assert other.status_code == 200
    elsewhere = other.content.decode()
    assert 'id="submit-button"' not in elsewhere and "/requests/?pool=rosa#access" in elsewhere
    for platform in ("additional", "ml-training", "gpu-zero"):
        assert machine_pool_rows(elsewhere, platform) == machine_pool_rows(page, platform)

    visitor = Client().get(url)
    assert visitor.status_code == 302 and visitor["Location"].startswith("/login/")
    assert b"machine-pool" not in visitor.content


def platform_section(page: str, platform: str) -> str:
    return page.split(f'id="platform-{platform}"', 1)[1].split("</section>", 1)[0]


def test_the_pool_page_explains_spot_reclaiming_only_under_a_platform_with_spot_machines(admin_client, platforms):
    page = admin_client.get(reverse("selfservice:pool", args=["rosa"])).content.decode()
    reclaimed = "may be reclaimed at two minutes"
    assert reclaimed in platform_section(page, "gpu-zero")  # spot
    on_demand = platform_section(page, "additional")
    assert reclaimed not in on_demand and "A machine pool grows from its nodes now up to its maximum" in on_demand
