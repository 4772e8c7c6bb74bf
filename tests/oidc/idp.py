"""The test IdP's handle and helpers: start `node provider.js`, write accounts, mint tokens, drive a sign-in.

The pytest fixtures around them are in tests/oidc/fixtures.py.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import socket
import subprocess
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urljoin, urlsplit

import jwt
import pytest
import requests
from cryptography.hazmat.primitives.asymmetric import rsa
from django.contrib.auth.models import Group

from access.models import Role
from tests.polling import PATIENCE

OIDC_DIR = Path(__file__).resolve().parent
CLIENT_ID = "pool-portal"
CLIENT_SECRET = "pool-portal-test-client-secret-0123456789"
KEY_ID = "test-rs256"
STARTUP_DEADLINE_S = 20.0


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# The browser test's live server listens here; the IdP knows it as a redirect URI. Fixed for the session.
LIVE_SERVER_PORT = int(os.environ.get("E2E_LIVE_SERVER_PORT") or free_port())
LIVE_SERVER_URL = f"http://127.0.0.1:{LIVE_SERVER_PORT}"


def new_rsa_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@dataclass
class IdP:
    issuer: str
    port: int
    accounts_path: Path
    log_path: Path
    private_key: rsa.RSAPrivateKey
    process: subprocess.Popen
    _accounts: dict[str, dict[str, Any]] = field(default_factory=dict)

    # accounts: the provider re-reads the file on every lookup, so changes apply to the next sign-in
    def set_account(self, login: str, groups: list[str] = (), roles: list[str] = (), **extra: Any) -> None:
        self._accounts[login] = {"groups": list(groups), "roles": list(roles), **extra}
        self._write()

    def remove_account(self, login: str) -> None:
        self._accounts.pop(login, None)
        self._write()

    def reset_accounts(self) -> None:
        self._accounts = {}
        self._write()

    def _write(self) -> None:
        tmp = self.accounts_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self._accounts))
        tmp.replace(self.accounts_path)  # atomic: the provider never reads half a file

    def discovery(self) -> dict[str, Any]:
        return requests.get(f"{self.issuer}/.well-known/openid-configuration", timeout=PATIENCE).json()

    def mint(
        self,
        claims: dict[str, Any],
        *,
        key: rsa.RSAPrivateKey | None = None,
        kid: str | None = KEY_ID,
        alg: str = "RS256",
        lifetime: int = 300,
    ) -> str:
        """A JWT as this IdP would sign it (or with another key/kid/alg, to be refused)."""
        now = int(time.time())
        payload = {"iss": self.issuer, "iat": now, "exp": now + lifetime, "jti": uuid.uuid4().hex, **claims}
        payload = {name: value for name, value in payload.items() if value is not None}  # None: leave it out
        headers = {"kid": kid} if kid else {}
        signing_key = CLIENT_SECRET if alg.startswith("HS") else (key or self.private_key)
        return jwt.encode(payload, signing_key, algorithm=alg, headers=headers)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)


def start_idp(workdir: Path, redirect_uris: list[str], post_logout_uris: list[str]) -> IdP:
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is not installed: the OIDC tests need Node.js 20+ (see Makefile `install`)")
    if not (OIDC_DIR / "node_modules" / "oidc-provider").is_dir():
        pytest.fail("tests/oidc/node_modules is missing: run `make install` (npm ci in tests/oidc)")
    key = new_rsa_key()
    jwk = jwt.algorithms.RSAAlgorithm.to_jwk(key, as_dict=True) | {"kid": KEY_ID, "alg": "RS256", "use": "sig"}
    jwk.pop("key_ops", None)  # PyJWT writes ["sign"]; the provider must also verify with it (id_token_hint)
    jwks_path = workdir / "jwks.json"
    jwks_path.write_text(json.dumps({"keys": [jwk]}))
    accounts_path = workdir / "accounts.json"
    accounts_path.write_text("{}")
    log_path = workdir / "provider.log"
    port = free_port()
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": os.environ.get("HOME", str(workdir)),
        "OIDC_PORT": str(port),
        "OIDC_ACCOUNTS_FILE": str(accounts_path),
        "OIDC_JWKS_FILE": str(jwks_path),
        "OIDC_CLIENT_ID": CLIENT_ID,
        "OIDC_CLIENT_SECRET": CLIENT_SECRET,
        "OIDC_REDIRECT_URIS": ",".join(redirect_uris),
        "OIDC_POST_LOGOUT_REDIRECT_URIS": ",".join(post_logout_uris),
    }
    with log_path.open("w") as log:
        process = subprocess.Popen([node, "provider.js"], cwd=OIDC_DIR, env=env, stdout=log, stderr=subprocess.STDOUT)
    idp = IdP(f"http://127.0.0.1:{port}", port, accounts_path, log_path, key, process)
    deadline = time.monotonic() + STARTUP_DEADLINE_S
    while True:
        try:
            if idp.discovery().get("issuer") == idp.issuer:
                return idp
        except (requests.RequestException, ValueError):
            pass
        if time.monotonic() > deadline:
            idp.stop()
            pytest.fail(
                f"the OIDC provider did not serve its discovery document in {STARTUP_DEADLINE_S:.0f} s:\n"
                + log_path.read_text()[-2000:]
            )
        try:
            process.wait(timeout=0.02)  # the poll interval, cut short if node exits
        except subprocess.TimeoutExpired:
            continue
        pytest.fail(f"the OIDC provider exited with {process.returncode}:\n" + log_path.read_text()[-2000:])


def make_role(name: str, sync_mode: str = "import", external_roles: list[str] = ()) -> Role:
    group, _ = Group.objects.get_or_create(name=name)
    role, _ = Role.objects.update_or_create(
        name=name, defaults={"group": group, "sync_mode": sync_mode, "external_roles": list(external_roles)}
    )
    return role


def role_names(user) -> set[str]:
    return set(Role.objects.filter(group__user=user).values_list("name", flat=True))


_FORM_ACTION = re.compile(r'<form[^>]*action="([^"]+)"', re.I)


class LoginDriver:
    """One browser, split in two: `requests` talks to the IdP, Django's test client to the portal."""

    def __init__(self, client, idp: IdP):
        self.client = client
        self.idp = idp
        self.browser = requests.Session()  # holds the IdP's cookies (its SSO session)
        self.last_idp_response: requests.Response | None = None

    def start(self, next_url: str | None = None) -> str:
        response = self.client.get("/oidc/authenticate/", {"next": next_url} if next_url else {})
        assert response.status_code == 302, response
        return response["Location"]

    def _follow_at_idp(self, response: requests.Response) -> requests.Response | str:
        """Follow the IdP's redirects; stop at the portal (returns the callback URL) or at an IdP page."""
        while response.status_code in (301, 302, 303, 307, 308):
            location = urljoin(response.url, response.headers["Location"])
            if not location.startswith(self.idp.issuer):
                return location
            response = self.browser.get(location, allow_redirects=False, timeout=PATIENCE)
        self.last_idp_response = response
        return response

    def at_idp(self, authorize_url: str, login: str, password: str = "any-password") -> str | requests.Response:
        """Open the IdP's authorization URL, sign in; the portal URL the IdP sends back to, or its page."""
        page = self._follow_at_idp(self.browser.get(authorize_url, allow_redirects=False, timeout=PATIENCE))
        if isinstance(page, str):
            return page  # already signed in at the IdP (SSO session): straight back
        action = _FORM_ACTION.search(page.text)
        assert action, page.text[:500]
        submitted = self.browser.post(
            urljoin(page.url, action.group(1)),
            allow_redirects=False,
            timeout=PATIENCE,
            data={"prompt": "login", "login": login, "password": password},
        )
        return self._follow_at_idp(submitted)

    def cancel_at_idp(self, authorize_url: str) -> str:
        page = self._follow_at_idp(self.browser.get(authorize_url, allow_redirects=False, timeout=PATIENCE))
        uid = urlsplit(page.url).path.rstrip("/").rsplit("/", 1)[-1]
        result = self._follow_at_idp(
            self.browser.get(f"{self.idp.issuer}/interaction/{uid}/abort", allow_redirects=False, timeout=PATIENCE)
        )
        assert isinstance(result, str), result
        return result

    def callback(self, portal_url: str):
        assert portal_url.startswith("http://testserver/"), portal_url
        parts = urlsplit(portal_url)
        return self.client.get(parts.path, dict(parse_qsl(parts.query)))

    def login(self, login: str, next_url: str | None = None):
        """The whole sign-in; returns the portal's response to the callback."""
        back = self.at_idp(self.start(next_url), login)
        assert isinstance(back, str), f"the IdP did not send the browser back: {back.text[:300]}"
        return self.callback(back)


def b64url_json(segment: str) -> dict[str, Any]:
    return json.loads(base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4)))
