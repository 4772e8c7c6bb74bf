"""The admin's workflow page and node pool form in a real browser (issue #35, points 2 and 3).

Workflow: a running workflow's admin page has Cancel, Task logs and Live page; its timeline's event names stay
on one line (no "SUBMITT ED") at 1440 and 390 px; the log page shows the task's lines; cancel asks first.
Node pool: the add form's selector rows, the preview of the nodes a label takes and where each comes from
(no error banner when it works; a selector the save would refuse is refused at its field), an error at its field,
and a save with a change description. Screenshots: var/screenshots/admin-workflow-*, admin-workflow-logs-*,
admin-node-pool-preview-*, admin-node-pool-preview-refused-* and admin-node-pool-error-*.
"""

from __future__ import annotations

import pytest

from clusters.models import Backend
from configs.models import Revision
from kubesim import EmulatorServer
from pools.models import Pool
from quotas.models import NodePool
from tests.e2e.looks import DESKTOP, PHONE, collect_failures, shoot, sign_in_admin
from tests.e2e.test_workflow_live import running_workflow
from tests.factories import WorkflowFactory
from tests.integration.conftest import demo_pools, reference_config  # noqa: F401  (fixtures)
from tests.selfservice.conftest import demo_world  # noqa: F401  (fixture)
from workflows.models import Workflow

KINDS = "#fieldset-0-3 .wf-kind, .wf-events .wf-kind"


def one_line_each(page, selector: str) -> bool:
    """Every cell the selector finds is one line of text (a broken word would make it two)."""
    return page.eval_on_selector_all(
        selector,
        "cells => cells.every(c => { const r = document.createRange(); r.selectNodeContents(c); "
        "return r.getClientRects().length <= 1; })",
    )


@pytest.mark.django_db(transaction=True)
def test_the_admin_workflow_page_cancels_reads_logs_and_keeps_event_names_whole(page, live_server, demo_world):  # noqa: F811
    base = live_server.url
    with EmulatorServer(
        host="127.0.0.1", port=0, fleet="demo", kubelet={"start_delay": 0, "run_seconds": 3600}
    ) as cluster:
        workflow = running_workflow(demo_world, cluster)
        failures = collect_failures(page)
        change = f"/admin/workflows/workflow/{workflow.pk}/change/"
        sign_in_admin(page, base, "boss", next_path=change)
        for name in ("Cancel workflow", "Task logs", "Live page"):
            assert page.get_by_role("link", name=name).count() >= 1, name
        overflow = shoot(page, f"{base}{change}", "admin-workflow", ready=".wf-events")
        for width in (DESKTOP, PHONE):
            page.set_viewport_size({"width": width, "height": 900})
            page.goto(f"{base}{change}")
            assert one_line_each(page, ".wf-events .wf-kind"), width
            assert "SUBMITTED" in page.locator(".wf-events").text_content()
        assert overflow == {DESKTOP: 0, PHONE: 0}

        logs = f"{base}/admin/workflows/workflow/{workflow.pk}/logs/"
        assert shoot(page, logs, "admin-workflow-logs", ready="#log-lines") == {DESKTOP: 0, PHONE: 0}
        assert "[simulated]" in page.locator("#log-lines").text_content()

        page.set_viewport_size({"width": DESKTOP, "height": 900})
        page.goto(f"{base}{change}")
        page.get_by_role("link", name="Cancel workflow").first.click()
        page.wait_for_selector("#confirm-action")
        page.fill("#confirm-message", "stuck on a bad node")
        page.click("#confirm-submit")
        page.wait_for_url(f"{base}{change}")
        assert Workflow.objects.get(pk=workflow.pk).status == "CANCELLED"
        assert "cancelled" in page.content()
    assert failures == []


@pytest.mark.django_db(transaction=True)
def test_the_workflow_list_filters_by_a_pool_found_by_its_search(page, live_server, demo_world):  # noqa: F811
    """The list's pool filter is a search (a fleet's pools are not listed as links): type part of a name, pick
    the pool, apply; only its workflows remain, at both widths."""
    base, url = live_server.url, "/admin/workflows/workflow/"
    pool, other = Pool.objects.order_by("name")[:2]
    shown, hidden = WorkflowFactory(pool=pool, workflow_id="in-the-pool-1"), WorkflowFactory(pool=other)
    failures = collect_failures(page)
    sign_in_admin(page, base, "boss", next_path=url)
    for width in (DESKTOP, PHONE):
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(f"{base}{url}")
        page.locator('a[x-on\\:click="filterOpen = true"]').click()
        page.locator("#id_pool__id__exact + .select2 .select2-selection").click()
        page.locator(".select2-search__field").fill(pool.name[1:-1])
        page.get_by_role("option", name=pool.name, exact=True).click()
        page.get_by_role("button", name="Apply Filters").click()
        page.wait_for_url(f"**pool__id__exact={pool.pk}**")
        rows = page.locator("#result_list").text_content()
        assert shown.workflow_id in rows and hidden.workflow_id not in rows, width
    assert failures == []


