"""The quota grid's "Preview this change" (docs/quotas.md, "What-if") in a real browser at 1440 px and 390 px:
a week of recorded use replayed with vision's h100 quota raised, and what the raise does right now: it admits
vision's queued 8-GPU workflow (h100 lends nothing over quota, speech holds its 24). No script or resource
errors, nothing wider than the screen, none of the preview's text cut off (nor the grid's at 1440 px: on a phone
the grid scrolls inside the page), nothing saved by the preview.
Screenshots: var/screenshots/what-if-preview-*.png."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from configs import revisions, store
from pools.models import Pool
from quotas.models import NodePool
from quotas.services import quotas
from teams.models import Project
from tests.e2e.looks import DESKTOP, PHONE, SHOTS, clipped, collect_failures, page_overflow, sign_in_admin
from tests.e2e.test_usage_page import usage_week
from tests.factories import WorkflowFactory
from tests.quotas.conftest import (  # noqa: F401  (fixtures)
    CLI,
    H100_LABEL,
    backend,
    carved,
    kube_server,
    pools_config,
    synced,
    teams,
)
from usage.models import TaskAttempt, WorkflowRecord
from workflows.models import WorkflowStatus


@pytest.mark.django_db(transaction=True)
def test_the_grid_previews_a_raise_on_a_desktop_and_a_phone(page, live_server, carved, teams):  # noqa: F811
    usage_week(teams)  # a recorded week of use, and three of vision's workflows queued in h100 now
    recorded_h100_week()
    # h100 lends nothing over quota: speech runs its deserved 24 GPUs, vision's 8-GPU run waits (it deserves 0)
    store.apply("NODE_POOL", "h100", {"backend": "sim", "selector": H100_LABEL, "over_quota": False}, CLI)
    quotas.set_quota(None, "h100", "department", "research", "gpu", deserved=32)
    quotas.set_quota(None, "h100", "project", "speech", "gpu", deserved=24)
    waiting = live_h100()
    base, grid = live_server.url, reverse("admin:quotas_nodepool_quotas", args=[NodePool.objects.get(name="h100").pk])
    before = revisions.history("NODE_POOL", "h100")[0].revision
    failures = collect_failures(page)
    sign_in_admin(page, base, "root")
    page.set_viewport_size({"width": DESKTOP, "height": 900})
    page.goto(f"{base}{grid}")
    page.fill('input[name="project:vision:gpu:deserved"]', "8")
    page.click("#preview-button")
    page.wait_for_selector("#what-if-right-now")
    right_now = page.inner_text("#what-if-right-now")
    assert f"h100: admits {waiting.workflow_id}." in right_now and "nothing changes" not in right_now
    assert "vision" in page.inner_text("#what-if-replay")  # the replayed week, side by side
    SHOTS.mkdir(parents=True, exist_ok=True)
    overflow, cut = {}, {}
    for width in (DESKTOP, PHONE):
        page.set_viewport_size({"width": width, "height": 844 if width == PHONE else 900})
        page.screenshot(path=str(SHOTS / f"what-if-preview-{width}.png"), full_page=True)
        overflow[width] = page_overflow(page)
        cut[width] = clipped(page, "#what-if")  # the preview's text whole in the screenshot, at both widths
    assert overflow == {DESKTOP: 0, PHONE: 0}
    assert cut == {DESKTOP: [], PHONE: []}  # on the phone, the replay's rows stack (grid.html's style)
    page.set_viewport_size({"width": DESKTOP, "height": 900})
    assert clipped(page, "#quota-grid form") == []  # the grid's 12 cells a row fit beside the sidebar
    assert revisions.history("NODE_POOL", "h100")[0].revision == before  # the preview saved nothing
    assert failures == []


def live_h100():
    """Speech's three 8-GPU workflows running in h100 for two hours, and vision's 8-GPU one queued behind them:
    the one the raise of vision's quota to 8 admits. Returns it."""
    for index in range(3):
        WorkflowFactory(
            workflow_id=f"speech-run-{index}", pool=Pool.objects.get(name="research"), project=teams_named("speech"),
            node_pool="h100", status=WorkflowStatus.RUNNING, requests={"gpu": 8, "cpu": 0, "memory": 0},
            created_at=timezone.now() - timedelta(hours=2), admitted_at=timezone.now() - timedelta(hours=2),
        )  # fmt: skip
    return WorkflowFactory(
        workflow_id="vision-finetune-8gpu", pool=Pool.objects.get(name="research"), project=teams_named("vision"),
        node_pool="h100", status=WorkflowStatus.QUEUED, requests={"gpu": 8, "cpu": 0, "memory": 0},
        created_at=timezone.now() - timedelta(minutes=20),
    )  # fmt: skip


def teams_named(name: str) -> Project:
    return Project.objects.get(name=name)


def recorded_h100_week() -> None:
    """Each day, speech fills h100 for the morning and vision's 8-GPU run waits for it until noon."""
    from usage.services.rollup import floor_day

    first = floor_day(timezone.now()) - timedelta(days=7)
    for day in range(7):
        morning = first + timedelta(days=day, hours=6)
        runs = [(f"speech-{day}-{i}", "speech", 8, morning, morning, 6) for i in range(4)]
        runs.append((f"vision-{day}", "vision", 8, morning + timedelta(minutes=5), morning + timedelta(hours=6), 3))
        for workflow_id, project, gpus, submitted, started, hours in runs:
            finished = started + timedelta(hours=hours)
            WorkflowRecord.objects.create(
                workflow_id=workflow_id, project=project, department="research", pool="research", node_pool="h100",
                priority="NORMAL", requests={"gpu": gpus}, parts={"h100": {"gpu": gpus}}, submitted_at=submitted,
                admitted_at=started, running_at=started, finished_at=finished, status="COMPLETED",
            )  # fmt: skip
            TaskAttempt.objects.create(
                task_pk=abs(hash(workflow_id)) % 10**9, attempt=0, workflow_id=workflow_id, task="train",
                project=project, department="research", pool="research", platform="h100", node_pool="h100",
                backend="sim", gpu=gpus, started_at=started, ended_at=finished, outcome="completed",
                hourly_cost_micros=gpus * 12_290_000,
            )  # fmt: skip
