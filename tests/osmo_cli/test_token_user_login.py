"""`osmo token set|list|delete`, `osmo user list|create|update|get|delete` and `osmo login`'s discovery
(`GET /api/auth/login`), played against gunicorn as OSMO's client 6.4 sends them (tests/osmo_cli/client.py).

Each request is the one the CLI builds, and each assertion is on a field the CLI reads, with the OSMO source
location in a comment (NVIDIA/OSMO `src/cli/access_token.py`, `src/cli/user.py`, `src/cli/login.py`,
`src/lib/utils/login.py`, `src/lib/utils/client.py`). The user verbs are played with 6.4's path
`api/auth/user…`; a later CLI's `api/auth/users…` (with `external_id` and PATCH) is played too.
"""

from __future__ import annotations

import contextlib
import datetime
import os
import re
from html import unescape
from unittest import mock
from urllib.parse import urljoin

import pytest
import requests

from access.models import APIToken
from tests.factories import WorkflowFactory
from tests.oidc.idp import CLIENT_ID, CLIENT_SECRET
from tests.osmo_cli.client import OsmoClient, OsmoServerError, OsmoUserError
from tests.osmo_cli.server import gunicorn
from tests.polling import PATIENCE

pytest_plugins = ["tests.oidc.fixtures"]

CLI_CLIENT_ID = "osmo-cli"  # the test IdP's public device-code client (tests/oidc/provider.js)
TOKEN_NAME_REGEX = r"^[a-zA-Z]([a-zA-Z0-9_-]*[a-zA-Z0-9])?$"  # src/lib/utils/common.py TOKEN_NAME_REGEX


def default_expiry() -> str:
    # access_token.py setup_parser: --expires-at defaults to utcnow() + 31 days, '%Y-%m-%d'
    return (datetime.datetime.now(datetime.UTC) + datetime.timedelta(days=31)).strftime("%Y-%m-%d")


def token_table_rows(result: list) -> list[tuple]:
    """access_token.py _list_tokens, text mode: the table rows the CLI draws from the answer."""
    rows = []
    for token in result:
        # expires_at: split('T')[0], parsed '%Y-%m-%d'; 'Expired' when that date <= today (UTC)
        expire_date = datetime.datetime.strptime(token["expires_at"].split("T")[0], "%Y-%m-%d").date()
        active = "Expired" if expire_date <= datetime.datetime.now(datetime.UTC).date() else "Active"
        roles = token.get("roles", [])  # ', '.join(roles): a list of strings
        row = {**token, "active": active, "expires_at": expire_date, "roles": ", ".join(roles) if roles else "-"}
        rows.append(tuple(row.get(column, "-") for column in ["token_name", "description", "active", "roles"]))
    return rows


# --- osmo token set | list | delete ------------------------------------------------------------------


def test_token_set_list_delete_for_yourself(osmo_user, osmo_login, osmo_server):
    cli = osmo_login(osmo_user("osmo-user", "osmo-vision"))
    assert re.fullmatch(TOKEN_NAME_REGEX, "ci-token")  # access_token.py _set_token checks the name first

    # access_token.py _set_token: POST api/auth/access_token/NAME, payload None,
    # params {'expires_at', 'description', 'roles': [..]} (roles from repeated -r)
    secret = cli.request(
        "POST",
        "api/auth/access_token/ci-token",
        payload=None,
        params={"expires_at": default_expiry(), "description": "CI runner", "roles": ["osmo-user", "osmo-vision"]},
    )
    assert isinstance(secret, str)  # printed as f'Access token: {result}', or json.dumps({'token': result})
    assert OsmoClient(osmo_server.url, secret).request("GET", "api/auth/access_token")  # `osmo login --method token`

    # access_token.py _list_tokens: GET api/auth/access_token; `if not result` → 'No tokens found'
    listed = cli.request("GET", "api/auth/access_token")
    mine = [token for token in listed if token["token_name"] == "ci-token"]
    assert token_table_rows(mine) == [("ci-token", "CI runner", "Active", "osmo-user, osmo-vision")]

    # access_token.py _delete_token: DELETE api/auth/access_token/NAME; the answer is read as JSON, not shown
    cli.request("DELETE", "api/auth/access_token/ci-token", payload=None, params=None)
    listed = cli.request("GET", "api/auth/access_token")
    assert token_table_rows([t for t in listed if t["token_name"] == "ci-token"])[0][2] == "Expired"
    with pytest.raises(OsmoServerError) as refused:  # login.py token_login: 'Unable to refresh login token'
        OsmoClient(osmo_server.url, secret)
    assert refused.value.status_code == 401