@pytest.mark.django_db(transaction=True)
def test_the_node_pool_form_previews_the_nodes_and_saves_one_revision(page, live_server, demo_world):  # noqa: F811
    base, failures = live_server.url, collect_failures(page)
    backend = Backend.objects.order_by("name").first()
    add = f"{base}/admin/quotas/nodepool/add/"
    sign_in_admin(page, base, "boss", next_path="/admin/quotas/nodepool/add/")

    def fill(name: str, key: str, value: str) -> None:
        page.fill("#id_name", name)
        page.select_option("#id_backend", str(backend.pk))
        page.select_option("#id_selector_kind", "label")
        page.fill("#id_label_key", key)
        page.fill("#id_label_value", value)

    for width in (DESKTOP, PHONE):
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(add)
        fill("t4s", "nvidia.com/gpu.product", "Tesla-T4")
        page.click("#preview-nodes")
        page.wait_for_selector("#np-taken")
        page.screenshot(path=str(shoot_path("admin-node-pool-preview", width)), full_page=True)
        assert page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth") == 0, width
        # a preview that works is no error: no "Please correct the errors below", no error at any field
        assert page.locator(".errornote").count() == 0 and page.locator(".errorlist").count() == 0, width
        assert "nothing was saved" in page.locator("#nodes-preview").text_content()
    taken = page.locator("#np-taken td:first-child").all_text_contents()
    assert taken and not NodePool.objects.filter(name="t4s").exists()  # previewed, not saved

    # a selector the save would refuse is refused by the preview too, at its field; the nodes still show
    for width in (DESKTOP, PHONE):
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(add)
        fill("bad", "pool-portal/node-pool", "x")
        page.click("#preview-nodes")
        refused = "labels under pool-portal/ are the portal's own"
        page.locator(".field-label_key .errorlist", has_text=refused).wait_for()
        assert page.locator(".errornote").count() == 1  # Unfold's "Please correct the errors below."
        assert "would be in this node pool" in page.locator("#nodes-preview").text_content()
        page.screenshot(path=str(shoot_path("admin-node-pool-preview-refused", width)), full_page=True)
        assert page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth") == 0, width
    assert not NodePool.objects.filter(name="bad").exists()

    page.set_viewport_size({"width": DESKTOP, "height": 900})
    page.goto(add)
    fill("bad", "pool-portal/node-pool", "x")  # the portal's own label: the handler refuses it at the field
    page.click("button[name=_save]")
    page.wait_for_selector("text=labels under pool-portal/ are the portal's own")
    assert not NodePool.objects.filter(name="bad").exists()
    page.screenshot(path=str(shoot_path("admin-node-pool-error", DESKTOP)), full_page=True)

    page.goto(add)
    fill("t4s", "nvidia.com/gpu.product", "Tesla-T4")
    page.fill("#id_change_description", "T4 nodes get their own quotas")
    page.click("button[name=_save]")
    page.wait_for_url(f"{base}/admin/quotas/nodepool/")
    revision = Revision.objects.get(config_type="NODE_POOL", name="t4s")
    assert revision.description == "T4 nodes get their own quotas"
    assert shoot(page, f"{base}/admin/quotas/nodepool/", "admin-node-pools", widths=(DESKTOP,)) == {DESKTOP: 0}
    wider = page.evaluate(  # the table itself fits: no sideways scroll inside its box either
        "() => { const t = document.getElementById('result_list'); "
        "return t.scrollWidth - t.parentElement.clientWidth; }"
    )
    assert wider <= 0, wider
    assert failures == []


def shoot_path(name: str, width: int):
    from tests.e2e.looks import SHOTS

    SHOTS.mkdir(parents=True, exist_ok=True)
    return SHOTS / f"{name}-{width}.png"
