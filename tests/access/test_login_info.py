"""`GET /api/auth/login`: what `osmo login` reads before signing in (access.oidc.cli_login)."""

from __future__ import annotations

import pytest
import requests

from tests.access.conftest import api
from tests.polling import PATIENCE

pytest_plugins = ["tests.oidc.fixtures"]
pytestmark = pytest.mark.django_db
KEYS = {
    "auth_enabled",
    "device_endpoint",
    "device_client_id",
    "client_id",
    "browser_endpoint",
    "browser_client_id",
    "token_endpoint",
    "logout_endpoint",
}


def test_without_oidc_every_endpoint_is_null_and_the_answer_is_200(settings):
    settings.OIDC_ISSUER = ""
    response = api().get("/api/auth/login")
    assert response.status_code == 200
    assert response.json() == dict.fromkeys(KEYS) | {"auth_enabled": False}


def test_points_at_the_configured_provider(oidc, settings):
    settings.OIDC_CLI_CLIENT_ID = "osmo-cli"
    discovery = oidc.discovery()
    # a stale credential does not matter: the CLI asks before it holds one
    client = api()
    client.credentials(HTTP_AUTHORIZATION="Bearer pp_not-a-token")
    info = client.get("/api/auth/login").json()
    assert set(info) == KEYS and info["auth_enabled"] is True
    assert info["token_endpoint"] == discovery["token_endpoint"]
    assert info["device_endpoint"] == discovery["device_authorization_endpoint"]
    assert info["browser_endpoint"] == discovery["authorization_endpoint"]
    assert info["logout_endpoint"] == discovery["end_session_endpoint"]
    assert (info["device_client_id"], info["client_id"], info["browser_client_id"]) == (
        "osmo-cli",
        "osmo-cli",
        "pool-portal",
    )
    # what the CLI then does with it (src/lib/utils/client.py device_code_login): start a device sign-in
    started = requests.post(
        info["device_endpoint"],
        data={"client_id": info["device_client_id"], "scope": "openid offline_access profile"},
        timeout=PATIENCE,
    ).json()
    assert {"device_code", "user_code", "verification_uri", "interval", "expires_in"} <= set(started)
    polled = requests.post(
        info["token_endpoint"],
        data={
            "grant_type": "urn:ietf:params:oauth:grant-type:device_code",
            "device_code": started["device_code"],
            "client_id": info["device_client_id"],
        },
        timeout=PATIENCE,
    ).json()
    assert polled["error"] == "authorization_pending"


def test_an_unreachable_provider_leaves_the_endpoints_null(settings):
    settings.OIDC_ISSUER = "http://127.0.0.1:9/realms/down"
    settings.OIDC_CLIENT_ID = "pool-portal"
    from access.oidc.bearer import clear_caches

    clear_caches()
    info = api().get("/api/auth/login").json()
    assert info["auth_enabled"] is True and info["token_endpoint"] is None and info["device_client_id"] == "pool-portal"
