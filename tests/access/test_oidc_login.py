"""Sign-in through a real OpenID provider (tests/oidc/provider.js), driven with `requests` + Django's client.

Each test: the IdP on loopback, accounts written by the test, roles created by the test.
"""

from __future__ import annotations

import json
import re
import time
from urllib.parse import parse_qs, urljoin, urlsplit

import jwt
import pytest
import requests
from django.contrib.auth import SESSION_KEY, get_user_model
from django.contrib.auth.models import Group

import access.oidc.backend
import access.oidc.provider
from access.models import AuditEvent, Identity
from tests.oidc.idp import CLIENT_ID, LoginDriver, b64url_json, make_role, new_rsa_key, role_names
from tests.polling import PATIENCE

pytest_plugins = ["tests.oidc.fixtures"]  # the test IdP: oidc_idp, oidc, login_driver
User = get_user_model()
pytestmark = pytest.mark.django_db


def signed_in_user(client):
    user_id = client.session.get(SESSION_KEY)
    return User.objects.get(pk=user_id) if user_id else None


# --------------------------------------------------------------------------- first and returning sign-ins


def test_first_login_creates_user_matched_on_subject_with_roles(login_driver, oidc):
    make_role("osmo-team")
    make_role("osmo-gpu")
    make_role("osmo-user")
    make_role("osmo-ml", external_roles=["ml-researchers"])  # mapped, but alice is not in that group
    oidc.set_account("alice", groups=["/osmo-team", "/parent/osmo-gpu"], roles=["osmo-user"])

    authorize_url = login_driver.start(next_url="/admin/")
    query = parse_qs(urlsplit(authorize_url).query)
    assert authorize_url.startswith(f"{oidc.issuer}/auth?")
    assert query["code_challenge_method"] == ["S256"] and query["code_challenge"][0]  # PKCE
    assert query["nonce"][0] and query["state"][0] and query["client_id"] == [CLIENT_ID]
    assert set(query["scope"][0].split()) >= {"openid", "email", "profile"}

    response = login_driver.callback(login_driver.at_idp(authorize_url, "alice"))

    assert response.status_code == 302 and response["Location"] == "/admin/"
    user = signed_in_user(login_driver.client)
    assert user.username == "alice" and user.email == "alice@example.test"
    assert not user.has_usable_password()
    identity = Identity.objects.get(user=user)
    assert (identity.issuer, identity.subject) == (oidc.issuer, "alice") and identity.last_login_at
    assert role_names(user) == {"osmo-team", "osmo-gpu", "osmo-user"}
    assert login_driver.client.session["oidc_id_token"]  # kept for id_token_hint at logout
    login = AuditEvent.objects.get(action="auth.login")
    assert (login.actor, login.source, login.outcome) == (user, "oidc", "ok")
    granted = AuditEvent.objects.filter(action="role.grant", target="user/alice")
    assert {event.detail["role"] for event in granted} == {"osmo-team", "osmo-gpu", "osmo-user"}


def test_returning_user_roles_follow_each_sync_mode(login_driver, oidc):
    make_role("team-import", "import")
    make_role("team-force", "force")
    make_role("team-ignore", "ignore")
    make_role("team-new", "import")
    oidc.set_account("dana", groups=["/team-import", "/team-force", "/team-ignore"])

    assert login_driver.login("dana").status_code == 302
    user = User.objects.get(username="dana")
    assert role_names(user) == {"team-import", "team-force"}  # ignore: the IdP never grants it
    user.groups.add(Group.objects.get(name="team-ignore"))  # an admin grants it by hand

    oidc.set_account("dana", groups=["/team-new"])  # the IdP's groups change between sign-ins
    again = LoginDriver(login_driver.client.__class__(), oidc)  # a fresh browser
    assert again.login("dana").status_code == 302

    assert User.objects.filter(identity__subject="dana").count() == 1  # the same user, matched on (iss, sub)
    assert signed_in_user(again.client) == user
    # import keeps, force removes, ignore is untouched, a newly mapped group adds
    assert role_names(user) == {"team-import", "team-ignore", "team-new"}


def test_external_role_mapping_and_full_paths(login_driver, oidc):
    make_role("osmo-research", external_roles=["lab/gpu-users"])
    make_role("osmo-realm", external_roles=["portal-realm-role"])
    oidc.set_account("erin", groups=["/lab/gpu-users"], roles=["portal-realm-role"])
    assert login_driver.login("erin").status_code == 302
    assert role_names(User.objects.get(username="erin")) == {"osmo-research", "osmo-realm"}


