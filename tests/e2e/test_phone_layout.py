"""Every self-service page a researcher sees fits a 390 px phone and a 1440 px desktop: no page-level
horizontal scroll (tables scroll inside their cards), the top bar collapses into a menu on the phone, no
script or resource errors. Screenshots of every page at both widths go to var/screenshots/ (printed). A task
waiting for a machine pool says so in a line of text on the phone too (the task table becomes cards)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from clusters.models import Backend
from kubesim import EmulatorServer
from tests.e2e.looks import DESKTOP, PHONE, SHOTS, collect_failures, shoot
from tests.e2e.test_submit_preview import sign_in
from tests.factories import TaskFactory, TokenFactory, WorkflowFactory
from tests.integration.conftest import demo_pools, reference_config  # noqa: F401  (fixtures)
from tests.selfservice.conftest import OTHER, TRAINING, demo_world, person  # noqa: F401  (fixture)
from tests.workflows.test_waiting_for_machine_pool import WAITS, gpu, waiting_task  # noqa: F401  (fixture)
from workflows.models import TaskStatus, Workflow, WorkflowStatus

LONG_NAME = "phone-layout-check-with-a-long-name"
SPEC = f"""\
version: 2
workflow:
  name: {LONG_NAME}
  resources:
    default: {{cpu: 8, gpu: 1, memory: 64Gi, storage: 100Gi}}
  tasks:
  - name: train-the-grasping-policy-on-all-cameras
    image: nvcr.io/nvidia/pytorch:24.01-py3
    command: [python, train.py, --config, configs/grasping/all-cameras-with-depth-and-proprioception.yaml]
