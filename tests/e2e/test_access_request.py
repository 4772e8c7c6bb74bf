"""Access request and approval in a real browser: a user without a role asks for a pool, an admin approves
it in the admin console, and the user's catalog shows the pool as usable."""

from __future__ import annotations

import pytest

from selfservice.models import AccessRequest, RequestStatus
from tests.e2e.test_submit_preview import sign_in
from tests.integration.conftest import demo_pools, reference_config  # noqa: F401  (fixtures)
from tests.selfservice.conftest import PASSWORD, TRAINING, demo_world  # noqa: F401  (fixture)


@pytest.mark.django_db(transaction=True)
def test_access_request_and_approval(page, new_page, live_server, demo_world):  # noqa: F811
    base = live_server.url

    # 1. The user asks.
    sign_in(page, base, "nobody")
    page.wait_for_selector(f'#pool-{TRAINING}[data-usable="no"]')
    page.click(f"#pool-{TRAINING} .request-access")
    page.wait_for_url(f"{base}/requests/?pool={TRAINING}#access")
    assert page.input_value("#id_pool") == TRAINING
    page.fill("#id_justification", "grasping experiments for the Q3 demo")
    page.click("#request-access-submit")
    page.wait_for_url(f"{base}/requests/#mine")
    assert "Waiting for an administrator" in page.text_content("#my-requests")
    request = AccessRequest.objects.get()

    # 2. An admin approves in the admin console (its own sign-in form).
    admin = new_page()
    admin.goto(f"{base}/admin/login/?next=/admin/selfservice/accessrequest/")
    admin.fill("input[name=username]", "boss")
    admin.fill("input[name=password]", PASSWORD)
    admin.click("button[type=submit]")
    admin.wait_for_url(f"{base}/admin/selfservice/accessrequest/")
    admin.click(f'a[href="/admin/selfservice/accessrequest/{request.pk}/change/"]')
    admin.wait_for_url(f"{base}/admin/selfservice/accessrequest/{request.pk}/change/")
    admin.click("text=Decide…")
    admin.wait_for_url(f"{base}/admin/selfservice/accessrequest/{request.pk}/decide/")
    assert "grasping experiments" in admin.text_content("#request-summary")
    admin.check("input[name=decision][value=approve]")
    admin.fill("textarea[name=comment]", "approved for Q3")
    admin.click("#decide-submit")
    admin.wait_for_url(f"{base}/admin/selfservice/accessrequest/?status__exact=PENDING")
    assert "now holds role osmo-robotics" in admin.content()
    request.refresh_from_db()
    assert request.status == RequestStatus.APPROVED

    # 3. The user sees the decision, and the pool is usable in the catalog.
    page.reload()
    assert "approved for Q3" in page.text_content("#my-requests")
    page.goto(f"{base}/")
    page.wait_for_selector(f'#pool-{TRAINING}[data-usable="yes"]')
    assert page.is_visible(f'#pool-{TRAINING} a[href="/pools/{TRAINING}/submit/"]')
