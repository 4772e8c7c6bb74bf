"""My workflows and the API tokens page in a real browser at 1440 and 390 px (issue 35, point 7): a queued
workflow's reason reads in full on a phone (a card, not a clipped cell), the filters narrow the list, a new
token's Copy button puts the secret on the clipboard, and Revoke is on the screen at 390 px; no page-level
sideways scroll, no script error. Screenshots: var/screenshots/my-workflows-*.png, tokens-*.png."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from access.models import APIToken
from pools.models import Pool
from tests.e2e.looks import DESKTOP, PHONE, collect_failures, shoot
from tests.e2e.test_submit_preview import sign_in
from tests.factories import TokenFactory, WorkflowFactory
from tests.integration.conftest import demo_pools, reference_config  # noqa: F401  (fixtures)
from tests.selfservice.conftest import OTHER, TRAINING, demo_world  # noqa: F401  (fixture)

REASON = (
    "project robotics: 8 of 8 guaranteed H100 GPUs in use; asks for 16 H100 GPUs, 4 free in node pool "
    "h100-nodes-of-the-training-cluster; position 2 in the queue"
)
# The cells of the tokens table whose text is wider than the cell (it runs into the next one): their texts
CELLS_TOO_NARROW = """() => [...document.querySelectorAll('#tokens td')]
  .filter(cell => cell.scrollWidth > cell.clientWidth).map(cell => cell.textContent.trim())"""


@pytest.mark.django_db(transaction=True)
def test_my_workflows_and_tokens_at_both_widths(page, live_server, demo_world):  # noqa: F811
    base, failures = live_server.url, collect_failures(page)
    training, other = Pool.objects.get(name=TRAINING), Pool.objects.get(name=OTHER)
    WorkflowFactory(
        pool=training, submitted_by=demo_world.researcher, status="QUEUED", workflow_id="grasping-policy-sweep-12",
        queue_reason={"text": REASON, "position": 2},
    )  # fmt: skip
    for n in range(3):
        WorkflowFactory(pool=other, submitted_by=demo_world.researcher, status="COMPLETED", workflow_id=f"eval-{n}")
    # the README's token (--expires 1d), used since: "in 23 hours, 59 minutes" beside "2 minutes ago" on a phone
    now = timezone.now()
    TokenFactory(
        user=demo_world.researcher, name="readme-1796422346", expires_at=now + timedelta(hours=23, minutes=59),
        last_used_at=now - timedelta(minutes=2),
    )  # fmt: skip
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=base)
    sign_in(page, base, demo_world.researcher.username, "/workflows/")

    overflow = shoot(page, f"{base}/workflows/", "my-workflows", ready="#workflow-rows")
    page.set_viewport_size({"width": PHONE, "height": 844})
    page.goto(f"{base}/workflows/")
    reason = page.locator(".quota-why").first
    assert reason.inner_text().startswith("#2 in queue: project robotics")
    box, card = reason.bounding_box(), page.locator(".table-scroll").first.bounding_box()
    assert box["x"] >= card["x"] and box["x"] + box["width"] <= card["x"] + card["width"]  # not clipped
    page.select_option("select[name=status]", "COMPLETED")
    page.click(".wf-filters button[type=submit]")
    page.wait_for_url("**status=COMPLETED**")
    assert page.locator("#workflow-rows a.mono").count() == 3
    overflow.update({f"filtered-{w}": v for w, v in shoot(page, page.url, "my-workflows-filtered").items()})

    page.set_viewport_size({"width": DESKTOP, "height": 900})
    page.goto(f"{base}/tokens/")
    page.fill("input[name=name]", "laptop-of-the-researcher")
    page.click("#token-form button[type=submit]")
    # "Copied" shows for two seconds: record each label the button takes, so a busy machine cannot miss it
    page.evaluate(
        "window.copyLabels = []; const b = document.querySelector('#copy-token');"
        "new MutationObserver(() => window.copyLabels.push(b.textContent))"
        ".observe(b, {childList: true, characterData: true, subtree: true})"
    )
    page.click("#copy-token")
    page.wait_for_function("window.copyLabels.length > 0")
    assert page.evaluate("window.copyLabels[0]") == "Copied"
    secret = page.locator("#new-token").inner_text().strip()
    assert page.evaluate("navigator.clipboard.readText()") == secret
    assert APIToken.objects.filter(name="laptop-of-the-researcher").exists()
    overflow.update({f"tokens-{w}": v for w, v in shoot(page, f"{base}/tokens/", "tokens").items()})
    revoke = page.locator("#tokens button.danger").first
    assert revoke.is_visible()
    box = revoke.bounding_box()
    assert box["x"] + box["width"] <= PHONE  # the last width shot is the phone's: Revoke on the screen
    assert page.evaluate(CELLS_TOO_NARROW) == []  # each time wraps inside its own cell, none runs into the next
    assert not any(overflow.values()), overflow
    assert failures == []
