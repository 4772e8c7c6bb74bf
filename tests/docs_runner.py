"""Run the examples of a docs page as a reader would, in a real shell.

- `bash_blocks(page)`: the page's ```bash blocks. `DocsShell.run(blocks)` runs them in ONE bash session
  (`set -euo pipefail`), in order, from the repository root, so a block sees what earlier blocks of the page
  set (`TOKEN`, `ID`), as in a reader's terminal. `python` is the project's .venv python.
- `runnable_blocks(page)`: those blocks less the commands that cannot run against the `make dev` demo
  (EXCLUDED: a real cluster, a deployment, the test suite itself), and the commands it left out.
- `transcripts(page)`: the ```text blocks that start with `$ command`, followed by the output the page
  promises. `DocsShell.transcript(t)` runs the command and returns its exit code and output (stdout and
  stderr), for the test to compare with `t.expected`.

The shell talks to the test's own database (DATABASE_URL of the test database) and, for `curl`, to the test's
live server (PORTAL) — never to a `make dev` that may be running on the default ports.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def bash_blocks(page: Path) -> list[str]:
    return re.findall(r"```bash\n(.*?)```", page.read_text(), re.S)


# What the docs test does not run, by page (relative to the repository root) and the start of the command ("*":
# the whole page), with why. Everything else in every page's ```bash blocks runs, so a new page is covered.
EXCLUDED: dict[str, dict[str, str]] = {
    "README.md": {"make ": "installs and starts the whole stack: the test is that stack, already running"},
    "docs/deploy.md": {"*": "a deployment: kubectl, kustomize and a container registry of a real cluster"},
    "docs/configuration.md": {"*": "production settings: a database at db.example.com, another SECRET_KEY"},
    "docs/performance.md": {"*": "benchmarks of another checkout (git worktree, make bench): minutes each"},
    "docs/scale.md": {"*": "builds a 10 GiB fleet database (make fleet, about 20 minutes) and benchmarks it"},
    "docs/testing.md": {"*": "runs the test suite, of which this test is part"},
    "docs/simulated-cluster.md": {"*": "a second simulated cluster on port 8001 and kubectl, outside the demo"},
    "docs/clusters.md": {
        "python manage.py config update BACKEND gpu-cluster-02": "the reader's own cluster (backend.json)",
        "python manage.py backend test gpu-cluster-02": "connects to the reader's own cluster",
        "FIELD_ENCRYPTION_KEYS=": "the reader's own new and old keys, in place of <new>,<old>",
        "python manage.py watch_cluster": "a watcher: runs until stopped (the demo runs its own)",
    },
    "docs/osmo-cli.md": {"osmo ": "NVIDIA's osmo client, not installed here (tests/osmo_cli drives it)"},
}


def runnable_blocks(page: Path) -> tuple[list[str], list[str]]:
    """The page's bash blocks less the EXCLUDED commands (with their continuation lines), and those commands."""
    excluded = EXCLUDED.get(page.resolve().relative_to(ROOT).as_posix(), {})
    if "*" in excluded:
        return [], [command for block in bash_blocks(page) for command in _commands(block)]
    blocks, dropped = [], []
    for block in bash_blocks(page):
        kept = []
        for command in _commands(block):
            if any(command.startswith(start) for start in excluded):
                dropped.append(command)
            else:
                kept.append(command)
        blocks.append("\n".join(kept))
    return blocks, dropped


def _commands(block: str) -> list[str]:
    """The block's commands: a line with its `\\`-continued lines (comment lines left out)."""
    commands, current = [], []
    for line in block.splitlines():
        current.append(line)
        if not line.endswith("\\"):
            commands.append("\n".join(current))
            current = []
    return [command for command in commands if command.strip() and not command.lstrip().startswith("#")]


@dataclass(frozen=True)
class Transcript:
    command: str
    expected: str


def transcripts(page: Path) -> list[Transcript]:
    found = []
    for block in re.findall(r"```text\n(.*?)```", page.read_text(), re.S):
        lines = block.rstrip("\n").splitlines()
        if lines and lines[0].startswith("$ "):
            found.append(Transcript(lines[0][2:], "\n".join(lines[1:])))
    return found


def database_url() -> str:
    """The URL of the database the tests use (the test database, once pytest-django created it)."""
    from django.db import connection

    settings = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{settings['NAME']}"
    user = settings.get("USER") or ""
    password = f":{settings['PASSWORD']}" if settings.get("PASSWORD") else ""
    auth = f"{user}{password}@" if user else ""
    return f"postgres://{auth}{settings.get('HOST') or '127.0.0.1'}:{settings.get('PORT') or 5432}/{settings['NAME']}"


class DocsShell:
    def __init__(self, **env: str) -> None:
        base = {
            key: value
            for key, value in os.environ.items()
            if key not in ("CELERY_BROKER_URL", "TEST_DATABASE_NAME", "PORTAL", "TOKEN")
        }
        self.env = {
            **base,
            "PATH": f"{ROOT / '.venv' / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
            "DATABASE_URL": database_url(),
            "PYTHONUNBUFFERED": "1",
            **env,
        }

    def run(self, blocks: list[str], timeout: float = 300) -> str:
        """Run `blocks` in one bash session; return stdout. A failing command fails the test with its output."""
        script = "set -euo pipefail\n" + "\n".join(blocks)
        done = subprocess.run(
            ["bash", "-c", script], cwd=ROOT, env=self.env, capture_output=True, text=True, timeout=timeout, check=False
        )
        if done.returncode != 0:
            raise AssertionError(
                f"the docs example failed (exit {done.returncode}):\n--- script\n{script}\n"
                f"--- stdout\n{done.stdout[-4000:]}\n--- stderr\n{done.stderr[-4000:]}"
            )
        return done.stdout

    def transcript(self, transcript: Transcript, timeout: float = 120) -> tuple[int, str]:
        done = subprocess.run(
            ["bash", "-c", transcript.command],
            cwd=ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        return done.returncode, (done.stdout + done.stderr).rstrip("\n")
