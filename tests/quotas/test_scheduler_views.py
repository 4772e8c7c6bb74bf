"""What KAI-Scheduler or Kueue says, shown where the portal's own admission shows its view (docs/quota-schedulers.md,
"Seeing what the scheduler sees"): the fair-share page's "As <scheduler> sees it", `workflow explain` and the
workflow API's `queue` object for a workflow the scheduler has not started, and a cluster that cannot be read as
one clear line. The scheduler's status is written with kubesim's set_status, as its controller would.

Fleet and teams: tests/quotas/conftest.py (node pools h100, a100, sim-default; vision, speech, infer)."""

from __future__ import annotations

import json
from html import unescape
from io import StringIO

import pytest
from django.core.management import call_command
from django.urls import reverse
from rest_framework.test import APIClient

from pools.engine.quota_pass import run_admission
from pools.models import Pool
from quotas.models import NodePool
from quotas.services import delegation
from quotas.services.quotas import set_quota
from quotas.services.state import state
from teams.models import Project
from tests.factories import ProjectFactory, WorkflowFactory
from tests.queries import assert_constant_queries
from tests.quotas.test_delegation import KAI_QUEUES, delegate
from workflows.models import WorkflowStatus

CLUSTER_QUEUES = "clusterqueues.kueue.x-k8s.io"


@pytest.fixture
def cluster(kube_server):
    kube_server.emulator.serve_schedulers("kai", "kueue")
    return kube_server.emulator


@pytest.fixture
def kai(carved, cluster, kube_server):
    backend = delegate(carved, "kai", kube_server)
    delegation.sync_scheduler_objects(backend)
    cluster.set_status(
        KAI_QUEUES,
        "a100-vision",
        {
            "allocated": {"nvidia.com/gpu": "6", "cpu": "4", "memory": "16Gi"},
            "conditions": [{"type": "Ready", "status": "True", "message": "queue is over its limit of 6 GPUs"}],
        },
    )
    return backend


def pending(status: str = WorkflowStatus.PENDING, project: str = "vision"):
    return WorkflowFactory(
        pool=Pool.objects.get(name="train"),
        project=Project.objects.get(name=project),
        node_pool="a100",
        status=status,
    )


def explain(*args: str) -> str:
    out = StringIO()
    call_command("workflow", "explain", *args, stdout=out, stderr=StringIO())
    return out.getvalue()


def fairshare(admin_client, node_pool: str = "a100") -> str:
    url = reverse("admin:quotas_nodepool_fairshare", args=[NodePool.objects.get(name=node_pool).pk])
    page = admin_client.get(url)
    assert page.status_code == 200
    return page.content.decode()


def section(html: str) -> str:
    start = html.index('id="scheduler-view"')
    return html[start : html.index("</section>", start)]


def test_the_fair_share_page_shows_what_kai_has_allocated_and_says(kai, admin_client):
    shown = section(fairshare(admin_client))
    assert 'data-scheduler="kai"' in shown and "As KAI-Scheduler sees it" in shown
    vision = shown[shown.index('<tr data-project="vision">') :]
    vision = vision[: vision.index("</tr>")]
    assert "<td>a100-vision</td>" in vision
    assert [cell for cell in vision.split("<td")[3:6]] == [
        ' class="fs-value" style="text-align:left">6</td>',
        ' class="fs-value" style="text-align:left">4</td>',
        ' class="fs-value" style="text-align:left">16Gi</td>',
    ]
    assert "queue is over its limit of 6 GPUs" in vision
    speech = shown[shown.index('<tr data-project="speech">') :]
    assert "<td>a100-speech</td>" in speech[: speech.index("</tr>")] and "—" in speech[: speech.index("</tr>")]


def test_the_fair_share_page_shows_kueue_usage_borrowing_and_workloads(carved, cluster, kube_server, admin_client):
    backend = delegate(carved, "kueue", kube_server)
    delegation.sync_scheduler_objects(backend)
    cluster.set_status(
        CLUSTER_QUEUES,
        "vision",
        {
            "flavorsUsage": [
                {"name": "a100", "resources": [{"name": "nvidia.com/gpu", "total": "6", "borrowed": "2"}]}
            ],
            "pendingWorkloads": 3,
            "admittedWorkloads": 2,
            "conditions": [{"type": "Active", "status": "True", "message": "Can admit new workloads"}],
        },
    )
    shown = section(fairshare(admin_client))
    assert "As Kueue sees it" in shown
    vision = shown[shown.index('<tr data-project="vision">') :]
    vision = vision[: vision.index("</tr>")]
    assert "<td>gpu 2</td>" in vision and "<td>2 admitted, 3 pending</td>" in vision
    assert "Can admit new workloads" in vision


