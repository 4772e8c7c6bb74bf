"""Self-service pages with Django's test client: catalog, pool page, submit with preview, my workflows.

Access is the policy's: `researcher` (osmo-user + osmo-robotics) may use the robotics-* pools, `nobody`
holds no role and may use none, `boss` holds osmo-admin.
"""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from access.models import AuditEvent
from configs import store
from pools.models import Pool
from pools.services import capacity_summary
from tests.queries import assert_constant_queries
from tests.selfservice.conftest import ACTOR, OTHER, TRAINING, load_fleet
from workflows.models import Task, TaskStatus, Workflow, WorkflowStatus

pytestmark = pytest.mark.django_db

HX = {"HTTP_HX_REQUEST": "true"}
SPEC = """\
version: 2
workflow:
  name: train-resnet
  resources:
    default: {cpu: 8, gpu: 2, memory: 64Gi, storage: 100Gi}
  tasks:
  - name: train
    image: nvcr.io/nvidia/pytorch:24.01-py3
    command: [python, train.py]
"""


def text(response) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", response.content.decode()).split())


# --- catalog ---------------------------------------------------------------------------------------------


def test_catalog_requires_sign_in(client, demo_world):
    response = client.get("/")
    assert response.status_code == 302 and response["Location"] == "/login/?next=/"
    assert client.get("/login/").status_code == 200


def test_local_account_signs_in_on_the_login_page_and_lands_on_the_catalog(client, demo_world):
    response = client.post(
        "/login/?next=/", {"username": "researcher", "password": "pw-for-tests-1", "next": "/"}, follow=True
    )
    assert response.redirect_chain[-1][0] == "/"
    assert b'id="catalog"' in response.content


def test_catalog_shows_usable_pools_first_with_gpu_bars_and_others_requestable(demo_world):
    Pool.objects.filter(name="robotics-simulation").update(enable_maintenance=True)
    response = demo_world.client(demo_world.researcher).get("/")
    assert response.status_code == 200
    html = response.content.decode()
    cards = re.findall(r'id="pool-([^"]+)" data-usable="(yes|no)"', html)
    assert [name for name, usable in cards if usable == "yes"] == [
        "robotics-inference",
        "robotics-simulation",
        "robotics-training",
    ]
    assert {name for name, usable in cards if usable == "no"} == {"heterogeneous_pool", "team-development"}
    assert cards[:3] == [(n, "yes") for n in ("robotics-inference", "robotics-simulation", "robotics-training")]
    training = html[html.index('id="pool-robotics-training"') : html.index('id="pool-team-development"')]
    assert "h100-platform" in training and "NVIDIA-H100-80GB-HBM3" in training
    assert "32 free of 32" in training  # 4 H100 nodes × 8 GPUs, nothing running
    assert "/pools/robotics-training/submit/" in training
    simulation = html[html.index('id="pool-robotics-simulation"') :]
    assert "maintenance" in simulation[:600]
    other = html[html.index('id="pool-team-development"') :]
    assert "Request access" in other and "/requests/?pool=team-development" in other
    # the colleague's access home page said this; it is kept on the real home page
    assert (
        "You are signed in as <strong>researcher</strong>; your roles: osmo-default, osmo-robotics, osmo-user" in html
    )


def test_a_user_without_a_role_sees_only_requestable_pools(demo_world):
    html = demo_world.client(demo_world.nobody).get("/").content.decode()
    assert 'data-usable="yes"' not in html
    assert html.count('class="button primary request-access"') == 5
    assert 'id="no-pools"' in html
    assert "/submit/" not in html


