"""Seeing quotas (docs/quotas.md, "Seeing it"): the researcher's quota on the catalog cards and the pool page,
why a queued workflow waits and who preempted one, the admin's fair-share page of a node pool and the admin
home's "Queues" panel; constant queries.

The world (tests/quotas/conftest.py): node pool h100 (4 × 8 GPUs, label), a100 (platform train/a100, 2 usable
× 8 GPUs); department research (vision, speech), ops (infer). In h100: research deserves 16 GPUs, vision and
speech 8 each; vision runs 4 GPUs, speech runs 12 (4 borrowed).
"""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from configs import store
from pools.models import Pool
from quotas.models import NodePool
from quotas.services import quotas
from quotas.services.node_pools import charged_node_pool, charged_node_pools
from quotas.services.queues import queues
from quotas.services.standing import standings
from tests.factories import UserFactory, WorkflowFactory
from tests.queries import assert_constant_queries
from tests.quotas.conftest import CLI
from workflows.models import WorkflowStatus

GIB = 2**30
REASON = {
    "code": "NO_CAPACITY",
    "text": "project vision: 8 of 8 guaranteed GPUs in use; 0 free to borrow; position 3 in the queue",
    "resource": "gpu",
    "position": 3,
}


def text(response) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", response.content.decode()).split())


def running(project, gpus: int, node_pool: str = "h100", status=WorkflowStatus.RUNNING, **fields):
    return WorkflowFactory(
        pool=Pool.objects.get(name="train"),
        project=project,
        node_pool=node_pool,
        status=status,
        requests={"gpu": gpus, "cpu": gpus * 4000, "memory": gpus * 32 * GIB},
        admitted_at=None if status == WorkflowStatus.QUEUED else timezone.now(),
        **fields,
    )


@pytest.fixture
def world(carved, teams):
    quotas.set_quota(None, "h100", "department", "research", "gpu", deserved=16)
    quotas.set_quota(None, "h100", "department", "research", "cpu", deserved="64")
    for name in ("vision", "speech"):
        quotas.set_quotas(
            None,
            "h100",
            "project",
            name,
            {"gpu": {"deserved": 8}, "cpu": {"deserved": "32"}, "memory": {"deserved": 0}},
        )
    running(teams["vision"], 4)
    running(teams["speech"], 12, preemptible=True)
    vera = UserFactory(username="vera")
    vera.groups.add(teams["vision"].role.group)
    return {**teams, "vera": vera}


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


# --- numbers -------------------------------------------------------------------------------------------------


def test_charging_many_pools_at_once_agrees_with_charged_node_pool(world):
    pools = list(Pool.objects.prefetch_related("platforms"))
    found = charged_node_pools(pools)
    expected = {(p.pk, x.name): charged_node_pool(p, x.name) for p in pools for x in p.platforms.all()}
    assert found == expected
    train, research = Pool.objects.get(name="train"), Pool.objects.get(name="research")
    assert found[(train.pk, "a100")].name == "a100" and found[(research.pk, "any-h100")].name == "h100"


def test_charging_is_served_from_the_cache_until_a_node_pool_is_written(
    transactional_db, world, django_assert_max_num_queries
):
    pools = list(Pool.objects.all())
    batch = Pool.objects.get(name="batch")
    assert charged_node_pools(pools)[(batch.pk, "cpu")].name == "sim-default"
    with django_assert_max_num_queries(1):  # the epochs only
        assert charged_node_pools(pools)[(batch.pk, "cpu")].name == "sim-default"
    selector = {"platform": {"pool": "batch", "platform": "cpu"}}
    store.apply("NODE_POOL", "batch-cpu", {"backend": "sim", "selector": selector}, CLI)
    assert charged_node_pools(pools)[(batch.pk, "cpu")].name == "batch-cpu"


def test_a_project_sees_deserved_in_use_and_what_it_could_borrow_now(world):
    h100 = NodePool.objects.get(name="h100")
    vision = standings([h100], ["vision"])[h100.pk].projects[0]
    # 32 GPUs, 16 in use → 16 free; 4 of vision's own guarantee unused → 12 to borrow, and the fair share it
    # would get asking for everything (8 + the whole surplus of 16 less speech's 4 borrowed) allows 12 above 8.
    assert (vision.gpu.deserved, vision.gpu.in_use, vision.gpu.borrowed, vision.gpu.could_borrow) == (8, 4, 0, 12)
    speech = standings([h100], ["speech"])[h100.pk].projects[0]
    assert (speech.gpu.in_use, speech.gpu.borrowed) == (12, 4)
    store_off = store.show("NODE_POOL", "h100")
    store.apply("NODE_POOL", "h100", {**store_off, "over_quota": False}, CLI)
    h100.refresh_from_db()
    assert standings([h100], ["vision"])[h100.pk].projects[0].gpu.could_borrow == 0


