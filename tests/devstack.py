"""Helpers for tests that run the portal as real processes (`manage.py …`, `make dev`) and talk to it over HTTP."""

from __future__ import annotations

import functools
import json
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from soak.stack import free_port  # noqa: F401  (the tests' name for it)
from tests import polling

REPO = Path(__file__).resolve().parent.parent
HELLO = REPO / "docs" / "examples" / "workflows" / "hello.yaml"


# these tests poll processes over HTTP and SQLite: five times a second is enough
wait_until = functools.partial(polling.wait_until, interval=0.2)


def manage(env: dict, *args: str, timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(REPO / "manage.py"), *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


class Api:
    """The portal's REST API at `base`, as a client with a bearer token sees it."""

    def __init__(self, base: str, token: str = "") -> None:
        self.base, self.token = base.rstrip("/"), token

    def call(self, method: str, path: str, body: bytes | None = None, content_type: str = "") -> tuple[int, Any]:
        request = urllib.request.Request(self.base + path, data=body, method=method)
        if self.token:
            request.add_header("Authorization", f"Bearer {self.token}")
        if content_type:
            request.add_header("Content-Type", content_type)
        try:
            with urllib.request.urlopen(request, timeout=60) as answer:  # noqa: S310 - loopback
                return answer.status, json.loads(answer.read() or b"null")
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode(errors="replace")

    def answers(self, path: str) -> bool:
        """Does the server answer `GET path` with 200 yet? (A server still starting refuses connections.)"""
        try:
            return self.call("GET", path)[0] == 200
        except urllib.error.URLError:
            return False

    def submit(self, pool: str, spec: bytes, priority: str = "") -> str:
        query = f"?priority={priority}" if priority else ""
        status, body = self.call("POST", f"/api/pool/{pool}/workflow{query}", spec, "application/yaml")
        assert status == 200 or status == 201, (status, body)
        return body["workflow_id"]

    def status(self, workflow_id: str) -> str:
        status, body = self.call("GET", f"/api/workflow/{workflow_id}")
        assert status == 200, (status, body)
        return body["status"]
