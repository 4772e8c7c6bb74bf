"""The admin home's dashboard (selfservice.dashboard, docs/admin.md "The admin home"): pending requests with
counts, pools by GPU use, queued and failed workflows of the last 24 h, clusters and their sync; each linked to
its list, each shown only to who may see that list; constant queries.

The world: tests/quotas/conftest.py's simulated cluster behind backend `sim` (synced), pools train, research and
batch; 4 H100 nodes with 8 GPUs each serve train/h100 and research/any-h100.
"""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.db.models import Sum
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from clusters.models import Backend, Node
from configs import store
from pools.models import NodeMembership, Pool
from portal.sparklines import sparkline
from selfservice.models import AccessRequest, PoolRequest, RequestStatus
from tests.factories import BackendFactory, UserFactory, WorkflowFactory
from tests.queries import assert_constant_queries
from tests.quotas.conftest import (  # noqa: F401  (fixtures)
    CLI,
    H100_PRODUCT,
    backend,
    kube_server,
    pools_config,
    synced,
)
from tests.selfservice.conftest import person
from tests.usage.factories import attempt_row
from usage.services import hourly_series
from workflows.models import Workflow, WorkflowStatus

HOME = "/admin/"


def section(html: str, section_id: str) -> str:
    start = html.index(f'id="{section_id}"')
    return html[start : html.index("</section>", start)]


def words(html: str) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", html).split())


def ask_access(username: str, pool: str = "train", **fields) -> AccessRequest:
    return AccessRequest.objects.create(
        requester=UserFactory(username=username), pool=Pool.objects.get(name=pool), justification="runs", **fields
    )


def workflow(status: str, *, created_ago=timedelta(0), finished_ago=None) -> Workflow:
    made = WorkflowFactory(pool=Pool.objects.get(name="train"), status=status)
    now = timezone.now()
    Workflow.objects.filter(pk=made.pk).update(
        created_at=now - created_ago, finished_at=None if finished_ago is None else now - finished_ago
    )
    return made


@pytest.fixture
def world(synced):  # noqa: F811
    Node.objects.filter(gpu_product=H100_PRODUCT).update(gpu_used=6)  # 4 nodes × 6 of 8 GPUs in use
    ask_access("ann")
    ask_access("bob", "research")
    ask_access("cid", status=RequestStatus.APPROVED)
    PoolRequest.objects.create(
        requester=UserFactory(username="dee"), team="vision", hardware="H100", gpus=8, purpose="x"
    )
    workflow(WorkflowStatus.QUEUED)
    workflow(WorkflowStatus.QUEUED, created_ago=timedelta(hours=3))
    workflow(WorkflowStatus.QUEUED, created_ago=timedelta(hours=30))  # queued, but submitted before the window
    # Ends at least an hour apart, so no two share a clock hour whatever the minute (the peak stays 1).
    workflow(WorkflowStatus.FAILED, created_ago=timedelta(hours=3), finished_ago=timedelta(hours=2))
    workflow(WorkflowStatus.FAILED_PREEMPTED, created_ago=timedelta(hours=5), finished_ago=timedelta(hours=4))
    workflow(WorkflowStatus.FAILED, created_ago=timedelta(hours=40), finished_ago=timedelta(hours=26))  # too old
    workflow(WorkflowStatus.COMPLETED, finished_ago=timedelta(minutes=5))
    BackendFactory(name="lab", sync_status="degraded", last_error="connection refused", last_error_at=timezone.now())
    return synced


def test_pending_requests_are_counted_and_linked_to_their_filtered_lists(world, admin_client):
    page = admin_client.get(HOME).content.decode()
    assert re.search(r"<title>\s*Dashboard \| Pool Portal</title>", page)  # not "Site administration"
    html = section(page, "dash-requests")
    access_list = reverse("admin:selfservice_accessrequest_changelist") + "?status__exact=PENDING"
    pool_list = reverse("admin:selfservice_poolrequest_changelist") + "?status__exact=PENDING"
    assert f'href="{access_list}" id="dash-accessrequest-pending"' in html
    assert f'href="{pool_list}" id="dash-poolrequest-pending"' in html
    text = words(html)
    assert "2 access requests pending" in text and "1 pool request pending" in text
    assert "ann → train" in text and "bob → research" in text and "cid" not in text  # decided: not pending
    assert "dee: vision, H100 × 8" in text
    pending = AccessRequest.objects.get(requester__username="ann")
    assert reverse("admin:selfservice_accessrequest_change", args=[pending.pk]) in html


