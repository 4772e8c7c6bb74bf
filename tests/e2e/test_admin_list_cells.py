"""Admin list cells read whole at 1440 px (issue #35): the node list's header says "GPU product" and its "Last
seen" is one line ("just now", "3 minutes ago"; the time on hover), not a date over four lines; a workflow id
stays on one line (no break at its hyphens) while the workflow list still fits the window.
Screenshots: var/screenshots/admin-node-list-cells-* and admin-workflow-list-cells-*."""

from __future__ import annotations

import pytest
from django.utils import timezone

from pools.models import Pool
from tests.e2e.looks import DESKTOP, collect_failures, shoot, sign_in_admin
from tests.e2e.test_admin_list_widths import WIDTHS
from tests.factories import UserFactory, WorkflowFactory
from tests.integration.conftest import demo_pools, reference_config  # noqa: F401  (fixtures)
from tests.selfservice.conftest import demo_world  # noqa: F401  (fixture)

# how many lines of text each cell the selector finds takes (its text nodes' line boxes)
LINES = """cells => cells.map(cell => {
  const tops = new Set(), walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    if (!walker.currentNode.textContent.trim()) continue;
    const range = document.createRange();
    range.selectNodeContents(walker.currentNode);
    for (const box of range.getClientRects()) if (box.width > 0) tops.add(Math.round(box.top));
  }
  return tops.size;
})"""


@pytest.mark.django_db(transaction=True)
def test_the_node_list_says_gpu_product_and_last_seen_on_one_line(page, live_server, demo_world):  # noqa: F811
    base, url = live_server.url, "/admin/clusters/node/"
    failures = collect_failures(page)
    sign_in_admin(page, base, "boss", next_path=url)
    assert shoot(page, f"{base}{url}", "admin-node-list-cells", ready="#result_list", widths=(DESKTOP,)) == {DESKTOP: 0}
    headers = [text.strip() for text in page.locator("#result_list thead th").all_text_contents()]
    assert "GPU product" in headers and "Last seen" in headers, headers
    seen = page.locator("#result_list td.field-last_seen_ago")
    assert seen.count() > 20 and set(page.eval_on_selector_all("#result_list td.field-last_seen_ago", LINES)) == {1}
    assert seen.first.text_content().strip() == "just now"
    assert str(timezone.now().year) in seen.first.locator("span").get_attribute("title")
    assert failures == []


@pytest.mark.django_db(transaction=True)
def test_workflow_ids_stay_on_one_line_and_the_list_fits(page, live_server, demo_world):  # noqa: F811
    base, url = live_server.url, "/admin/workflows/workflow/"
    pool = Pool.objects.order_by("-name").first()
    who = UserFactory(username="a-researcher-with-a-long-name")
    for n in range(3):
        WorkflowFactory(pool=pool, submitted_by=who, workflow_id=f"nightly-sweep-robotics-training-{n + 10}")
    failures = collect_failures(page)
    sign_in_admin(page, base, "boss", next_path=url)
    assert shoot(page, f"{base}{url}", "admin-workflow-list-cells", ready="#result_list", widths=(DESKTOP,)) == {
        DESKTOP: 0
    }
    assert page.evaluate(WIDTHS) == {"page": 0, "table": 0}
    assert page.eval_on_selector_all("#result_list .field-workflow_id", LINES) == [1, 1, 1]
    assert failures == []