def test_catalog_query_count_is_constant_in_pools_and_platforms(demo_world):
    client = demo_world.client(demo_world.researcher)
    client.get("/")  # warm caches (sessions, content types)

    def catalog():
        assert client.get("/").status_code == 200

    def add_pools():
        for n in range(6):
            store.apply(
                "POOL",
                f"robotics-extra-{n}",
                {
                    "backend": "gpu-cluster-01",
                    "common_pod_template": ["default_amd64"],
                    "common_default_variables": {
                        "USER_CPU": 1,
                        "USER_GPU": 1,
                        "USER_MEMORY": "1Gi",
                        "USER_STORAGE": "1Gi",
                    },
                    "platforms": {f"p{i}": {"override_pod_template": ["training_h100_template"]} for i in range(3)},
                },
                ACTOR,
            )
        assert Pool.objects.count() == 11

    assert_constant_queries(catalog, grow=add_pools, at_most=14)  # 5 pools, then 11: capacity summed for the request

    capacity_summary.refresh()  # as the periodic job keeps it: the capacity and machine pools are one read by key
    with CaptureQueriesContext(connection) as summarized:
        catalog()
    assert len(summarized) == 10
    assert not any("pools_nodemembership" in q["sql"] or "clusters_machinepool" in q["sql"] for q in summarized)


# --- pool page ---------------------------------------------------------------------------------------------


def test_pool_page_shows_platforms_nodes_capacity_and_recent_use(demo_world):
    response = demo_world.client(demo_world.researcher).get(f"/pools/{TRAINING}/")
    assert response.status_code == 200
    html = response.content.decode()
    for platform in ("a100-platform", "h100-platform", "gb200-platform"):
        assert f'id="platform-{platform}"' in html
    assert "h100-node-3" in html and "a100-node-1" in html
    assert "a100-node-2" not in html  # cordoned: not a member
    assert 'id="workflows-24h">0 workflows' in html and 'id="gpus-in-use">0 GPUs in use' in html
    assert f'href="/pools/{TRAINING}/submit/"' in html and "Submit to this pool" in html


def test_pool_page_for_a_pool_one_may_not_use_offers_a_request(demo_world):
    html = demo_world.client(demo_world.researcher).get(f"/pools/{OTHER}/").content.decode()
    assert "Submit to this pool" not in html and f"/requests/?pool={OTHER}" in html


def test_unknown_pool_is_a_404_page(demo_world):
    response = demo_world.client(demo_world.researcher).get("/pools/no-such-pool/")
    assert response.status_code == 404 and b"no pool named" in response.content


@pytest.mark.parametrize("url", ["/pools/a%00b/", "/pools/a%00b/submit/", "/workflows/a%00b-1/"])
def test_a_nul_in_a_page_url_is_a_404_not_a_database_error(demo_world, url):
    assert demo_world.client(demo_world.researcher).get(url).status_code == 404


# --- submit page and preview -------------------------------------------------------------------------------


def test_submit_page_prefills_an_example_for_the_default_platform(demo_world):
    response = demo_world.client(demo_world.researcher).get(f"/pools/{TRAINING}/submit/")
    assert response.status_code == 200
    html = response.content.decode()
    assert 'id="spec-editor"' in html and "platform: h100-platform" in html
    assert 'data-example="single-a100-platform"' in html and 'data-example="group"' in html


def test_choosing_an_example_swaps_the_editor(demo_world):
    response = demo_world.client(demo_world.researcher).get(f"/pools/{TRAINING}/submit/?example=group", **HX)
    html = response.content.decode()
    assert html.lstrip().startswith('<div id="editor-wrap"') and "groups:" in html and "<html" not in html


def test_a_user_without_a_role_gets_a_403_page_and_the_refusal_is_audited(demo_world):
    client = demo_world.client(demo_world.nobody)
    response = client.get(f"/pools/{TRAINING}/submit/")
    assert response.status_code == 403
    assert b"You may not submit workflows to pool robotics-training" in response.content
    assert b"Request access to robotics-training" in response.content
    assert AuditEvent.objects.filter(
        action="access.denied", source="page", actor_name="nobody", target=f"workflow:Create on pool/{TRAINING}"
    ).exists()
    response = client.post(f"/pools/{TRAINING}/submit/", {"spec": SPEC, "priority": "NORMAL"})
    assert response.status_code == 403 and not Workflow.objects.exists()
    preview = client.post(f"/pools/{TRAINING}/submit/preview/", {"spec": SPEC, "priority": "NORMAL"}, **HX)
    assert preview.status_code == 200 and b"You may not submit workflows" in preview.content


