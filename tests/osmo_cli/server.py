"""The portal under its production server, for the tests that play OSMO's client against it: gunicorn
(two sync workers, production settings but plain HTTP on loopback) serving the pytest test database."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import requests

from tests.polling import wait_until

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class LiveServer:
    url: str
    process: subprocess.Popen

    def log(self) -> str:
        return Path(self.process.args[-1]).read_text() if Path(self.process.args[-1]).exists() else ""


def database_url(settings_dict: dict) -> str:
    if "postgresql" not in settings_dict["ENGINE"]:
        raise RuntimeError("the live-server tests need PostgreSQL: run them with `make test`")
    user = settings_dict.get("USER") or "postgres"
    password = f":{settings_dict['PASSWORD']}" if settings_dict.get("PASSWORD") else ""
    host, port = settings_dict.get("HOST") or "127.0.0.1", settings_dict.get("PORT") or "5432"
    return f"postgres://{user}{password}@{host}:{port}/{settings_dict['NAME']}"


@contextlib.contextmanager
def gunicorn(settings_dict: dict, secret_key: str, log_path: Path):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {
        **os.environ,
        "DATABASE_URL": database_url(settings_dict),
        "DEBUG": "false",
        "SECRET_KEY": secret_key,  # the secrets this process stores must stay readable there
        "SECURE_SSL_REDIRECT": "false",
        "TEST_DATABASE_NAME": "",
        "CELERY_BROKER_URL": "",  # the embedded default: tasks run in the server's process
    }
    command = [
        str(Path(sys.executable).parent / "gunicorn"),
        "portal.wsgi:application",
        "--workers=2",
        f"--bind=127.0.0.1:{port}",
        "--log-level=warning",
        f"--error-logfile={log_path}",
    ]
    process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, start_new_session=True)
    server = LiveServer(f"http://127.0.0.1:{port}", process)
    try:
        wait_until(lambda: _answers(server), timeout=60, what=f"gunicorn on port {port}", interval=0.1)
        yield server
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=30)


def _answers(server: LiveServer) -> bool:
    if server.process.poll() is not None:
        raise RuntimeError(f"gunicorn exited: {server.log()[-2000:]}")
    try:
        return requests.get(f"{server.url}/api/schema/", timeout=5).status_code < 500
    except (requests.ConnectionError, requests.Timeout):  # a loaded machine builds the first schema slowly
        return False
