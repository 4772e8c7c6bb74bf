"""`osmo login URL --method token`, the JWT it lives on, and how every verb's errors reach the CLI,
played against gunicorn as OSMO's client 6.4 sends them (tests/osmo_cli/client.py)."""

from __future__ import annotations

import time

import jwt
import pytest
import requests

from access.services import tokens
from tests.factories import TokenFactory
from tests.osmo_cli.client import OsmoClient, OsmoUserError, jwt_claims
from tests.polling import PATIENCE


def test_token_login_exchanges_the_api_token_for_a_jwt_carrying_its_roles(osmo_server, osmo_user, osmo_login):
    user = osmo_user("osmo-user", "osmo-vision", first_name="Ada", last_name="Lovelace")
    cli = osmo_login(user, roles=["osmo-vision"])
    claims = jwt_claims(cli.jwt)
    assert cli.name == "Ada Lovelace"  # login.py LoginStorage.name: claims['name'] → "Welcome Ada Lovelace."
    assert claims["roles"] == ["osmo-vision"] and claims["sub"] == user.username
    assert 0 < claims["exp"] - time.time() <= 900  # login.py Jwt.expired reads claims['exp']

    answer = requests.post(
        f"{osmo_server.url}/api/auth/jwt/access_token", json={"token": cli.api_token}, timeout=PATIENCE
    )
    assert answer.status_code == 200 and answer.json()["error"] is None
    assert answer.json()["expires_at"] == jwt_claims(answer.json()["token"])["exp"]


def test_the_jwt_acts_as_its_token_and_only_as_long_as_the_token_lives(osmo_user, osmo_login):
    user = osmo_user("osmo-user")
    cli = osmo_login(user)
    names = [token["name"] for token in cli.request("GET", "api/auth/access_token")]
    assert len(names) == 1  # the token the CLI logged in with

    tokens.revoke(user, names[0])  # as `osmo token delete` or the /tokens/ page would
    with pytest.raises(OsmoUserError) as refused:
        cli.request("GET", "api/auth/access_token")
    assert refused.value.status_code == 401 and "revoked" in refused.value.message
    assert refused.value.payload["error_code"] == "USER"


def test_the_jwt_carries_no_more_than_its_token(osmo_user, osmo_login):
    cli = osmo_login(osmo_user("osmo-user", "osmo-vision"), roles=["osmo-vision"])  # no auth:Token in it
    with pytest.raises(OsmoUserError) as refused:
        cli.request("GET", "api/auth/access_token")
    assert refused.value.status_code == 403 and refused.value.payload["error_code"] == "USER"


def test_an_expired_jwt_is_refreshed_by_the_client_and_refused_by_the_server(osmo_server, osmo_user, osmo_login):
    cli = osmo_login(osmo_user("osmo-user"))
    claims = {**jwt_claims(cli.jwt), "exp": int(time.time()) - 60}
    from access.services.jwt_tokens import ALGORITHM, signing_key

    stale = jwt.encode(claims, signing_key(), algorithm=ALGORITHM)
    answer = requests.get(
        f"{osmo_server.url}/api/auth/access_token", headers={"Authorization": f"Bearer {stale}"}, timeout=PATIENCE
    )
    assert answer.status_code == 401 and "expired" in answer.json()["message"]

    cli.jwt = stale  # the CLI notices before sending (login.py refresh_id_token) and exchanges again
    assert len(cli.request("GET", "api/auth/access_token")) == 1 and cli.refreshes == 1


def test_a_forged_jwt_is_refused(osmo_server, osmo_user, osmo_login):
    cli = osmo_login(osmo_user("osmo-user"))
    forged = jwt.encode(
        {**jwt_claims(cli.jwt), "roles": ["osmo-admin"]},
        "not the portal's key, though long enough for HS256",
        algorithm="HS256",
    )
    answer = requests.get(
        f"{osmo_server.url}/api/auth/access_token", headers={"Authorization": f"Bearer {forged}"}, timeout=PATIENCE
    )
    assert answer.status_code == 401 and answer.json()["error_code"] == "USER"
    assert "not valid" in answer.json()["message"]


@pytest.mark.parametrize("presented", ["", "pp_unknown-secret", "not-a-portal-token", None])
def test_a_bad_api_token_gets_a_clean_error_at_login(osmo_server, transactional_db, presented):
    with pytest.raises(Exception) as refused:
        OsmoClient(osmo_server.url, presented)
    assert refused.value.status_code == 401  # login.py token_login: "Unable to refresh login token (401): …"
    answer = requests.post(f"{osmo_server.url}/api/auth/jwt/access_token", json={"token": presented}, timeout=PATIENCE)
    assert answer.status_code == 401 and answer.json()["field"] == "token"
    assert answer.json()["error_code"] == "USER" and answer.json()["message"]


def test_osmos_older_get_spelling_of_the_exchange(osmo_server, osmo_user, transactional_db):
    token = TokenFactory(user=osmo_user("osmo-user"))
    answer = requests.get(
        f"{osmo_server.url}/api/auth/jwt/access_token", params={"access_token": token.secret}, timeout=PATIENCE
    )
    assert answer.status_code == 200 and jwt_claims(answer.json()["token"])["token_name"] == token.name


def test_a_doubled_slash_reaches_the_api_under_gunicorn(osmo_user, osmo_login):
    cli = osmo_login(osmo_user("osmo-user"))
    assert cli.request("GET", "/api/auth/access_token") == cli.request("GET", "api/auth/access_token")


def test_errors_carry_osmos_error_code_and_message(osmo_user, osmo_login):
    cli = osmo_login(osmo_user("osmo-user"))
    with pytest.raises(OsmoUserError) as missing:
        cli.request("GET", "api/no/such/thing")
    assert missing.value.status_code == 404 and missing.value.payload["error_code"] == "NOTFOUND"
    assert missing.value.message == "path '/api/no/such/thing': no API resource at this path"

    with pytest.raises(OsmoUserError) as invalid:
        cli.request("POST", "api/auth/access_token/bad name!", params={"expires_at": "2020-01-01"})
    assert invalid.value.status_code == 400 and invalid.value.payload["error_code"] == "USER"
    assert invalid.value.message.startswith("name 'bad name!': ")


def test_a_token_is_described_by_its_secret_only_to_its_owner(osmo_user, osmo_login):
    cli = osmo_login(osmo_user("osmo-user"))
    mine = cli.request("GET", "api/auth/access_token", params={"access_token": cli.api_token})
    assert mine["token_name"] == jwt_claims(cli.jwt)["token_name"]
    someone_elses = TokenFactory(user=osmo_user("osmo-user"))
    with pytest.raises(OsmoUserError) as refused:
        cli.request("GET", "api/auth/access_token", params={"access_token": someone_elses.secret})
    assert refused.value.status_code == 404 and refused.value.payload["field"] == "access_token"