def test_pools_by_gpu_use_show_gpus_in_use_of_their_nodes(world, admin_client):
    html = section(admin_client.get(HOME).content.decode(), "dash-gpu-pools")
    for name in ("train", "research"):
        members = Node.objects.filter(
            pk__in=NodeMembership.objects.filter(pool__name=name).values("node_id")
        ).aggregate(used=Sum("gpu_used"), allocatable=Sum("gpu_allocatable"))
        assert members["used"] == 24  # the 4 H100 nodes (the A100s of train are idle)
        row = html[html.index(f'data-pool="{name}"') :]
        row = row[: row.index("</li>")]
        assert f"{members['used']} / {members['allocatable']} GPUs" in words(row)
        percent = round(100 * members["used"] / members["allocatable"])
        assert f'style="width:{percent}%"' in row
        capacity = reverse("admin:pools_poolcapacity_change", args=[Pool.objects.get(name=name).pk])
        assert capacity in row
    research = html[html.index('data-pool="research"') :]
    assert 'style="width:75%"' in research[: research.index("</li>")]  # 24 of 32
    batch = html[html.index('data-pool="batch"') :]
    assert "no GPUs" in batch[: batch.index("</li>")]  # CPU nodes only
    assert html.index('data-pool="research"') < html.index('data-pool="batch"')  # busiest first
    assert reverse("admin:pools_poolcapacity_changelist") in html


def test_workflows_of_the_last_day_per_hour_queued_and_by_how_they_ended(world, admin_client):
    html = section(admin_client.get(HOME).content.decode(), "dash-workflows")
    text = words(html)
    assert "2 submitted and still queued" in text and "2 failed" in text
    assert "1 completed" in text and "0 cancelled" in text  # every finished status counts, completed too
    assert html.count('class="dash-hour"') == 24
    queued_list = reverse("admin:workflows_workflow_changelist") + "?status__exact=QUEUED"
    assert f'href="{queued_list}"' in html
    failed_link = re.search(r'href="([^"]+)" id="dash-failed"', html).group(1).replace("&amp;", "&")
    listed = admin_client.get(failed_link).content.decode()
    failed = Workflow.objects.filter(status__startswith="FAILED")
    recent = {w.workflow_id for w in failed if w.finished_at > timezone.now() - timedelta(hours=24)}
    assert len(recent) == 2 and all(f">{name}<" in listed for name in recent)
    assert not any(f">{w.workflow_id}<" in listed for w in failed if w.workflow_id not in recent)
    last = html[html.rindex('class="dash-hour"') :]  # this hour: the queued one just submitted
    assert re.search(r"1 queued, [01] completed, 0 failed, 0 cancelled", last)  # completed 5 min ago: maybe last hour
    assert "peak 1 an hour" in text
    completed_link = re.search(r'href="([^"]+)" id="dash-completed"', html).group(1).replace("&amp;", "&")
    done = Workflow.objects.get(status=WorkflowStatus.COMPLETED).workflow_id
    assert f">{done}<" in admin_client.get(completed_link).content.decode()


def test_forty_completed_workflows_appear_in_the_chart(world, admin_client):
    for minutes in range(40):
        workflow(WorkflowStatus.COMPLETED, created_ago=timedelta(hours=3), finished_ago=timedelta(minutes=90 + minutes))
    workflow(WorkflowStatus.CANCELLED, created_ago=timedelta(hours=3), finished_ago=timedelta(hours=2))
    html = section(admin_client.get(HOME).content.decode(), "dash-workflows")
    assert "41 completed" in words(html) and "1 cancelled" in words(html)
    titles = re.findall(r'title="[^"]*: (\d+) queued, (\d+) completed, (\d+) failed, (\d+) cancelled"', html)
    assert len(titles) == 24
    assert sum(int(completed) for _, completed, _, _ in titles) == 41
    assert sum(int(cancelled) for _, _, _, cancelled in titles) == 1


def test_clusters_show_their_sync_state_and_last_error(world, admin_client):
    html = section(admin_client.get(HOME).content.decode(), "dash-clusters")
    sim = html[html.index('data-backend="sim"') :]
    sim = sim[: sim.index("</tr>")]
    assert (
        "ok" in words(sim)
        and ("just now" in words(sim) or " ago" in words(sim))
        and str(Node.objects.filter(backend=world).count()) in sim
    )
    assert reverse("admin:clusters_backend_change", args=[world.pk]) in sim
    lab = html[html.index('data-backend="lab"') :]
    assert "degraded" in words(lab[: lab.index("</tr>")]) and "never" in words(lab[: lab.index("</tr>")])
    assert "connection refused" in lab
    assert f'href="{reverse("admin:clusters_backend_changelist")}"' in html
    degraded = reverse("admin:clusters_backend_changelist") + "?sync_status__exact=degraded"
    assert f'href="{degraded}">1 degraded</a>' in html