def test_matched_by_subject_never_by_email(login_driver, oidc):
    make_role("osmo-team")
    local = User.objects.create_user("frank", email="frank@example.test", password="local-pass-123")
    oidc.set_account("frank", groups=["/osmo-team"], email="frank@example.test")

    assert login_driver.login("frank").status_code == 302

    user = signed_in_user(login_driver.client)
    assert user != local and user.username == "frank-2"  # the name was taken: a suffix, not a takeover
    assert not Identity.objects.filter(user=local).exists() and role_names(local) == set()


def test_username_from_preferred_username_with_collisions(login_driver, oidc):
    make_role("osmo-team")
    oidc.set_account("3f1c-uuid-1", groups=["/osmo-team"], preferred_username="gina")
    oidc.set_account("3f1c-uuid-2", groups=["/osmo-team"], preferred_username="gina")
    assert login_driver.login("3f1c-uuid-1").status_code == 302
    assert LoginDriver(login_driver.client.__class__(), oidc).login("3f1c-uuid-2").status_code == 302
    subjects = dict(Identity.objects.values_list("user__username", "subject"))
    assert subjects == {"gina": "3f1c-uuid-1", "gina-2": "3f1c-uuid-2"}


def test_client_secret_basic_works_too(login_driver, oidc, settings):
    settings.OIDC_TOKEN_USE_BASIC_AUTH = True
    make_role("osmo-team")
    oidc.set_account("hank", groups=["/osmo-team"])
    assert login_driver.login("hank").status_code == 302
    assert signed_in_user(login_driver.client).username == "hank"


# --------------------------------------------------------------------------- no portal role


def test_user_without_portal_role_gets_a_clear_403_page(login_driver, oidc):
    make_role("osmo-team")  # osmo-default (built in, implicit) does not count as a portal role
    oidc.set_account("ivan", groups=["/unmapped-group", "/parent/other"], roles=["osmo-default"])

    response = login_driver.login("ivan")

    assert response.status_code == 302 and response["Location"] == "/oidc/no-role/"
    page = login_driver.client.get("/oidc/no-role/")
    assert page.status_code == 403
    text = page.content.decode()
    assert "You are signed in as <strong>ivan</strong> but hold no portal" in text and "ask an admin" in text
    assert "/unmapped-group" in text and "/parent/other" in text and "osmo-default" in text
    assert signed_in_user(login_driver.client).username == "ivan"  # signed in, so sign-out works


def test_no_role_page_sends_users_with_a_role_on(login_driver, oidc):
    make_role("osmo-team")
    oidc.set_account("judy", groups=["/osmo-team"])
    login_driver.login("judy")
    assert login_driver.client.get("/oidc/no-role/")["Location"] == "/"  # the home page


# --------------------------------------------------------------------------- refused sign-ins


def test_unknown_user_is_refused_at_the_idp(login_driver, oidc):
    result = login_driver.at_idp(login_driver.start(), "mallory")
    assert isinstance(result, requests.Response) and result.status_code == 200  # never sent back with a code
    assert "Invalid username or password" in result.text
    assert not User.objects.filter(username="mallory").exists()


def test_user_deleted_at_the_idp_before_the_code_exchange_is_refused(login_driver, oidc):
    oidc.set_account("kate", groups=["/osmo-team"])
    back = login_driver.at_idp(login_driver.start(), "kate")
    oidc.remove_account("kate")  # the token endpoint now answers invalid_grant

    response = login_driver.callback(back)

    assert response.status_code == 302 and response["Location"] == "/oidc/failed/"
    page = login_driver.client.get("/oidc/failed/")
    assert page.status_code == 403 and "refused the sign-in" in page.content.decode()
    assert signed_in_user(login_driver.client) is None and not User.objects.filter(username="kate").exists()


def test_cancel_at_the_idp_ends_on_the_failure_page(login_driver, oidc):
    back = login_driver.cancel_at_idp(login_driver.start())
    assert "error=access_denied" in back
    assert login_driver.callback(back)["Location"] == "/oidc/failed/"
    assert "cancelled" in login_driver.client.get("/oidc/failed/").content.decode()


def test_replayed_callback_is_refused_cleanly(login_driver, oidc):
    make_role("osmo-team")
    oidc.set_account("liam", groups=["/osmo-team"])
    back = login_driver.at_idp(login_driver.start(), "liam")
    assert login_driver.callback(back).status_code == 302
    fresh = login_driver.client.__class__()
    replay = LoginDriver(fresh, oidc).callback(back)  # another browser with a stolen callback URL
    assert replay.status_code == 302 and replay["Location"] == "/oidc/failed/"
    assert "expired or was already used" in fresh.get("/oidc/failed/").content.decode()


