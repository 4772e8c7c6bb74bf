"""The admin's pod preview and a revision's diff in a real browser, at 1440 and 390 px: no script or resource
errors, nothing wider than the screen, screenshots in var/screenshots/ (admin-preview-*, revision-diff-*,
rollback-confirm-*)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from configs import store
from configs.models import Revision
from pools.management.commands.seed_demo import demo_documents
from pools.models import Pool
from tests.e2e.looks import DESKTOP, PHONE, collect_failures, shoot, sign_in_admin
from tests.integration.conftest import CLI
from tests.selfservice.conftest import TRAINING, make_world


@pytest.fixture
def world(transactional_db):
    for config_type, documents in demo_documents():
        store.apply_many(config_type, documents, CLI)
    make_world()  # the fleet, and boss (osmo-admin)
    store.apply("POD_TEMPLATE", "gpu-diff", {"spec": {"nodeSelector": {"gpu": "a100"}, "priorityClassName": "p"}}, CLI)
    store.apply("POD_TEMPLATE", "gpu-diff", {"spec": {"nodeSelector": {"gpu": "h100"}}}, CLI)
    return Pool.objects.get(name=TRAINING)


def test_admin_preview_and_revision_diff_look_right(page, live_server, world):
    base = live_server.url
    failures = collect_failures(page)
    sign_in_admin(page, base, "boss")
    preview = f"{base}/admin/pools/pool/{world.pk}/preview/"
    good = f"{preview}?platform={world.default_platform}&task=train&cpu=8&gpu=2&memory=64Gi&storage=100Gi"
    bad = f"{preview}?platform={world.default_platform}&task=Bad_Name&cpu=lots&gpu=1.5&variables=oops"
    revision = Revision.objects.get(config_type="POD_TEMPLATE", name="gpu-diff", revision=2)
    diff = f"{base}/admin/configs/revision/{revision.pk}/change/?compare=1"
    first = Revision.objects.get(config_type="POD_TEMPLATE", name="gpu-diff", revision=1)
    rollback = base + reverse("admin:configs_revision_roll_back_to_this", args=[first.pk])  # a GET: asks first
    overflow = {
        "admin-preview": shoot(page, good, "admin-preview", ready="#preview-task-train"),
        "admin-preview-errors": shoot(page, bad, "admin-preview-errors", ready="#preview-errors"),
        **{
            f"revision-diff-{mode}": shoot(page, f"{diff}&diff={mode}", f"revision-diff-{mode}", ready="#diff-table")
            for mode in ("unified", "split")
        },
        "rollback-confirm": shoot(page, f"{rollback}?diff=split", "rollback-confirm", ready="#diff-table"),
    }
    # the layout toggle is a link: following it switches the layout on the same revision
    page.set_viewport_size({"width": DESKTOP, "height": 900})
    page.goto(diff)
    page.click("#diff-mode-split")
    assert page.get_attribute("#revision-diff", "data-mode") == "split"
    assert page.locator("td.cell-add").first.text_content() == "    gpu: h100"
    page.goto(bad)
    assert page.locator("#preview-errors li").count() == 4
    assert failures == []
    assert {name: widths[PHONE] for name, widths in overflow.items() if widths[PHONE]} == {}