def test_htmx_preview_for_an_unknown_pool_is_a_404_fragment_with_the_message(demo_world):
    client = demo_world.client(demo_world.researcher)
    preview = client.post("/pools/no-such-pool/submit/preview/", {"spec": SPEC, "priority": "NORMAL"}, **HX)
    html = preview.content.decode()
    assert preview.status_code == 404
    assert "<html" not in html and 'id="submit-error"' in html and 'data-code="pool_not_found"' in html
    assert "no pool named &#x27;no-such-pool&#x27;" in html and "You may not submit" not in html
    page = client.post("/pools/no-such-pool/submit/preview/", {"spec": SPEC, "priority": "NORMAL"})
    assert page.status_code == 404 and "<html" in page.content.decode()  # without htmx: the whole page


def test_htmx_is_told_to_swap_a_404_so_the_message_shows(demo_world):
    html = demo_world.client(demo_world.researcher).get(f"/pools/{TRAINING}/submit/").content.decode()
    assert '{"code": "404", "swap": true, "error": false}' in html


def test_preview_shows_the_resolved_pod_with_provenance_and_node_verdicts(demo_world):
    response = demo_world.client(demo_world.researcher).post(
        f"/pools/{TRAINING}/submit/preview/", {"spec": SPEC, "priority": "NORMAL"}, **HX
    )
    assert response.status_code == 200
    html = response.content.decode()
    assert "<html" not in html  # a fragment for htmx
    assert 'id="preview-task-train"' in html and 'data-verdict="fits"' in html
    assert "Would start now: 4 nodes can take it" in html
    for node in ("h100-node-0", "h100-node-3"):
        assert f'<span class="chip ok mono">{node}</span>' in html
    lines = dict(re.findall(r'<td class="code">([^<]*)</td><td class="note">([^<]*)</td>', html))
    assert any(
        "nvidia.com/gpu: &#x27;2&#x27;" in line or "nvidia.com/gpu: '2'" in line or "nvidia.com/gpu: 2" in line
        for line in lines
    ), list(lines)[:40]
    assert any(note.startswith("template training_h100_template") for note in lines.values())
    assert any(note == "task" for note in lines.values())
    assert not Workflow.objects.exists()  # a dry run stores nothing


def test_preview_explains_why_nodes_would_not_take_the_pod(demo_world):
    load_fleet(busy={"h100-node-0": 8, "h100-node-1": 8, "h100-node-2": 7, "h100-node-3": 4})
    client = demo_world.client(demo_world.researcher)
    spec = SPEC.replace("gpu: 2", "gpu: 4")
    html = client.post(
        f"/pools/{TRAINING}/submit/preview/", {"spec": spec, "priority": "NORMAL"}, **HX
    ).content.decode()
    assert 'data-verdict="fits"' in html and "Would start now: 1 node can take it" in html
    assert '<span class="chip ok mono">h100-node-3</span>' in html
    assert "Why not the other 3 nodes" in html and "Insufficient nvidia.com/gpu: requested 4, free 1 of 8" in html
    html = client.post(
        f"/pools/{TRAINING}/submit/preview/", {"spec": SPEC.replace("gpu: 2", "gpu: 5"), "priority": "NORMAL"}, **HX
    ).content.decode()
    assert 'data-verdict="queues"' in html and "no node has room right now" in html
    page = client.get(f"/pools/{TRAINING}/").content.decode()
    assert 'id="gpus-in-use">27 GPUs in use' in page and "5 free of 32" in page


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("version: 2\nworkflow: [", "The spec has a mistake"),
        ("version: 2\nworkflow:\n  name: x\n", "a workflow needs at least one group or one task"),
        (SPEC.replace("image: nvcr.io/nvidia/pytorch:24.01-py3", "imag: x"), "tasks[0]"),
        (SPEC.replace("gpu: 2", "gpu: 0"), "Training pools need at least one GPU"),
        (SPEC.replace("memory: 64Gi", "memory: lots"), "memory"),
    ],
)
def test_preview_errors_are_shown_inline_with_their_path(demo_world, spec, expected):
    response = demo_world.client(demo_world.researcher).post(
        f"/pools/{TRAINING}/submit/preview/", {"spec": spec, "priority": "NORMAL"}, **HX
    )
    assert response.status_code == 200
    html = response.content.decode()
    assert 'id="submit-error"' in html and expected in html.replace("&#x27;", "'")