def test_callback_from_another_issuer_is_refused(login_driver, oidc):
    """RFC 9207: the authorization response names its issuer; a mixed-up answer is refused."""
    oidc.set_account("otto", groups=["/osmo-team"])
    back = login_driver.at_idp(login_driver.start(), "otto")
    assert f"iss={oidc.issuer.replace(':', '%3A').replace('/', '%2F')}" in back
    response = login_driver.callback(back.replace("iss=", "iss=http%3A%2F%2F127.0.0.1%3A1%2Fx&ignored="))
    assert response["Location"] == "/oidc/failed/" and signed_in_user(login_driver.client) is None


def test_switching_from_a_local_session_keeps_the_id_token_for_logout(login_driver, oidc, admin_user):
    make_role("osmo-team")
    oidc.set_account("pia", groups=["/osmo-team"])
    login_driver.client.force_login(admin_user, backend="django.contrib.auth.backends.ModelBackend")
    assert login_driver.login("pia").status_code == 302
    assert signed_in_user(login_driver.client).username == "pia"
    location = login_driver.client.post("/oidc/logout/")["Location"]
    assert "id_token_hint=" in location and location.startswith(oidc.issuer)


def test_deactivated_user_is_refused(login_driver, oidc):
    make_role("osmo-team")
    oidc.set_account("mona", groups=["/osmo-team"])
    login_driver.login("mona")
    User.objects.filter(username="mona").update(is_active=False)
    again = LoginDriver(login_driver.client.__class__(), oidc)
    assert again.login("mona")["Location"] == "/oidc/failed/"
    assert signed_in_user(again.client) is None
    assert login_driver.client.get("/oidc/no-role/").status_code == 302  # the old session no longer counts
    assert login_driver.client.get("/oidc/no-role/")["Location"] == "/oidc/authenticate/"


def _tamper_signature(token, idp, claims):
    header, _payload, signature = token.split(".")
    forged = jwt.utils.base64url_encode(json.dumps(claims | {"sub": "admin"}).encode()).decode()
    return f"{header}.{forged}.{signature}"


@pytest.mark.parametrize(
    "forge",
    [
        pytest.param(_tamper_signature, id="payload-changed-bad-signature"),
        pytest.param(lambda token, idp, c: idp.mint(c, key=new_rsa_key()), id="signed-by-another-key"),
        pytest.param(lambda token, idp, c: idp.mint(c | {"aud": "another-client"}), id="wrong-audience"),
        pytest.param(lambda token, idp, c: idp.mint(c | {"azp": "another-client"}), id="wrong-azp"),
        pytest.param(lambda token, idp, c: idp.mint(c | {"iss": "http://127.0.0.1:1/evil"}), id="wrong-issuer"),
        pytest.param(
            lambda token, idp, c: idp.mint(c | {"iat": int(time.time()) - 7200, "exp": int(time.time()) - 3600}),
            id="expired",
        ),
        pytest.param(lambda token, idp, c: idp.mint(c | {"nonce": "replayed"}), id="wrong-nonce"),
        pytest.param(lambda token, idp, c: idp.mint(c, alg="HS256"), id="hs256-with-client-secret"),
        pytest.param(lambda token, idp, c: jwt.encode(c, None, algorithm="none"), id="alg-none"),
        pytest.param(lambda token, idp, c: idp.mint(c, kid="unknown-kid"), id="unknown-kid"),
    ],
)
def test_untrustworthy_id_tokens_are_refused(login_driver, oidc, monkeypatch, forge):
    """The IdP's real answer, with its ID token swapped for a forged one: refused, no user, no 500."""
    oidc.set_account("admin-victim", groups=["/osmo-team"])
    make_role("osmo-team")
    real_get_token = access.oidc.backend.PortalOIDCBackend.get_token

    def forged_get_token(self, payload):
        answer = real_get_token(self, payload)
        claims = b64url_json(answer["id_token"].split(".")[1])
        answer["id_token"] = forge(answer["id_token"], oidc, {k: v for k, v in claims.items() if k != "jti"})
        return answer

    monkeypatch.setattr(access.oidc.backend.PortalOIDCBackend, "get_token", forged_get_token)

    response = login_driver.login("admin-victim")

    assert response.status_code == 302 and response["Location"] == "/oidc/failed/"
    page = login_driver.client.get("/oidc/failed/")
    assert page.status_code == 403 and "could not be verified" in page.content.decode()
    assert signed_in_user(login_driver.client) is None
    assert not User.objects.exists()
    assert "oidc_id_token" not in login_driver.client.session
    refused = AuditEvent.objects.get(action="auth.login")
    assert (refused.outcome, refused.source, refused.detail) == ("denied", "oidc", {"reason": "token"})


