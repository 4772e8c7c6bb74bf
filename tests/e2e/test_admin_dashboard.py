"""The admin console in a real browser at 1440 px and 390 px: the dashboard home and the list and change pages
of pools, platforms, backends, roles, API tokens and access requests; no script or resource errors, the
dashboard's cards stack on a phone with nothing wider than the screen, and the sync confirmation shows its
progress on the button. Screenshots: var/screenshots/admin-*.png."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from access.models import Role
from access.services import roles
from clusters.models import Node
from pools.models import Platform, Pool
from selfservice.models import AccessRequest, PoolRequest
from tests.e2e.looks import PHONE, SHOTS, collect_failures, page_overflow, shoot, sign_in_admin
from tests.factories import BackendFactory, TokenFactory, UserFactory, WorkflowFactory
from tests.quotas.conftest import (  # noqa: F401  (fixtures)
    H100_PRODUCT,
    backend,
    kube_server,
    pools_config,
    synced,
)
from tests.selfservice.conftest import PASSWORD
from workflows.models import Workflow, WorkflowStatus

pytestmark = pytest.mark.heavy


def admin_world(backend):  # noqa: F811
    roles.ensure_builtin_roles()  # a transactional test's flush removed the migration's roles
    get_user_model().objects.create_superuser("root", "root@example.com", PASSWORD)
    Node.objects.filter(gpu_product=H100_PRODUCT).update(gpu_used=7)
    train = Pool.objects.get(name="train")
    for name in ("ann", "a-researcher-with-a-rather-long-user-name"):
        AccessRequest.objects.create(requester=UserFactory(username=name), pool=train, justification="experiments")
    PoolRequest.objects.create(
        requester=UserFactory(username="dee"), team="vision", hardware="H100", gpus=8, purpose="x"
    )
    now = timezone.now()
    for hours, status in ((0, "QUEUED"), (2, "QUEUED"), (1, "FAILED"), (5, "FAILED_PREEMPTED"), (9, "FAILED")):
        made = WorkflowFactory(pool=train, status=status)
        finished = None if status == WorkflowStatus.QUEUED else now - timedelta(hours=hours)
        Workflow.objects.filter(pk=made.pk).update(created_at=now - timedelta(hours=hours), finished_at=finished)
    BackendFactory(
        name="lab-cluster-in-the-basement",
        sync_status="degraded",
        last_error="Get https://lab.example:6443/api/v1/nodes: dial tcp 10.0.0.7:6443: connect: connection refused",
        last_error_at=now,
    )
    TokenFactory(user=get_user_model().objects.get(username="ann"), name="laptop")


@pytest.mark.django_db(transaction=True)
def test_admin_pages_look_right_at_both_widths(page, live_server, synced):  # noqa: F811
    base = live_server.url
    admin_world(synced)
    failures = collect_failures(page)
    sign_in_admin(page, base, "root")
    print(f"screenshots in {SHOTS}")
    train = Pool.objects.get(name="train")
    pages = [
        ("admin-dashboard", "/admin/", "#dashboard"),
        ("admin-pools", "/admin/pools/pool/", "#result_list"),
        ("admin-pool", f"/admin/pools/pool/{train.pk}/change/", "#pool_form"),
        (
            "admin-platform",
            f"/admin/pools/platform/{Platform.objects.get(pool=train, name='h100').pk}/change/",
            "#content form[method=post]",
        ),
        ("admin-backends", "/admin/clusters/backend/", "#result_list"),
        ("admin-roles", "/admin/access/role/", "#result_list"),
        (
            "admin-role",
            f"/admin/access/role/{Role.objects.get(name='osmo-admin').pk}/change/",
            "#content form[method=post]",
        ),
        ("admin-tokens", "/admin/access/apitoken/", "#result_list"),
        ("admin-access-requests", "/admin/selfservice/accessrequest/?status__exact=PENDING", "#result_list"),
        ("admin-sync", f"/admin/clusters/backend/{synced.pk}/sync-inventory/", "#confirm-submit"),
    ]
    overflow = {name: shoot(page, f"{base}{path}", name, ready=ready) for name, path, ready in pages}
    assert {name: widths for name, widths in overflow.items() if any(widths.values())} == {}  # nothing too wide
    assert failures == []

    # the dashboard's cards stack on a phone: one column, each within the screen
    page.set_viewport_size({"width": PHONE, "height": 844})
    page.goto(f"{base}/admin/")
    boxes = [page.locator(f"#{card}").bounding_box() for card in ("dash-requests", "dash-clusters", "dash-gpu-pools")]
    assert boxes[0]["y"] < boxes[1]["y"] < boxes[2]["y"]
    assert all(box["x"] >= 0 and box["x"] + box["width"] <= PHONE for box in boxes)
    assert page_overflow(page) == 0
    assert page.locator('#dash-gpu-pools li[data-pool="research"] .dash-bar span').get_attribute("style") == (
        "width:88%"  # 28 of 32 GPUs
    )


@pytest.mark.django_db(transaction=True)
def test_sync_shows_progress_on_its_button(page, live_server, synced):  # noqa: F811
    base = live_server.url
    admin_world(synced)
    failures = collect_failures(page)
    sign_in_admin(page, base, "root")
    page.goto(f"{base}/admin/clusters/backend/{synced.pk}/sync-inventory/")
    # hold the submission in the page, to see what the button says while the server works
    page.evaluate("document.querySelector('#confirm-action form').addEventListener('submit', e => e.preventDefault())")
    page.click("#confirm-submit")
    button = page.locator("#confirm-submit")
    assert button.text_content().strip() == "Syncing…"
    page.wait_for_function("document.querySelector('#confirm-submit').disabled")
    assert button.get_attribute("aria-busy") == "true"
    # the backends list's "Sync inventory now" action says so too
    page.goto(f"{base}/admin/clusters/backend/")
    page.check(f'input[name="_selected_action"][value="{synced.pk}"]')
    page.select_option("select[name=action]", "sync_inventory")
    page.evaluate("document.querySelector('#changelist-form').addEventListener('submit', e => e.preventDefault())")
    page.click("#changelist-form button[name=index]")
    assert page.text_content("#changelist-form button[name=index]").strip() == "Syncing…"
    # and for real: the sync runs and the backend page says what it found
    page.goto(f"{base}/admin/clusters/backend/{synced.pk}/sync-inventory/")
    page.click("#confirm-submit")
    page.wait_for_url(f"{base}/admin/clusters/backend/{synced.pk}/change/")
    assert "nodes (" in page.text_content("body")
    assert failures == []