def test_each_section_only_for_who_may_see_its_list(world):
    store.apply(
        "ROLE",
        "request-desk",
        {"policies": [{"effect": "Allow", "actions": ["config:Read"], "resources": ["config/request"]}]},
        CLI,
    )
    desk = Client()
    desk.force_login(person("desk", "request-desk"))
    html = desk.get(HOME).content.decode()
    assert 'id="dash-requests"' in html and "2 access requests pending" in words(html)
    for hidden in ("dash-gpu-pools", "dash-workflows", "dash-clusters", "queues-panel", "dash-now"):
        assert f'id="{hidden}"' not in html
    boss = Client()
    boss.force_login(person("boss", "osmo-admin"))
    html = boss.get(HOME).content.decode()
    for shown in ("dash-requests", "dash-gpu-pools", "dash-clusters", "dash-now"):
        assert f'id="{shown}"' in html


def test_the_dashboard_takes_constant_queries(world, admin_client):
    def grow():
        for index in range(4):
            store.apply("POOL", f"more-{index}", {"backend": "sim", "platforms": {"h": {}}}, CLI)
            BackendFactory(name=f"far-{index}", last_sync_at=timezone.now(), sync_status="ok")
            ask_access(f"asker-{index}", f"more-{index}")
            PoolRequest.objects.create(requester=UserFactory(), team=f"t{index}", hardware="cpu", purpose="x")
            workflow(WorkflowStatus.QUEUED, created_ago=timedelta(hours=index))
            workflow(WorkflowStatus.FAILED, finished_ago=timedelta(hours=index + 6))
            attempt_row(project=f"p{index}", started_at=timezone.now() - timedelta(hours=index + 1), ended_at=None)
            attempt_row(node_pool=f"np{index}", started_at=timezone.now() - timedelta(hours=index + 3))

    # 15 today: the session and the user, the policy's roles, the dashboard's cards, the queues and the history
    assert_constant_queries(lambda: admin_client.get(HOME), grow, at_most=21)  # capacity summed for the request
    assert Backend.objects.count() == 6


def test_key_numbers_show_now_with_a_sparkline_of_24_hourly_points(world, admin_client):
    now = timezone.now()
    hour = now.replace(minute=0, second=0, microsecond=0)
    attempt_row(gpu=2, started_at=hour - timedelta(hours=3), ended_at=None)  # running: 2 + 3 GPUs every hour since
    attempt_row(gpu=3, project="other", node_pool="h100", started_at=hour - timedelta(hours=3), ended_at=None)
    attempt_row(gpu=1, started_at=hour - timedelta(hours=5), ended_at=hour - timedelta(hours=4))
    running = workflow(WorkflowStatus.RUNNING, created_ago=timedelta(hours=2))
    Workflow.objects.filter(pk=running.pk).update(started_at=hour - timedelta(minutes=30))
    html = section(admin_client.get(HOME).content.decode(), "dash-now")
    assert re.search(r'id="dash-now-gpus" data-value="5"', html)
    assert re.search(r'id="dash-now-queued" data-value="3"', html)  # the three QUEUED of the world
    assert re.search(r'id="dash-now-running" data-value="1"', html)
    assert html.count('<svg class="spark"') == 3 and html.count('data-points="24"') == 3
    gpus = hourly_series.gpus_in_use(now)[()]
    assert len(gpus) == 24 and gpus[-4:] == [5.0, 5.0, 5.0, 5.0] and gpus[-5] == 0 and gpus[-6] == 1.0
    flows = hourly_series.workflows(now)
    assert flows.queued[-1] == 3 and flows.queued[0] == 1  # only the one submitted 30 hours ago, a day ago
    assert flows.running[-2:] == [1, 1] and flows.running[-3] == 0  # running since half an hour before this hour
    first = hour - timedelta(hours=23)  # yesterday's hour: the caption names its day
    assert f"each hour since {first.day} {first:%b %H}:00 UTC" in words(html)


def test_a_sparkline_has_one_point_per_value_on_a_scale_from_zero():
    line = sparkline([0, 5, 10, 5])
    assert len(line.points) == 4 and line.points[0][1] == line.height - 2 and line.points[2][1] == 2
    assert sparkline([3, 3]).points[0][1] == 2  # a flat line at its peak, not at the bottom
    assert sparkline([]).points == ()
