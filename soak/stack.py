"""The production shape as processes on loopback: gunicorn, Celery workers, beat and the watchers, each in its own
process group (so one SIGKILL takes a worker and its pool children, as a node loss would)."""

from __future__ import annotations

import contextlib
import os
import random
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
WATCHERS = ("watch_cluster", "watch_workflows")


def free_port(low: int = 18000, high: int = 18999) -> int:
    """A port nobody listens on, in the range set aside for processes the tests and the soak start."""
    for _ in range(200):
        port = random.randint(low, high)
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port in {low}-{high}")


def wait_until(predicate: Callable[[], Any], timeout: float = 120.0, what: str = "", interval: float = 0.2) -> Any:
    """Poll `predicate` until it returns something truthy and return that; AssertionError after `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        result = predicate()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout}s: {what or predicate}")
        time.sleep(interval)


def environment(database_url: str, broker_url: str, secret_key: str, instance: str) -> dict[str, str]:
    """Production settings (DEBUG off), plain HTTP on loopback, and the caller's key: the rows it stored must
    stay readable. A short visibility timeout and restore sweep, so a killed worker's messages come back within
    the run (production keeps them longer than any task may run)."""
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


def rss_kib(pid: int) -> int:
    """Resident memory of a process and every process of its group (gunicorn's workers, Celery's pool), from
    /proc; 0 when it is gone."""
    total = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if int(entry) != pid and os.getpgid(int(entry)) != pid:
                continue
            with open(f"/proc/{entry}/status") as status:
                for line in status:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
        except (OSError, ValueError):
            continue
    return total


@dataclass
class Stack:
    env: dict[str, str]
    logs: Path
    processes: dict[str, subprocess.Popen] = field(default_factory=dict)
    argv: dict[str, list[str]] = field(default_factory=dict)
    restarts: dict[str, int] = field(default_factory=dict)
    web_port: int = 0
    token: str = ""  # the researcher's API token
    web_workers: int = 2

    def start(self, name: str, argv: list[str]) -> subprocess.Popen:
        log = open(self.logs / f"{name}.log", "ab")  # noqa: SIM115 - the child writes it until it ends
        self.argv[name] = argv
        self.processes[name] = subprocess.Popen(
            argv, cwd=REPO, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        log.close()
        return self.processes[name]

    def start_all(self, workers: list[str], watcher_replicas: tuple[str, ...] = ()) -> None:
        """gunicorn, the workers, beat and each watcher: one process, or one per replica name."""
        self.web_port = self.web_port or free_port()
        gunicorn = [str(BIN / "gunicorn"), "portal.wsgi:application", "--workers", str(self.web_workers)]
        self.start("web", [*gunicorn, "--bind", f"127.0.0.1:{self.web_port}", "--log-level", "warning"])
        for name in workers:
            self.start_worker(name)
        self.start("beat", [str(BIN / "celery"), "-A", "portal", "beat", f"--schedule={self.logs / 'beat-schedule'}"])
        manage = [sys.executable, str(REPO / "manage.py")]
        for watcher in WATCHERS:
            if not watcher_replicas:
                self.start(watcher, [*manage, watcher])
            for replica in watcher_replicas:
                self.start(f"{watcher}-{replica}", [*manage, watcher, "--replica", replica])

    def start_worker(self, name: str) -> None:
        """A Celery worker as deployed (prefork), one pool process: two of them are two workers."""
        celery = [str(BIN / "celery"), "-A", "portal", "worker", "--loglevel=INFO", "--concurrency=1"]
        self.start(name, [*celery, f"--hostname={name}@%h", "--without-gossip", "--without-mingle"])

    def kill(self, name: str) -> None:
        """SIGKILL, no warm shutdown: what it had received and not acknowledged stays in Redis."""
        os.killpg(self.processes[name].pid, signal.SIGKILL)
        self.processes[name].wait(10)

    def restart(self, name: str) -> None:
        """Start it again with the same command, as a supervisor (Kubernetes, systemd) would after it died."""
        self.restarts[name] = self.restarts.get(name, 0) + 1
        self.start(name, self.argv[name])

    def exited(self) -> dict[str, int]:
        return {name: p.returncode for name, p in self.processes.items() if p.poll() is not None}

    def log(self, name: str) -> str:
        return (self.logs / f"{name}.log").read_text(errors="replace")

    def rss(self) -> dict[str, int]:
        """KiB per process (with its group's children)."""
        return {name: rss_kib(p.pid) for name, p in self.processes.items() if p.poll() is None}

    def stop(self) -> None:
        for process in self.processes.values():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
        for process in self.processes.values():
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait(5)