def test_a_limit_bounds_what_a_project_could_borrow(world):
    quotas.set_quota(None, "h100", "project", "vision", "gpu", limit=10)
    h100 = NodePool.objects.get(name="h100")
    assert standings([h100], ["vision"])[h100.pk].projects[0].gpu.could_borrow == 2  # 10 − max(4, 8)


# --- researchers' pages --------------------------------------------------------------------------------------


def test_catalog_cards_and_pool_page_show_the_viewers_quota(world):
    client = signed_in(world["vera"])
    page = client.get("/")
    assert page.status_code == 200
    html = page.content.decode()
    train = html[html.index('id="pool-train"') :]
    train = train[: train.index("</article>")]
    assert 'data-node-pool="h100"' in train and 'data-project="vision"' in train
    assert "8 GPUs deserved · 4 in use · 12 to borrow now" in " ".join(re.sub(r"<[^>]+>", " ", train).split())
    assert 'data-node-pool="a100"' in train and "No quotas here" in train  # a100 has no quota rows
    detail = text(client.get("/pools/train/"))
    assert "Your quota in node pool h100 platform h100" in detail
    # CPU: 4 × 191.5 cores − 64 in use − its own 16 unused; memory: nothing deserved, all of it borrowable
    assert "CPU cores 16 in use of 32 deserved, 686 to borrow · memory 128Gi in use of 0, 7.5Ti to borrow" in detail
    assert "To borrow now" in detail


def test_someone_in_no_project_sees_no_quota_panel(world):
    html = signed_in(UserFactory(username="solo")).get("/").content.decode()
    assert 'class="quota' not in html


HOSTNAME = "kubernetes.io/hostname"


def test_catalog_queries_stay_constant_with_more_pools_node_pools_and_workflows(world):
    client = signed_in(world["vera"])
    client.get("/")

    def grow():
        for n in range(3):  # each on a node of its own: one node is in one node pool
            store.apply("POD_TEMPLATE", f"node-{n}", {"spec": {"nodeSelector": {HOSTNAME: f"cpu-node-{n}"}}}, CLI)
            store.apply(
                "POOL",
                f"extra-{n}",
                {"backend": "sim", "platforms": {f"p{i}": {"override_pod_template": [f"node-{n}"]} for i in range(2)}},
                CLI,
            )
            store.apply(
                "NODE_POOL",
                f"extra-{n}",
                {"backend": "sim", "selector": {"platform": {"pool": f"extra-{n}", "platform": "p0"}}},
                CLI,
            )
            running(world["vision"], 1, node_pool=f"extra-{n}")
        quotas.set_quota(None, "extra-0", "department", "research", "gpu", deserved=1)
        quotas.set_quota(None, "extra-0", "project", "vision", "gpu", deserved=1)

    assert_constant_queries(lambda: client.get("/"), grow)


def test_a_queued_workflow_says_why_it_waits_on_its_page_and_in_the_list(world):
    waiting = running(world["vision"], 8, status=WorkflowStatus.QUEUED, queue_reason=REASON)
    Workflow = type(waiting)
    Workflow.objects.filter(pk=waiting.pk).update(submitted_by=world["vera"])
    client = signed_in(world["vera"])
    page = client.get(f"/workflows/{waiting.workflow_id}/")
    assert page.status_code == 200
    html = page.content.decode()
    assert 'id="quota-note" data-kind="queued"' in html
    said = REASON["text"].removesuffix("; position 3 in the queue")  # the position is said once, on its own
    assert "Waiting in the queue · position 3" in text(page) and said in text(page)
    assert "position 3 in the queue" not in text(page)
    listed = text(client.get("/workflows/"))
    assert f"#3 in queue: {said}" in listed and "position 3 in the queue" not in listed


def test_a_preempted_workflow_says_by_whom_and_why(world):
    reason = {
        "code": "RECLAIMED",
        "preemptor": "train-7",
        "preemptor_project": "vision",
        "text": "preempted: project speech was using 12 GPUs over quota (deserved 8, fair share 8); reclaimed for "
        "workflow train-7 of project vision, which is within its guaranteed quota",
    }
    stopped = running(world["speech"], 4, status=WorkflowStatus.FAILED_PREEMPTED, preemption=reason)
    type(stopped).objects.filter(pk=stopped.pk).update(submitted_by=world["vera"])
    page = text(signed_in(world["vera"]).get(f"/workflows/{stopped.workflow_id}/"))
    assert "Preempted by workflow train-7 of project vision" in page and reason["text"] in page
    assert reason["text"] in text(signed_in(world["vera"]).get("/workflows/"))