def test_rule_failures_list_every_problem_per_task(demo_world):
    html = (
        demo_world.client(demo_world.researcher)
        .post(
            f"/pools/{TRAINING}/submit/preview/", {"spec": SPEC.replace("gpu: 2", "gpu: 0"), "priority": "NORMAL"}, **HX
        )
        .content.decode()
    )
    assert "A task cannot run on its platform" in html
    assert 'class="problems"' in html and "task <b>train</b> on h100-platform" in html


def test_a_pool_in_maintenance_says_so(demo_world):
    Pool.objects.filter(name=TRAINING).update(enable_maintenance=True)
    client = demo_world.client(demo_world.researcher)
    html = client.post(f"/pools/{TRAINING}/submit/preview/", {"spec": SPEC, "priority": "NORMAL"}, **HX).content
    assert b"The pool is in maintenance" in html
    response = client.post(f"/pools/{TRAINING}/submit/", {"spec": SPEC, "priority": "NORMAL"})
    assert response.status_code == 409 and b"The pool is in maintenance" in response.content


def test_preview_without_javascript_renders_the_whole_page(demo_world):
    response = demo_world.client(demo_world.researcher).post(
        f"/pools/{TRAINING}/submit/preview/", {"spec": SPEC, "priority": "NORMAL"}
    )
    assert response.status_code == 200
    html = response.content.decode()
    assert "<html" in html and 'id="preview-task-train"' in html and "train-resnet" in html


def test_submit_stores_the_workflow_and_redirects_to_its_page(demo_world, django_capture_on_commit_callbacks):
    client = demo_world.client(demo_world.researcher)
    response = client.post(f"/pools/{TRAINING}/submit/", {"spec": SPEC, "priority": "HIGH"})
    workflow = Workflow.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/workflows/{workflow.workflow_id}/"
    assert workflow.workflow_id == "train-resnet-1" and workflow.priority == "HIGH"
    assert workflow.submitted_by == demo_world.researcher
    page = client.get(response["Location"])
    html = page.content.decode()
    assert page.status_code == 200
    assert 'id="task-train"' in html and 'id="cancel-workflow"' in html
    assert 'hx-trigger="every 3s"' in html  # follows itself while unfinished
    assert "nvcr.io/nvidia/pytorch:24.01-py3" in html and "SUBMITTED" in html


def test_submit_errors_re_render_the_editor_with_the_error_and_store_nothing(demo_world):
    client = demo_world.client(demo_world.researcher)
    response = client.post(
        f"/pools/{TRAINING}/submit/", {"spec": "version: 2\nworkflow: {name: Bad_Name}\n", "priority": "NORMAL"}
    )
    assert response.status_code == 400
    html = response.content.decode()
    assert 'id="submit-error"' in html and 'id="spec-editor"' in html and "Bad_Name" in html
    assert not Workflow.objects.exists()


# --- my workflows -----------------------------------------------------------------------------------------