"""


def researcher_history(world, cluster_url: str) -> Workflow:
    """What a researcher has after a while: a running workflow with events, two requests, an API token."""
    Backend.objects.update(api_url=cluster_url)  # its pod goes to a simulated cluster of this test's own
    client = world.client(world.researcher)
    submitted = client.post(f"/pools/{TRAINING}/submit/", {"spec": SPEC, "priority": "NORMAL"})
    assert submitted.status_code == 302, submitted.context and submitted.context.get("error")
    workflow = Workflow.objects.get()
    task = workflow.tasks.get()
    started = timezone.now() - timedelta(minutes=3)
    task.status, task.node, task.started_at = TaskStatus.RUNNING, "h100-node-0", started
    task.save(update_fields=["status", "node", "started_at"])
    Workflow.objects.filter(pk=workflow.pk).update(status=WorkflowStatus.RUNNING, started_at=started)
    task.events.create(kind="SCHEDULED", at=started, message=f"pod {task.pod_name} was scheduled on node h100-node-0")
    task.events.create(kind="RUNNING", at=started, message=f"container main of {task.pod_name} started")
    assert (
        client.post(
            "/requests/",
            {"kind": "access", "pool": OTHER, "justification": "evaluation runs for the grasping benchmark " * 3},
        ).status_code
        == 302
    )
    assert (
        client.post(
            "/requests/",
            {
                "kind": "pool",
                "team": "vision",
                "hardware": "NVIDIA-H100-80GB-HBM3",
                "gpus": "16",
                "purpose": "train detectors",
            },
        ).status_code
        == 302
    )
    TokenFactory(user=world.researcher, name="nightly-evaluation-pipeline-on-the-shared-runner")
    return workflow


def page_width(page) -> dict:
    return page.evaluate("() => ({scroll: document.documentElement.scrollWidth, view: window.innerWidth})")


@pytest.mark.django_db(transaction=True)
def test_every_self_service_page_fits_a_phone_and_a_desktop(page, live_server, demo_world):  # noqa: F811
    base = live_server.url
    with EmulatorServer(host="127.0.0.1", port=0, fleet="demo") as cluster:
        workflow = researcher_history(demo_world, cluster.url)
    failures = collect_failures(page)  # a resource that did not load or a script error
    SHOTS.mkdir(parents=True, exist_ok=True)
    print(f"screenshots in {SHOTS}")
    sign_in(page, base, "researcher")

    pages = {
        "catalog": "/",
        "pool": f"/pools/{TRAINING}/",
        "submit": f"/pools/{TRAINING}/submit/",
        "workflow": f"/workflows/{workflow.workflow_id}/",
        "workflows": "/workflows/",
        "requests": f"/requests/?pool={OTHER}",
        "tokens": "/tokens/",
    }
    too_wide = {}
    for width in (PHONE, DESKTOP):
        page.set_viewport_size({"width": width, "height": 844 if width == PHONE else 900})
        for name, path in pages.items():
            page.goto(f"{base}{path}")
            if name == "submit":
                page.wait_for_function("() => window.htmx !== undefined")
                page.click("#preview-button")
                page.wait_for_selector("#verdict-main, [id^=verdict-]")
            if name == "workflow":
                page.wait_for_selector(f"#task-{workflow.tasks.get().name}")
            page.screenshot(path=str(SHOTS / f"{name}-{width}.png"), full_page=True)
            measured = page_width(page)
            print(f"{name} at {width}: page {measured['scroll']} px wide")
            if measured["scroll"] > measured["view"]:
                too_wide[f"{name}@{width}"] = measured["scroll"]
        assert_navigation(page, base, width)
    assert too_wide == {}
    assert failures == []


def assert_navigation(page, base: str, width: int) -> None:
    """Phone: the links hide behind a menu button that opens them; desktop: the links show, no button."""
    page.goto(f"{base}/")
    tokens_link = page.locator('.mainnav a[href="/tokens/"]')
    menu = page.locator("#nav-toggle")
    if width == PHONE:
        assert menu.is_visible() and not tokens_link.is_visible()
        topbar_height = page.evaluate("() => document.querySelector('.topbar').getBoundingClientRect().height")
        assert topbar_height <= 64  # collapsed, not a tall block of wrapped links
        menu.click()
        assert tokens_link.is_visible() and page.locator(".account .username").is_visible()
        page.screenshot(path=str(SHOTS / f"menu-open-{width}.png"), full_page=True)
        assert page_width(page)["scroll"] <= width
        tokens_link.click()
        page.wait_for_url(f"{base}/tokens/")
    else:
        assert not menu.is_visible() and tokens_link.is_visible()


@pytest.mark.django_db(transaction=True)
def test_a_task_waiting_for_a_machine_pool_reads_well_on_a_phone(page, live_server, gpu):  # noqa: F811
    """The task table becomes one card per task on a phone: what a waiting task waits for reads as a line of
    text across the card, not one word per line in a squeezed status column under the table's scroll. At
    1440 px it stays a table, the words in the task's status cell. Screenshots: workflow-waiting-<width>.png."""
    owner = person("waiter")
    workflow = WorkflowFactory(pool=gpu, submitted_by=owner, status="WAITING")
    TaskFactory(workflow=workflow, name="prepare-the-dataset", platform="cpu", status=TaskStatus.RUNNING, node="cpu-1")
    waiting_task(workflow, "gpu-t4-spot", name="train-the-grasping-policy")
    failures = collect_failures(page)
    base, path = live_server.url, f"/workflows/{workflow.workflow_id}/"
    sign_in(page, base, "waiter", next_path=path)
    status = "#waiting-train-the-grasping-policy"
    overflow = shoot(page, f"{base}{path}", "workflow-waiting", ready=status, widths=(DESKTOP, PHONE))
    assert overflow == {DESKTOP: 0, PHONE: 0}  # nothing wider than the screen at either width
    assert page.locator(status).text_content() == WAITS
    box = page.locator(status).bounding_box()
    lines = page.evaluate(
        "s => { const e = document.querySelector(s); const r = document.createRange(); r.selectNodeContents(e);"
        " return new Set([...r.getClientRects()].map(b => Math.round(b.top))).size; }",
        status,
    )
    card = page.locator("#task-train-the-grasping-policy").bounding_box()
    assert box["width"] >= 200 and lines <= 3, (box, lines)  # a line or two of text, not a word per line
    assert box["x"] >= card["x"] and box["x"] + box["width"] <= card["x"] + card["width"] <= PHONE  # on the card
    node = page.locator("#task-prepare-the-dataset td[data-label=Node]")
    assert node.is_visible() and node.text_content() == "cpu-1"  # every column shows without scrolling sideways
    assert failures == []