def test_token_set_refusals_reach_the_cli_as_messages(osmo_user, osmo_login):
    cli = osmo_login(osmo_user("osmo-user"))
    with pytest.raises(OsmoUserError) as refused:  # client.py handle_response: 4xx → payload['message']
        cli.request("POST", "api/auth/access_token/x", params={"expires_at": default_expiry(), "roles": ["osmo-admin"]})
    assert refused.value.status_code == 400 and "osmo-admin" in refused.value.message
    assert refused.value.payload["error_code"] == "USER"
    with pytest.raises(OsmoUserError) as refused:
        cli.request("POST", "api/auth/access_token/y", params={"expires_at": "2020-01-01"})
    assert "expires_at" in refused.value.message


def test_token_set_list_delete_for_another_user(osmo_user, osmo_login):
    admin = osmo_login(osmo_user("osmo-admin"))
    osmo_user("osmo-user", username="svc-robot")

    # access_token.py _set_token with --user: POST api/auth/user/USER/access_token/NAME
    secret = admin.request(
        "POST", "api/auth/user/svc-robot/access_token/deploy", params={"expires_at": default_expiry()}
    )
    assert isinstance(secret, str)
    # access_token.py _list_tokens with --user: GET api/auth/user/USER/access_token
    listed = admin.request("GET", "api/auth/user/svc-robot/access_token")
    assert token_table_rows(listed) == [("deploy", "", "Active", "osmo-user")]  # the user's roles, not the admin's
    # access_token.py _delete_token with --user: DELETE api/auth/user/USER/access_token/NAME
    admin.request("DELETE", "api/auth/user/svc-robot/access_token/deploy")
    assert not APIToken.objects.filter(user__username="svc-robot", revoked_at__isnull=True).exists()

    with pytest.raises(OsmoUserError) as refused:  # only user managers may
        osmo_login(osmo_user("osmo-user")).request("GET", "api/auth/user/svc-robot/access_token")
    assert refused.value.status_code == 403


# --- osmo user list | create | update | get | delete ----------------------------------------------------


def test_user_create_get_update_list_delete(osmo_user, osmo_login):
    admin_user = osmo_user("osmo-admin", username="root-admin")
    admin = osmo_login(admin_user)
    osmo_user("osmo-user", username="svc-old")

    # user.py _create_user: POST api/auth/user, payload {'id', 'roles'}; reads result.get('id')
    created = admin.request("POST", "api/auth/user", payload={"id": "ana@example.com", "roles": ["osmo-user"]})
    assert created["id"] == "ana@example.com"

    # user.py _get_user: GET api/auth/user/ID; reads id, created_at (split 'T'), created_by,
    # roles[].role_name / assigned_by / assigned_at (split 'T')
    shown = admin.request("GET", "api/auth/user/ana@example.com")
    assert (shown["id"], shown["created_by"]) == ("ana@example.com", "root-admin")
    assert re.fullmatch(r"\d{4}-\d\d-\d\d", shown["created_at"].split("T")[0])
    assert [(r["role_name"], r["assigned_by"]) for r in shown["roles"]] == [("osmo-user", "root-admin")]
    assert re.fullmatch(r"\d{4}-\d\d-\d\d", shown["roles"][0]["assigned_at"].split("T")[0])

    # user.py _update_user: one POST api/auth/user/ID/roles {'role_name'} per --add-roles,
    # one DELETE api/auth/user/ID/roles/ROLE per --remove-roles, then (json) GET api/auth/user/ID
    admin.request("POST", "api/auth/user/ana@example.com/roles", payload={"role_name": "osmo-admin"})
    admin.request("DELETE", "api/auth/user/ana@example.com/roles/osmo-user")
    updated = admin.request("GET", "api/auth/user/ana@example.com")
    assert [r["role_name"] for r in updated["roles"]] == ["osmo-admin"]

    # user.py _list_users: GET api/auth/user, params {'count': 100, 'id_prefix', 'roles': [..]};
    # reads result['users'] (empty → 'No users found'), total_results, users[].id, users[].created_at
    listed = admin.request("GET", "api/auth/user", params={"count": 100})
    assert listed["total_results"] == len(listed["users"]) == 3
    assert listed["users"][0]["id"] == "ana@example.com"  # newest first, as OSMO's ORDER BY created_at DESC
    by_role = admin.request("GET", "api/auth/user", params={"count": 100, "roles": ["osmo-user", "nobody"]})
    assert [u["id"] for u in by_role["users"]] == ["svc-old"]
    by_prefix = admin.request("GET", "api/auth/user", params={"count": 100, "id_prefix": "ana"})
    assert [u["id"] for u in by_prefix["users"]] == ["ana@example.com"]
    assert admin.request("GET", "api/auth/user", params={"count": 100, "id_prefix": "zz"})["users"] == []

    # user.py _delete_user (--force): DELETE api/auth/user/ID; the answer is read as JSON, not shown
    admin.request("DELETE", "api/auth/user/ana@example.com")
    with pytest.raises(OsmoUserError) as gone:
        admin.request("GET", "api/auth/user/ana@example.com")
    assert gone.value.status_code == 404 and "not found" in gone.value.message