@pytest.fixture
def submitted(demo_world):
    client = demo_world.client(demo_world.researcher)
    client.post(f"/pools/{TRAINING}/submit/", {"spec": SPEC, "priority": "NORMAL"})
    return Workflow.objects.get()


def test_my_workflows_lists_only_my_own(demo_world, submitted):
    html = demo_world.client(demo_world.researcher).get("/workflows/").content.decode()
    assert submitted.workflow_id in html and "pending" in html and 'hx-trigger="every 5s"' in html
    other = demo_world.client(demo_world.nobody).get("/workflows/").content.decode()
    assert submitted.workflow_id not in other and "No workflows yet" in other


def test_others_cannot_see_or_cancel_a_workflow(demo_world, submitted):
    """As the API: a workflow one may not read answers exactly as an unknown one (404, no existence leak);
    the refusal is audited with its real reason."""
    client = demo_world.client(demo_world.nobody)
    page = client.get(f"/workflows/{submitted.workflow_id}/")
    assert page.status_code == 404 and b"not its submitter" not in page.content
    assert page.context["error"].reason == f"no workflow {submitted.workflow_id!r}"
    assert client.post(f"/workflows/{submitted.workflow_id}/cancel/").status_code == 404
    submitted.refresh_from_db()
    assert submitted.status == WorkflowStatus.PENDING
    refusals = AuditEvent.objects.filter(
        action="access.denied", target=f"workflow:Read on workflow/{submitted.workflow_id}"
    )
    assert set(refusals.values_list("source", flat=True)) == {"page"} and refusals.count() == 2
    api = APIClient()
    api.force_authenticate(demo_world.nobody)
    response = api.get(f"/api/workflow/{submitted.workflow_id}")
    assert response.status_code == 404 and response.json()["reason"] == page.context["error"].reason
    assert all(event.detail["because"] for event in refusals)  # the audit keeps the real reason
    assert client.get("/workflows/no-such-1/").status_code == 404


def test_the_status_fragment_stops_polling_once_finished(demo_world, submitted):
    client = demo_world.client(demo_world.researcher)
    fragment = client.get(f"/workflows/{submitted.workflow_id}/", **HX).content.decode()
    assert fragment.startswith('<div id="workflow-status" hx-get=') and "every 3s" in fragment
    Task.objects.update(status=TaskStatus.COMPLETED, node="h100-node-1", exit_code=0)
    Workflow.objects.update(status=WorkflowStatus.COMPLETED)
    fragment = client.get(f"/workflows/{submitted.workflow_id}/", **HX).content.decode()
    assert "every 3s" not in fragment and "completed" in fragment and "h100-node-1" in fragment


def test_cancel_marks_the_workflow_cancelled(demo_world, submitted):
    client = demo_world.client(demo_world.researcher)
    response = client.post(f"/workflows/{submitted.workflow_id}/cancel/", follow=True)
    assert response.status_code == 200
    submitted.refresh_from_db()
    assert submitted.status == WorkflowStatus.CANCELLED
    assert set(Task.objects.values_list("status", flat=True)) == {TaskStatus.CANCELLED}
    html = response.content.decode()
    assert "cancelled" in html and 'id="cancel-workflow"' not in html
    again = client.post(f"/workflows/{submitted.workflow_id}/cancel/", follow=True)
    assert b"Not cancelled" in again.content  # finished: refused with the reason, not a server error


def test_navigation_links_tokens_and_admin_only_for_admins(demo_world):
    html = demo_world.client(demo_world.researcher).get("/").content.decode()
    assert 'href="/tokens/"' in html and 'href="/admin/"' not in html
    assert 'href="/admin/"' in demo_world.client(demo_world.admin).get("/").content.decode()


def test_signing_in_without_next_lands_on_the_catalog(client, db):
    from tests.factories import UserFactory

    UserFactory(username="newcomer")
    response = client.post("/login/", {"username": "newcomer", "password": "password"})
    assert response.status_code == 302 and response["Location"] == "/"
