"""`manage.py devserver`: the embedded default's processes, started, watched and stopped together.

Children (each in its own process group, output appended to `<var>/<name>.log`):

* kubesim: the simulated clusters, one per demo backend under `/clusters/<backend>` with its share of the demo
  fleet (kubesim.fleet.DEMO_CLUSTERS), their objects kept in `<var>/kubesim/<backend>.json` so a restart keeps
  their pods; rosa-cluster-01 has the demo's machine pools (`ml-training`, a GPU spot pool, grows from zero when a
  pod waits for a T4);
* web: `runserver` (with its autoreloader);
* watch_cluster, watch_workflows: the inventory and workflow watchers;
* periodic: the beat schedule in-process (reconcile, timeouts, reaper, inventory resync).

A child that exits is reported on the console in one line and started again after a backoff that doubles
(1 s … 30 s) while it keeps failing. Ctrl-C or SIGTERM stops every child (SIGTERM to its group, SIGKILL
after a grace period). The portal's addresses and the demo logins are printed once the web server answers.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from portal import backoff

BACKOFF_START, BACKOFF_MAX = 1.0, 30.0
HEALTHY_AFTER = 20.0  # a child that ran this long is healthy again: its next crash restarts it after 1 s
STOP_GRACE = 10.0

# Defaults for the children in the embedded default (the environment wins): a stored workflow whose pod
# creation was lost (e.g. to a locked database) is picked up within seconds, not minutes.
DEV_ENVIRONMENT = {
    "WORKFLOW_RECONCILE_SECONDS": "10",
    "WORKFLOW_PENDING_GRACE_SECONDS": "10",
    "LOG_INPROCESS_TASKS": "true",  # their logs (var/*.log) keep the in-process tasks' INFO lines
}


class PortInUse(Exception):
    pass


@dataclass
class Child:
    name: str
    argv: list[str]
    log_path: Path
    env: dict[str, str] = field(default_factory=dict)  # on top of the supervisor's
    process: subprocess.Popen | None = None
    started_at: float = 0.0
    failures: int = 0  # crashes in a row
    restart_at: float | None = None
    restarts: int = 0

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None


@dataclass
class Supervisor:
    children: list[Child]
    env: dict[str, str]
    var_dir: Path
    console: TextIO = sys.stdout
    stopping: threading.Event = field(default_factory=threading.Event)

    # ------------------------------------------------------------------------------ starting, stopping

    def start(self, child: Child) -> None:
        child.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(child.log_path, "ab") as log:
            log.write(f"\n=== {time.strftime('%Y-%m-%d %H:%M:%S')} starting: {' '.join(child.argv)}\n".encode())
            log.flush()
            child.process = subprocess.Popen(
                child.argv,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env={**self.env, **child.env},
                start_new_session=True,  # its own group: Ctrl-C reaches us only, and we stop the group
                preexec_fn=_die_with_parent,
            )
        child.started_at = time.monotonic()
        child.restart_at = None
        self.write_pids()

    def stop_all(self) -> None:
        self.stopping.set()
        for child in self.children:
            self._signal(child, signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE
        for child in self.children:
            if child.process is None:
                continue
            try:
                child.process.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                self._signal(child, signal.SIGKILL)
                child.process.wait(5)
        self.pids_path.unlink(missing_ok=True)

    @staticmethod
    def _signal(child: Child, sig: int) -> None:
        if child.process is None or child.process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.process.pid, sig)  # the child and what it started (runserver's reloader)

    # ------------------------------------------------------------------------------ watching

    def poll(self) -> None:
        """Report children that exited and restart those whose backoff has passed."""
        now = time.monotonic()
        for child in self.children:
            if self.stopping.is_set():
                return
            if child.restart_at is not None:
                if now >= child.restart_at:
                    child.restarts += 1
                    self.start(child)
                continue
            if child.process is None or child.process.poll() is None:
                continue
            ran = now - child.started_at
            child.failures = 1 if ran >= HEALTHY_AFTER else child.failures + 1
            delay = backoff.capped(BACKOFF_START, BACKOFF_MAX, child.failures)
            child.restart_at = now + delay
            self.say(
                f"{child.name} exited ({describe_exit(child.process.returncode)}) after {ran:.0f}s; "
                f"restarting in {delay:.0f}s (log: {self.shown(child.log_path)})"
            )

    def run(self, tick: float = 0.2) -> None:
        while not self.stopping.wait(tick):
            self.poll()

    # ------------------------------------------------------------------------------ output

    @property
    def pids_path(self) -> Path:
        return self.var_dir / "devserver.json"

    def write_pids(self) -> None:
        """`<var>/devserver.json`: the process ids, for scripts (and tests) that want to poke one child."""
        body = {"supervisor": os.getpid(), "children": {c.name: c.pid for c in self.children if c.pid}}
        temporary = self.pids_path.with_name("devserver.json.tmp")
        temporary.write_text(json.dumps(body))
        os.replace(temporary, self.pids_path)

    def say(self, line: str) -> None:
        self.console.write(f"{line}\n")
        self.console.flush()

    def shown(self, path: Path) -> str:
        try:
            return str(path.relative_to(Path.cwd()))
        except ValueError:
            return str(path)


PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """In the child, before exec (Linux): SIGTERM when the supervisor dies, even by SIGKILL."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def describe_exit(code: int | None) -> str:
    if code is not None and code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"signal {-code}"
    return f"exit code {code}"