def test_user_delete_keeps_a_workflow_owner_deactivated(osmo_user, osmo_login):
    admin = osmo_login(osmo_user("osmo-admin"))
    owner = osmo_user("osmo-user", username="has-history")
    WorkflowFactory(submitted_by=owner)
    answer = admin.request("DELETE", "api/auth/user/has-history")
    assert answer == {"id": "has-history", "deleted": False, "deactivated": True}
    assert "has-history" not in [u["id"] for u in admin.request("GET", "api/auth/user")["users"]]


def test_user_refusals_reach_the_cli_as_messages(osmo_user, osmo_login):
    admin = osmo_login(osmo_user("osmo-admin"))
    for payload, words in [
        ({"id": "bad name"}, "id"),
        ({"id": "newbie", "roles": ["osmo-nope"]}, "osmo-nope"),
    ]:
        with pytest.raises(OsmoUserError) as refused:
            admin.request("POST", "api/auth/user", payload=payload)
        assert refused.value.status_code == 400 and words in refused.value.message
    with pytest.raises(OsmoUserError) as refused:
        osmo_login(osmo_user("osmo-user")).request("GET", "api/auth/user", params={"count": 100})
    assert refused.value.status_code == 403  # user management is for admins


def test_user_verbs_of_later_clients(osmo_user, osmo_login):
    """A later user.py says `api/auth/users…`, sends `external_id` and PATCHes it, reads last_seen_at."""
    admin = osmo_login(osmo_user("osmo-admin"))
    created = admin.request("POST", "api/auth/users", payload={"id": "svc-later", "roles": ["osmo-user"]})
    assert created["id"] == "svc-later" and created["external_id"] is None and created["last_seen_at"] is None
    listed = admin.request("GET", "api/auth/users", params={"count": 100, "id_prefix": "svc-"})
    assert [(u["id"], u["external_id"], u["last_seen_at"]) for u in listed["users"]] == [("svc-later", None, None)]
    with pytest.raises(OsmoUserError) as refused:  # user.py _update_user --external-id: PATCH api/auth/users/ID
        admin.request("PATCH", "api/auth/users/svc-later", payload={"external_id": "kc-1"})
    assert "OIDC_ISSUER" in refused.value.message  # this server runs without an identity provider
    admin.request("POST", "api/auth/users/svc-later/roles", payload={"role_name": "osmo-admin"})
    assert [r["role_name"] for r in admin.request("GET", "api/auth/users/svc-later")["roles"]] == [
        "osmo-admin",
        "osmo-user",
    ]
    admin.request("DELETE", "api/auth/users/svc-later")


# --- osmo login: GET /api/auth/login -------------------------------------------------------------------


def fetch_login_info(url: str) -> dict:
    """login.py fetch_login_info: requests.get(os.path.join(url, 'api/auth/login')), no credential;
    a status outside 2xx is an error; the answer is read as JSON."""
    result = requests.get(os.path.join(url, "api/auth/login"), timeout=60)
    assert 200 <= result.status_code < 300, result.text
    return result.json()


def test_login_discovery_without_an_identity_provider(osmo_server):
    # cli/login.py _login asks even for --method token (unless --device-endpoint): it must answer 200
    info = fetch_login_info(osmo_server.url)
    assert info["device_endpoint"] is None and info["device_client_id"] is None and info["token_endpoint"] is None


