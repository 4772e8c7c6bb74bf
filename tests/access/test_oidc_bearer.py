"""`access.oidc.bearer.verify_bearer_token`: OIDC JWTs for the REST API, checked locally against the IdP's JWKS."""

from __future__ import annotations

import time

import jwt
import pytest
import requests
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group

import access.oidc.backend
import access.oidc.provider
from access.models import Identity
from access.oidc.bearer import verify_bearer_token
from tests.oidc.idp import CLIENT_ID, make_role, new_rsa_key, role_names

pytest_plugins = ["tests.oidc.fixtures"]  # the test IdP: oidc_idp, oidc, login_driver
User = get_user_model()
pytestmark = pytest.mark.django_db


def keycloak_access_token(idp, sub="svc-7", **claims):
    """Shaped like a Keycloak access token: aud=account, azp=<client>, groups and realm roles."""
    return idp.mint(
        {
            "sub": sub,
            "aud": "account",
            "azp": CLIENT_ID,
            "typ": "Bearer",
            "preferred_username": sub,
            "groups": ["/osmo-team"],
            "realm_access": {"roles": ["osmo-user"]},
        }
        | claims
    )


def test_id_token_from_a_real_sign_in_is_accepted(login_driver, oidc):
    make_role("osmo-team")
    oidc.set_account("paul", groups=["/osmo-team"])
    login_driver.login("paul")
    id_token = login_driver.client.session["oidc_id_token"]

    assert verify_bearer_token(id_token) == User.objects.get(username="paul")


def test_keycloak_access_token_maps_to_the_identity_and_syncs_roles(oidc):
    make_role("osmo-team")
    make_role("osmo-user")
    make_role("team-force", "force")
    user = User.objects.create_user("quinn")
    Identity.objects.create(user=user, issuer=oidc.issuer, subject="kc-quinn")
    user.groups.add(Group.objects.get(name="team-force"))

    assert verify_bearer_token(keycloak_access_token(oidc, sub="kc-quinn", preferred_username="q")) == user
    assert role_names(user) == {"osmo-team", "osmo-user"}  # force role gone: not in the token's groups
    assert User.objects.count() == 1


def test_unknown_subject_gets_a_user_on_first_call(oidc):
    make_role("osmo-team")
    user = verify_bearer_token(keycloak_access_token(oidc, sub="kc-new", preferred_username="rita"))
    assert user.username == "rita" and user.identity.subject == "kc-new" and user.identity.last_login_at is None
    assert role_names(user) == {"osmo-team", "osmo-user"}  # osmo-user: the built-in role, a realm role here


def test_a_token_without_role_claims_leaves_roles_alone(oidc):
    make_role("team-force", "force")
    user = User.objects.create_user("sam")
    Identity.objects.create(user=user, issuer=oidc.issuer, subject="kc-sam")
    user.groups.add(Group.objects.get(name="team-force"))
    token = oidc.mint({"sub": "kc-sam", "aud": CLIENT_ID})  # minted without the group/role mappers
    assert verify_bearer_token(token) == user
    assert role_names(user) == {"team-force"}


@pytest.mark.parametrize(
    "make_token",
    [
        pytest.param(lambda idp: keycloak_access_token(idp, azp="another-client"), id="other-client"),
        pytest.param(lambda idp: keycloak_access_token(idp, iss="http://127.0.0.1:1/realms/evil"), id="wrong-issuer"),
        pytest.param(lambda idp: keycloak_access_token(idp, exp=int(time.time()) - 120), id="expired"),
        pytest.param(lambda idp: idp.mint({"sub": "x", "aud": CLIENT_ID}, key=new_rsa_key()), id="bad-signature"),
        pytest.param(lambda idp: idp.mint({"sub": "x", "aud": CLIENT_ID}, alg="HS256"), id="hs256-client-secret"),
        pytest.param(
            lambda idp: jwt.encode(
                {
                    "sub": "x",
                    "aud": CLIENT_ID,
                    "iss": idp.issuer,
                    "exp": int(time.time()) + 60,
                    "iat": int(time.time()),
                },
                None,
                algorithm="none",
            ),
            id="alg-none",
        ),
        pytest.param(lambda idp: idp.mint({"aud": CLIENT_ID}), id="no-subject"),
        pytest.param(lambda idp: idp.mint({"sub": "x", "aud": CLIENT_ID, "exp": None}), id="no-expiry"),
        pytest.param(lambda idp: "not-a-jwt", id="opaque-string"),
        pytest.param(lambda idp: "a.b.c", id="garbage-jwt"),
    ],
)
def test_untrustworthy_bearer_tokens_are_refused(oidc, make_token):
    assert verify_bearer_token(make_token(oidc)) is None
    assert not User.objects.exists()


def test_extra_audiences_can_be_accepted(oidc, settings):
    token = keycloak_access_token(oidc, azp="osmo-device", sub="cli-user")
    assert verify_bearer_token(token) is None
    settings.OIDC_BEARER_AUDIENCES = ["osmo-device"]  # e.g. OSMO's CLI client in the same realm
    assert verify_bearer_token(token).identity.subject == "cli-user"