def test_a_portal_backend_has_no_scheduler_section(carved, admin_client):
    assert 'id="scheduler-view"' not in fairshare(admin_client)


def test_a_cluster_that_cannot_be_read_is_one_clear_line(kai, cluster, admin_client):
    cluster.fail_next("list", "queues", status=503, times=None, message="the API server is restarting")
    html = fairshare(admin_client)
    line = unescape(section(html))
    assert 'id="scheduler-error"' in line and 'id="scheduler-queues"' not in line
    said = "could not read the scheduler's status: listing queues.scheduling.run.ai: HTTP 503 Service Unavailable: "
    assert said + "the API server is restarting</p>" in line
    assert 'id="fairshare-chart"' in html  # the portal's own view is still there
    text = explain(pending().workflow_id)
    assert f"waiting: scheduler (KAI): {said}the API server is restarting" in text


def test_the_fair_share_page_takes_constant_queries_with_the_scheduler_view(kai, admin_client):
    url = reverse("admin:quotas_nodepool_fairshare", args=[NodePool.objects.get(name="a100").pk])

    def grow():
        for n in range(3):
            ProjectFactory(name=f"extra-{n}", department=Project.objects.get(name="vision").department)
            pending()

    assert_constant_queries(lambda: admin_client.get(url), grow)
    assert "extra-2" in section(admin_client.get(url).content.decode())


def test_explain_and_the_api_give_kais_message_for_a_workflow_it_has_not_started(kai, admin_user):
    waiting = pending(WorkflowStatus.WAITING)
    text = explain(waiting.workflow_id)
    assert "waiting: scheduler (KAI): queue is over its limit of 6 GPUs" in text
    data = json.loads(explain(waiting.workflow_id, "--format", "json"))["queue"]
    assert data == {
        "status": "WAITING",
        "node_pool": "a100",
        "code": "scheduler",
        "scheduler": "kai",
        "scheduler_queue": "a100-vision",
        "reason": "scheduler (KAI): queue is over its limit of 6 GPUs",
    }
    client = APIClient()
    client.force_authenticate(admin_user)
    assert client.get(f"/api/workflow/{waiting.workflow_id}").json()["queue"] == data
    listed = client.get("/api/workflow?all_users=true").json()["workflows"]
    assert [w["queue"] for w in listed if w["workflow_id"] == waiting.workflow_id] == [None]  # a list never asks
    speech = pending(project="speech")
    assert "scheduler (KAI): no status message on queue a100-speech yet" in explain(speech.workflow_id)
    running = pending(WorkflowStatus.RUNNING)
    assert '"queue": null' in explain(running.workflow_id, "--format", "json")


def test_a_kai_backend_s_view_keeps_guarantees_whole_where_the_portal_shrinks_them(carved, kube_server):
    """Capacity below the guarantees (issue #30, "over-subscription"): the portal's own admission shrinks them in
    proportion; a backend delegated to KAI shows what KAI will do, every guarantee whole (docs/admission.md)."""
    node_pool = NodePool.objects.get(name="h100")
    capacity = state(node_pool).capacity["gpu"]
    set_quota(None, "h100", "department", "research", "gpu", deserved=2 * capacity)
    for project in ("vision", "speech"):
        set_quota(None, "h100", "project", project, "gpu", deserved=capacity)
        WorkflowFactory(
            pool=Pool.objects.get(name="train"),
            project=Project.objects.get(name=project),
            node_pool="h100",
            status=WorkflowStatus.QUEUED,
            requests={"gpu": capacity, "cpu": 0, "memory": 0},
        )

    def guaranteed() -> dict[str, int]:
        shares = run_admission(state(node_pool).engine_state()).shares["gpu"].projects
        return {name: shares[name].deserved_part for name in ("speech", "vision")}

    assert sum(guaranteed().values()) == capacity  # shrunk: half each
    delegate(carved, "kai", kube_server)
    assert guaranteed() == {"speech": capacity, "vision": capacity}  # KAI: setDeservedResource keeps them
