"""What OSMO's own command-line client (6.4) does on the wire, for the tests that play its verbs.

The real client is not installable here, so this reproduces its request and answer handling, from
NVIDIA/OSMO `src/lib/utils/client.py` (`ServiceClient.request`, `handle_response`) and
`src/lib/utils/login.py` (`token_login`, `refresh_id_token`, `Jwt`). Only the transport is reproduced; each
verb's own requests (paths, params, bodies) live in the test modules, cited line by line.
"""

from __future__ import annotations

import base64
import json
import time

import requests

CLIENT_VERSION = "6.4.0"


class OsmoError(Exception):
    def __init__(self, message: str, status_code: int, payload: object = None) -> None:
        super().__init__(message)
        self.message, self.status_code, self.payload = message, status_code, payload


class OsmoUserError(OsmoError):
    """client.py handle_response: a 4xx; the CLI prints `message` and exits 1."""


class OsmoServerError(OsmoError):
    """client.py handle_response: a 5xx; the CLI dumps the status, headers and body."""


def jwt_claims(token: str) -> dict:
    """login.py Jwt: the payload, read without verifying (the client never verifies)."""
    _, payload, _ = token.split(".")
    return json.loads(base64.urlsafe_b64decode(payload + "==").decode())


class OsmoClient:
    """A logged-in `osmo` CLI: `url` as given to `osmo login` (trailing slash stripped, login.py
    LoginStorage), the API token as its refresh token, the JWT as its id token."""

    def __init__(self, url: str, api_token: str) -> None:
        self.url = url.rstrip("/")
        self.api_token = api_token
        self.refresh_url = f"{self.url}/api/auth/jwt/access_token"  # login.py construct_token_refresh_url
        self.login_info = self._fetch_login_info()
        self.jwt = self._exchange()
        self.refreshes = 0

    def _fetch_login_info(self) -> dict:
        # cli/login.py _login: without --device-endpoint, every method (token included) first reads
        # login_info['device_endpoint'] and ['device_client_id'] from GET api/auth/login (login.py
        # fetch_login_info: a status outside 2xx is "Unexpected status code")
        answer = requests.get(f"{self.url}/api/auth/login", timeout=60)
        if not 200 <= answer.status_code < 300:
            raise OsmoUserError(f"Unexpected status code ({answer.status_code})", answer.status_code)
        info = answer.json()
        missing = {"device_endpoint", "device_client_id"} - set(info)
        if missing:
            raise OsmoServerError(f"KeyError: {sorted(missing)} (the CLI crashes here)", answer.status_code)
        return info

    def _exchange(self) -> str:
        # login.py token_login / refresh_id_token (osmo_token=True): POST json {"token": ...}, read ["token"]
        answer = requests.post(
            self.refresh_url, json={"token": self.api_token}, timeout=60, headers={"User-Agent": self.user_agent}
        )
        if answer.status_code >= 300:
            raise OsmoServerError(f"Unable to refresh login token: {answer.text}", answer.status_code)
        return answer.json()["token"]

    @property
    def user_agent(self) -> str:
        return f"osmo-cli/{CLIENT_VERSION}"

    @property
    def name(self) -> str:
        """login.py LoginStorage.name: the JWT's `name` claim (`Successfully logged in. Welcome <name>.`)."""
        return jwt_claims(self.jwt).get("name", "")

    def request(self, method: str, endpoint: str, payload=None, params=None, mode: str = "JSON"):
        """client.py ServiceClient.request: `{url}/{endpoint}` as the CLI joins them (an endpoint that
        starts with a slash gives `//api/...`), the JWT refreshed when within 3 s of expiry."""
        if jwt_claims(self.jwt)["exp"] - 3 < time.time():  # login.py EXPIRE_WINDOW
            self.jwt = self._exchange()
            self.refreshes += 1
        headers = {
            "Authorization": f"Bearer {self.jwt}",
            "x-osmo-client-version": CLIENT_VERSION,  # version.py VERSION_HEADER
            "Content-Type": "application/json",
            "User-Agent": self.user_agent,
        }
        answer = requests.request(
            method, f"{self.url}/{endpoint}", params=params, json=payload, headers=headers, timeout=60
        )
        return handle_response(answer, mode)


def handle_response(answer: requests.Response, mode: str = "JSON"):
    """client.py handle_response: a 4xx must be JSON with `error_code` and `message`, else the CLI shows
    the raw body; a 5xx is a server error; anything else is read as JSON (or text)."""
    if 400 <= answer.status_code < 500:
        try:
            payload = json.loads(answer.text)
        except json.JSONDecodeError:
            raise OsmoUserError(answer.text, answer.status_code) from None
        if isinstance(payload, dict) and "error_code" in payload:
            raise OsmoUserError(payload["message"], answer.status_code, payload)
        raise OsmoUserError(answer.text, answer.status_code, payload)
    if answer.status_code >= 500:
        raise OsmoServerError(f"Status Code: {answer.status_code}\nBody:\n{answer.text}", answer.status_code)
    if mode == "PLAIN_TEXT":
        return answer.text
    return json.loads(answer.text)