def test_deactivated_user_is_refused_even_with_a_cached_token(oidc):
    token = keycloak_access_token(oidc, sub="kc-tom")
    user = verify_bearer_token(token)
    User.objects.filter(pk=user.pk).update(is_active=False)
    assert verify_bearer_token(token) is None
    assert verify_bearer_token(keycloak_access_token(oidc, sub="kc-tom")) is None


def test_oidc_off_accepts_no_bearer_token(oidc, settings):
    token = keycloak_access_token(oidc)
    settings.OIDC_ISSUER = ""
    assert verify_bearer_token(token) is None


def test_no_call_to_the_idp_per_request(oidc, monkeypatch):
    """After the first token, discovery and keys are cached: the IdP may be down and tokens still verify."""
    assert verify_bearer_token(keycloak_access_token(oidc, sub="warm-up")) is not None

    def no_network(*args, **kwargs):
        raise AssertionError("the IdP was called while verifying a bearer token")

    monkeypatch.setattr(access.oidc.provider.requests, "get", no_network)
    monkeypatch.setattr(access.oidc.provider.requests, "post", no_network)
    for n in range(5):
        assert verify_bearer_token(keycloak_access_token(oidc, sub=f"user-{n}")) is not None


def test_roles_are_synced_once_per_token(oidc, monkeypatch):
    calls = []
    real_sync = access.oidc.backend.sync_roles
    monkeypatch.setattr(
        access.oidc.backend, "sync_roles", lambda user, claims: calls.append(user) or real_sync(user, claims)
    )
    token = keycloak_access_token(oidc, sub="kc-uma")
    for _ in range(3):
        assert verify_bearer_token(token) is not None
    assert len(calls) == 1


def test_unknown_kid_refetches_the_keys_once_then_accepts_a_rotated_key(oidc, monkeypatch, settings):
    settings.OIDC_JWKS_MIN_REFETCH_SECONDS = 0
    assert verify_bearer_token(keycloak_access_token(oidc, sub="before-rotation")) is not None

    rotated = new_rsa_key()
    rotated_jwk = jwt.algorithms.RSAAlgorithm.to_jwk(rotated.public_key(), as_dict=True)
    rotated_jwk |= {"kid": "rotated", "alg": "RS256", "use": "sig"}
    jwks_calls = []
    real_get = requests.get

    def idp_after_rotation(url, *args, **kwargs):
        response = real_get(url, *args, **kwargs)
        if url.endswith("/jwks"):
            jwks_calls.append(url)
            keys = response.json()["keys"] + [rotated_jwk]
            response._content = requests.compat.json.dumps({"keys": keys}).encode()
        return response

    monkeypatch.setattr(access.oidc.provider.requests, "get", idp_after_rotation)

    token = oidc.mint({"sub": "after-rotation", "aud": CLIENT_ID}, key=rotated, kid="rotated")
    assert verify_bearer_token(token) is not None
    assert len(jwks_calls) == 1  # one refetch for the unknown kid
    assert verify_bearer_token(oidc.mint({"sub": "again", "aud": CLIENT_ID}, key=rotated, kid="rotated"))
    assert len(jwks_calls) == 1  # and then cached

    # a kid nobody publishes: refetched (rate-limited), still refused
    forged = oidc.mint({"sub": "x", "aud": CLIENT_ID}, key=new_rsa_key(), kid="nobody")
    assert verify_bearer_token(forged) is None
    assert len(jwks_calls) == 2


def test_unknown_kid_refetch_is_rate_limited(oidc, monkeypatch):
    assert verify_bearer_token(keycloak_access_token(oidc, sub="warm")) is not None
    jwks_calls = []
    real_get = requests.get
    monkeypatch.setattr(
        access.oidc.provider.requests, "get", lambda url, *a, **k: jwks_calls.append(url) or real_get(url, *a, **k)
    )
    for n in range(5):
        assert verify_bearer_token(oidc.mint({"sub": "x", "aud": CLIENT_ID}, kid=f"random-{n}")) is None
    assert jwks_calls == []  # within OIDC_JWKS_MIN_REFETCH_SECONDS of the last fetch: no call
    assert verify_bearer_token(keycloak_access_token(oidc, sub="still-fine")) is not None


def test_the_rest_api_accepts_oidc_bearer_tokens(oidc, client):
    """Wired into access.api.authentication: an OIDC access token authenticates an API call."""
    token = keycloak_access_token(oidc, sub="kc-api", preferred_username="vera")  # realm role osmo-user
    response = client.get("/api/pool", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 200, response.content
    assert User.objects.get(identity__subject="kc-api").username == "vera"

    forged = oidc.mint({"sub": "kc-api", "aud": CLIENT_ID}, key=new_rsa_key())
    assert client.get("/api/pool", HTTP_AUTHORIZATION=f"Bearer {forged}").status_code == 401
