"""The whole sign-in in a real browser: the IdP's login form, the no-role page, sign-out at the IdP, and a
sign-in that lands with a role."""

from __future__ import annotations

import pytest
from django.contrib.auth import SESSION_KEY, get_user_model
from django.contrib.sessions.backends.db import SessionStore

from tests.oidc.idp import make_role, role_names

pytest_plugins = ["tests.oidc.fixtures"]  # the test IdP: oidc_idp, oidc
User = get_user_model()


def sign_in_at_idp(page, login: str) -> None:
    page.wait_for_selector('input[name="login"]')
    page.fill('input[name="login"]', login)
    page.fill('input[name="password"]', "any-password")
    page.click('button[type="submit"]')


def signed_in_user_id(page) -> str | None:
    cookie = next((c for c in page.context.cookies() if c["name"] == "sessionid"), None)
    return SessionStore(session_key=cookie["value"]).get(SESSION_KEY) if cookie else None


@pytest.mark.django_db(transaction=True)
def test_browser_sign_in_no_role_sign_out_then_sign_in_with_a_role(page, live_server, oidc):
    base = live_server.url
    oidc.set_account("wendy", groups=["/research/gpu-lab"], roles=["default-roles-osmo"])

    # 1. First sign-in: no group maps to a role yet -> the 403 page says so and lists the groups received.
    page.goto(f"{base}/oidc/authenticate/")
    with page.expect_response(lambda r: r.url == f"{base}/oidc/no-role/") as no_role:
        sign_in_at_idp(page, "wendy")
    assert no_role.value.status == 403
    assert "You are signed in as wendy but hold no portal role" in " ".join(
        page.text_content("#no-role-message").split()
    )
    assert "/research/gpu-lab" in page.text_content("#groups-received")
    assert "default-roles-osmo" in page.text_content("#realm-roles-received")
    user = User.objects.get(username="wendy")
    assert signed_in_user_id(page) == str(user.pk)

    # 2. An admin maps the group to a role; the user signs out (at the IdP too) and in again.
    make_role("osmo-gpu-lab", external_roles=["gpu-lab"])
    page.click("text=Sign out")
    page.click('button[name="logout"]')  # the IdP asks to confirm the end of its session
    page.wait_for_url(f"{base}/oidc/signed-out/")
    assert signed_in_user_id(page) is None
    page.click("text=Sign in again")
    sign_in_at_idp(page, "wendy")  # the IdP session ended, so its login form again
    page.wait_for_url(f"{base}/")  # the home page
    assert "wendy" in page.text_content("header")

    assert signed_in_user_id(page) == str(user.pk)
    assert role_names(user) == {"osmo-gpu-lab"}
    assert User.objects.filter(username__startswith="wendy").count() == 1
