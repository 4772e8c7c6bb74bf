"""The production shape as processes on loopback: gunicorn (2 workers), Celery workers, beat and both watchers,
each in its own process group (so one SIGKILL takes a worker and its pool children, as a node loss would)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from tests.devstack import REPO, free_port

BIN = Path(sys.executable).parent


def environment(database_url: str, broker_url: str, secret_key: str, instance: str) -> dict[str, str]:
    """Production settings (DEBUG off), plain HTTP on loopback, and the test process's key: the rows it
    stored must stay readable. A short visibility timeout and restore sweep, so a killed worker's messages
    come back within the test (production keeps them longer than any task may run)."""
    return {
        **os.environ,
        "DATABASE_URL": database_url,
        "CELERY_BROKER_URL": broker_url,
        "DEBUG": "false",
        "SECRET_KEY": secret_key,
        "SECURE_SSL_REDIRECT": "false",
        "DATABASE_CONN_MAX_AGE": "600",
        "TEST_DATABASE_NAME": "",
        "PORTAL_INSTANCE": instance,
        "CELERY_VISIBILITY_TIMEOUT": "15",
        "CELERY_UNACKED_RESTORE_SECONDS": "2",
        "WORKFLOW_POD_RETENTION_SECONDS": "3600",  # the reaper leaves finished pods alone while we count
        "LOG_LEVEL": "INFO",  # the workers' "received"/"succeeded" lines count redeliveries
        "PYTHONUNBUFFERED": "1",
    }


@dataclass
class Stack:
    env: dict[str, str]
    logs: Path
    processes: dict[str, subprocess.Popen] = field(default_factory=dict)
    web_port: int = 0
    token: str = ""  # the researcher's API token

    def start(self, name: str, argv: list[str]) -> subprocess.Popen:
        log = open(self.logs / f"{name}.log", "ab")  # noqa: SIM115 - the child writes it until it ends
        self.processes[name] = subprocess.Popen(
            argv, cwd=REPO, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        log.close()
        return self.processes[name]

    def start_all(self, workers: list[str]) -> None:
        self.web_port = free_port()
        gunicorn = [str(BIN / "gunicorn"), "portal.wsgi:application", "--workers", "2"]
        self.start("web", [*gunicorn, "--bind", f"127.0.0.1:{self.web_port}", "--log-level", "warning"])
        for name in workers:
            self.start_worker(name)
        self.start("beat", [str(BIN / "celery"), "-A", "portal", "beat", f"--schedule={self.logs / 'beat-schedule'}"])
        for watcher in ("watch_cluster", "watch_workflows"):
            self.start(watcher, [sys.executable, str(REPO / "manage.py"), watcher])

    def start_worker(self, name: str) -> None:
        """A Celery worker as deployed (prefork), one pool process: two of them are two workers."""
        celery = [str(BIN / "celery"), "-A", "portal", "worker", "--loglevel=INFO", "--concurrency=1"]
        self.start(name, [*celery, f"--hostname={name}@%h", "--without-gossip", "--without-mingle"])

    def kill(self, name: str) -> None:
        """SIGKILL, no warm shutdown: what it had received and not acknowledged stays in Redis."""
        os.killpg(self.processes[name].pid, signal.SIGKILL)
        self.processes[name].wait(10)

    def exited(self) -> dict[str, int]:
        return {name: p.returncode for name, p in self.processes.items() if p.poll() is not None}

    def log(self, name: str) -> str:
        return (self.logs / f"{name}.log").read_text(errors="replace")

    def stop(self) -> None:
        for process in self.processes.values():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
        for process in self.processes.values():
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(5)