# ---------------------------------------------------------------------------------- checks and waits


def check_ports(ports: dict[str, int], host: str = "127.0.0.1") -> None:
    """PortInUse naming every busy port, before anything starts."""
    busy = []
    for what, port in ports.items():
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the servers do: TIME_WAIT is fine
            try:
                probe.bind((host, port))
            except OSError as error:
                reason = "in use" if error.errno == errno.EADDRINUSE else error.strerror
                busy.append(f"{what} port {port} is {reason}")
    if busy:
        raise PortInUse("; ".join(busy))


def wait_for(ready, child: Child, deadline: float, stop: threading.Event) -> bool:
    """Poll `ready()` until true; False when the child exits, stop is set or the deadline passes."""
    while time.monotonic() < deadline and not stop.is_set():
        if ready():
            return True
        if not child.running():
            return False
        stop.wait(0.1)
    return False


def accepts(port: int, host: str = "127.0.0.1") -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


def answers_http(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2):  # noqa: S310 - loopback only
            return True
    except urllib.error.HTTPError:
        return True  # any HTTP answer: the server is up
    except (OSError, ValueError):
        return False


# ---------------------------------------------------------------------------------- the embedded default


def children(python: str, manage: str, var_dir: Path, port: int, kubesim_port: int) -> list[Child]:
    def child(name: str, *argv: str, **env: str) -> Child:
        return Child(name, [python, *argv], var_dir / f"{name}.log", env)

    return [
        child(
            "kubesim",
            "-m",
            "kubesim",
            "--port",
            str(kubesim_port),
            "--fleet",
            "demo-clusters",
            "--kubelet",
            "--machine-pools",
            "demo",
            "--schedulers",  # KAI's and Kueue's CRDs, as a cluster with them installed (docs/quota-schedulers.md)
            "kai,kueue",
            "--state",
            str(var_dir / "kubesim"),
        ),
        child("watch_cluster", manage, "watch_cluster"),
        child("watch_workflows", manage, "watch_workflows"),
        child("periodic", manage, "periodic"),
        child("web", manage, "runserver", f"127.0.0.1:{port}", DEBUG=os.environ.get("DEBUG", "true")),
    ]


def environment(base: dict[str, str]) -> dict[str, str]:
    return {**DEV_ENVIRONMENT, **base, "PYTHONUNBUFFERED": "1"}


def serve(supervisor: Supervisor, port: int, kubesim_port: int, *, start_timeout: float = 120.0) -> int:
    """Start everything, print the addresses once the web server answers, supervise until stopped."""
    by_name = {child.name: child for child in supervisor.children}
    stop, say = supervisor.stopping, supervisor.say
    say(
        "starting the simulated clusters, the web server, the watchers and the periodic jobs "
        f"(logs: {supervisor.shown(supervisor.var_dir)}/<name>.log)"
    )
    kubesim = by_name["kubesim"]
    supervisor.start(kubesim)
    if not wait_for(lambda: accepts(kubesim_port), kubesim, time.monotonic() + start_timeout, stop):
        if not stop.is_set():
            say(f"error: the simulated clusters did not start; see {supervisor.shown(kubesim.log_path)}")
        return 1
    for child in supervisor.children:
        if child is not kubesim:
            supervisor.start(child)
    base = f"http://127.0.0.1:{port}"
    web = by_name["web"]
    while not stop.is_set() and not answers_http(f"{base}/login/"):
        supervisor.poll()  # a child that dies while we wait is reported and restarted
        stop.wait(0.2)
    if stop.is_set():
        return 0
    say(
        f"simulated clusters http://127.0.0.1:{kubesim_port}/clusters/<backend>  (one per demo backend; objects "
        f"kept in {supervisor.shown(supervisor.var_dir / 'kubesim')}/)"
    )
    say(f"portal             {base}/")
    say(f"researcher pages   {base}/  (pool catalog; your workflows at {base}/workflows/)")
    say(f"admin console      {base}/admin/")
    say(f"API                {base}/api/  (OpenAPI at {base}/api/schema/ui/)")
    say(
        f"demo logins        admin / {os.environ.get('DEMO_ADMIN_PASSWORD', 'admin')} (platform admin), "
        f"researcher / {os.environ.get('DEMO_RESEARCHER_PASSWORD', 'researcher')}"
    )
    say(f"ready (web server pid {web.pid}); Ctrl-C stops everything")
    supervisor.run()
    return 0