def test_unreachable_idp_gives_a_503_page_not_a_crash(client, oidc, settings):
    settings.OIDC_ISSUER = "http://127.0.0.1:9"  # discard port: nothing listens
    response = client.get("/oidc/authenticate/")
    assert response.status_code == 503 and b"cannot be reached" in response.content


# --------------------------------------------------------------------------- logout


def test_logout_ends_the_session_at_the_idp_with_id_token_hint(login_driver, oidc):
    make_role("osmo-team")
    oidc.set_account("nina", groups=["/osmo-team"])
    login_driver.login("nina")
    id_token = login_driver.client.session["oidc_id_token"]
    end_session = oidc.discovery()["end_session_endpoint"]

    assert login_driver.client.get("/oidc/logout/").status_code == 405  # a GET (an <img>) cannot log out
    response = login_driver.client.post("/oidc/logout/")

    assert response.status_code == 302
    location = response["Location"]
    assert location.startswith(end_session + "?")
    query = parse_qs(urlsplit(location).query)
    assert query["id_token_hint"] == [id_token]
    assert query["post_logout_redirect_uri"] == ["http://testserver/oidc/signed-out/"]
    assert query["client_id"] == [CLIENT_ID]
    assert signed_in_user(login_driver.client) is None

    # The IdP accepts the hint: it asks to confirm, then sends the browser back to the portal.
    confirm = login_driver.browser.get(location, timeout=PATIENCE)
    assert confirm.status_code == 200, confirm.text[:300]
    action = re.search(r'<form[^>]*action="([^"]+)"', confirm.text).group(1)
    form = dict(re.findall(r'<input[^>]*name="([^"]+)"[^>]*value="([^"]*)"', confirm.text))
    done = login_driver.browser.post(
        urljoin(confirm.url, action), data=form | {"logout": "yes"}, allow_redirects=False, timeout=PATIENCE
    )
    assert done.status_code in (302, 303)
    assert done.headers["Location"] == "http://testserver/oidc/signed-out/"
    assert login_driver.client.get("/oidc/signed-out/").status_code == 200


def test_logout_of_a_local_account_stays_local(client, oidc, admin_user):
    client.force_login(admin_user, backend="django.contrib.auth.backends.ModelBackend")
    response = client.post("/oidc/logout/")
    assert response["Location"] == "http://testserver/oidc/signed-out/"
    assert signed_in_user(client) is None


# --------------------------------------------------------------------------- configuration


def test_discovery_is_fetched_lazily_and_cached(login_driver, oidc, monkeypatch):
    make_role("osmo-team")
    oidc.set_account("olga", groups=["/osmo-team"])
    fetched = []
    real_get = requests.get

    def counting_get(url, *args, **kwargs):
        fetched.append(url)
        return real_get(url, *args, **kwargs)

    monkeypatch.setattr(access.oidc.provider.requests, "get", counting_get)
    login_driver.login("olga")
    LoginDriver(login_driver.client.__class__(), oidc).login("olga")

    assert sum(url.endswith("/.well-known/openid-configuration") for url in fetched) == 1
    assert sum(url.endswith("/jwks") for url in fetched) == 1
    assert sum(url.endswith("/me") for url in fetched) == 2  # userinfo: once per sign-in


def test_oidc_off_leaves_local_accounts_alone(client, settings, admin_user):
    settings.OIDC_ISSUER = ""
    assert client.get("/oidc/authenticate/").status_code == 404
    assert client.get("/oidc/callback/", {"code": "x", "state": "y"}).status_code == 404
    response = client.post("/admin/login/?next=/admin/", {"username": "root-admin", "password": "password"})
    assert response.status_code == 302 and signed_in_user(client) == admin_user


def test_local_login_still_works_with_oidc_on(client, oidc, admin_user):
    response = client.post("/admin/login/?next=/admin/", {"username": "root-admin", "password": "password"})
    assert response.status_code == 302 and signed_in_user(client) == admin_user
    assert client.session["_auth_user_backend"] == "django.contrib.auth.backends.ModelBackend"