def test_my_workflows_list_queries_stay_constant_with_queued_workflows(world):
    client = signed_in(world["vera"])
    client.get("/workflows/")

    def grow():
        for _ in range(5):
            WorkflowFactory(
                pool=Pool.objects.get(name="train"),
                submitted_by=world["vera"],
                status=WorkflowStatus.QUEUED,
                node_pool="h100",
                queue_reason=REASON,
            )

    assert_constant_queries(lambda: client.get("/workflows/"), grow)


# --- admins ----------------------------------------------------------------------------------------------------


def test_the_fair_share_page_charts_every_project_and_lists_who_borrows_from_whom(world, admin_client):
    h100 = NodePool.objects.get(name="h100")
    url = reverse("admin:quotas_nodepool_fairshare", args=[h100.pk])
    page = admin_client.get(url)
    assert page.status_code == 200
    html = page.content.decode()
    assert "Capacity 32 · in use 16 · free 16" in text(page)
    speech = html[html.index('data-project="speech"') :]
    speech = speech[: speech.index('data-project="', 10) if 'data-project="' in speech[10:] else len(speech)]
    values = dict(re.findall(r'data-series="(\w+)".*?class="fs-value">([^<]+)<', speech, re.S))
    assert values == {"deserved": "8", "fair_share": "12", "allocated": "12", "borrowed": "4"}
    assert 'style="width: 37.5%"' in speech  # 12 of the 32-GPU scale
    # speech borrows 4: the capacity nobody is guaranteed (32 − 16 deserved) covers it
    loans = html[html.index('id="loans"') :]
    assert re.search(r"<td>speech</td><td>unguaranteed capacity</td><td>4</td>", loans)
    cpu = admin_client.get(url + "?resource=cpu")
    assert 'data-resource="cpu"' in cpu.content.decode() and "Capacity 766 ·" in text(cpu)
    assert 'data-resource="gpu"' in admin_client.get(url + "?resource=disk").content.decode()
    # linked from the node pool list and change page
    assert url in admin_client.get(reverse("admin:quotas_nodepool_changelist")).content.decode()
    assert url in admin_client.get(reverse("admin:quotas_nodepool_change", args=[h100.pk])).content.decode()


def test_a_researcher_cannot_open_the_fair_share_page(world):
    url = reverse("admin:quotas_nodepool_fairshare", args=[NodePool.objects.get(name="h100").pk])
    response = signed_in(world["vera"]).get(url, follow=True)
    assert response.redirect_chain[-1][0] == "/" and 'id="fairshare"' not in response.content.decode()


def test_the_fair_share_page_takes_constant_queries(world, admin_client):
    url = reverse("admin:quotas_nodepool_fairshare", args=[NodePool.objects.get(name="h100").pk])

    def grow():
        for _ in range(4):
            running(world["infer"], 1)
            running(world["vision"], 1, status=WorkflowStatus.QUEUED)

    assert_constant_queries(lambda: admin_client.get(url), grow)


def test_the_admin_home_lists_growing_queues_with_a_link_to_their_fair_share(world, admin_client):
    now = timezone.now()
    for _ in range(3):
        running(world["vision"], 8, status=WorkflowStatus.QUEUED, queue_reason=REASON)
    old = running(world["infer"], 1, node_pool="a100", status=WorkflowStatus.QUEUED)
    type(old).objects.filter(pk=old.pk).update(created_at=now - timedelta(hours=2))
    found = {q.node_pool.name: q for q in queues()}
    # h100: 3 queued + 2 running submitted in the window, 2 admitted → growing; a100: nothing new → steady
    assert (found["h100"].queued, found["h100"].submitted_recently, found["h100"].admitted_recently) == (3, 5, 2)
    assert found["h100"].growing and not found["a100"].growing
    html = admin_client.get(reverse("admin:index")).content.decode()
    panel = html[html.index('id="queues-panel"') :]
    growing = panel[panel.index('id="queues-growing"') : panel.index("</table>")]
    h100 = NodePool.objects.get(name="h100")
    assert 'data-node-pool="h100"' in growing and "a100" not in growing
    assert reverse("admin:quotas_nodepool_fairshare", args=[h100.pk]) in growing
    steady = panel[panel.index('id="queues-steady"') :]
    assert "a100" in steady[: steady.index("</p>")]


def test_the_admin_home_without_queues_says_so(carved, admin_client):
    html = admin_client.get(reverse("admin:index")).content.decode()
    assert 'id="queues-none"' in html