@pytest.fixture(scope="module")
def oidc_server(django_db_setup, django_db_blocker, oidc_idp, tmp_path_factory):
    """A second gunicorn, signing in through the test IdP (its settings come from the environment)."""
    from django.conf import settings
    from django.db import connection

    env = {
        "OIDC_ISSUER": oidc_idp.issuer,
        "OIDC_CLIENT_ID": CLIENT_ID,
        "OIDC_CLIENT_SECRET": CLIENT_SECRET,
        "OIDC_CLI_CLIENT_ID": CLI_CLIENT_ID,
    }
    with contextlib.ExitStack() as stack:
        with mock.patch.dict(os.environ, env):  # gunicorn's environment is copied when it starts
            server = stack.enter_context(
                gunicorn(connection.settings_dict, settings.SECRET_KEY, tmp_path_factory.mktemp("oidc") / "error.log")
            )
        yield server


def confirm_device_code(verification_uri_complete: str, login: str) -> None:
    """A person at the browser: confirm the code at the IdP, then sign in (tests/oidc/provider.js pages)."""
    browser = requests.Session()
    page = browser.get(verification_uri_complete, timeout=PATIENCE)
    for _ in range(6):
        form = re.search(r'<form[^>]*action="([^"]+)"[^>]*>(.*?)</form>', page.text, re.S)
        if form is None:
            break
        fields = {}
        for tag in re.findall(r"<input[^>]*>", form.group(2)):
            name, value = re.search(r'name="([^"]+)"', tag), re.search(r'value="([^"]*)"', tag)
            if name:
                fields[name.group(1)] = unescape(value.group(1)) if value else ""
        if "login" in form.group(2) and "password" in form.group(2):
            fields |= {"prompt": "login", "login": login, "password": "any-password"}
        page = browser.post(urljoin(page.url, unescape(form.group(1))), data=fields, timeout=PATIENCE)
    assert "Sign-in Success" in page.text or "success" in page.text.lower(), page.text[:500]


def test_login_discovery_and_device_code_sign_in(oidc_server, oidc_idp, transactional_db):
    oidc_idp.set_account("dora", roles=["osmo-user"])
    info = fetch_login_info(oidc_server.url)
    discovery = oidc_idp.discovery()
    # cli/login.py _login: login_info['device_endpoint'], login_info['device_client_id']
    assert info["device_endpoint"] == discovery["device_authorization_endpoint"]
    assert info["device_client_id"] == CLI_CLIENT_ID
    # login.py LoginConfig.token_or_default / owner_password_login: login_info['token_endpoint']
    assert info["token_endpoint"] == discovery["token_endpoint"]
    # client.py device_code_login (some releases): login_info['client_id']
    assert info["client_id"] == CLI_CLIENT_ID

    # client.py device_code_login: POST device_endpoint {client_id, scope}; reads device_code, user_code,
    # verification_uri, interval, expires_in (and prints verification_uri_complete when present)
    started = requests.post(
        info["device_endpoint"],
        data={"client_id": info["device_client_id"], "scope": "openid offline_access profile"},
        timeout=PATIENCE,
    ).json()
    assert {"device_code", "user_code", "verification_uri", "interval", "expires_in"} <= set(started)

    def poll() -> dict:
        # client.py device_code_login: POST token_endpoint {grant_type device_code, device_code, client_id}
        return requests.post(
            info["token_endpoint"],
            data={
                "grant_type": "urn:ietf:params:oauth:grant-type:device_code",
                "device_code": started["device_code"],
                "client_id": info["device_client_id"],
            },
            timeout=PATIENCE,
        ).json()

    assert poll()["error"] == "authorization_pending"
    confirm_device_code(started["verification_uri_complete"], "dora")
    tokens = poll()
    assert "error" not in tokens, tokens
    assert tokens["id_token"] and tokens["refresh_token"]  # both read by client.py device_code_login
    # client.py device_code_login keeps result['id_token'] (and result['refresh_token']); ServiceClient.request
    # then sends the id token as `Authorization: Bearer <id_token>`
    answer = requests.get(
        f"{oidc_server.url}/api/pool", headers={"Authorization": f"Bearer {tokens['id_token']}"}, timeout=PATIENCE
    )
    assert answer.status_code == 200, answer.text
