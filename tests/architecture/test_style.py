"""The house style holds on every change: ruff's lint and format, and modules small enough to read."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.architecture.import_graph import APPS

ROOT = Path(__file__).resolve().parents[2]
RUFF = Path(sys.executable).with_name("ruff")
# Every app the layering test knows (so a new app cannot be left out), the foundation, and the rest.
PACKAGES = ("portal", *APPS, "kubesim", "soak", "tests", "bench")
MAX_LINES = 600


def ruff(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(RUFF), *args], cwd=ROOT, capture_output=True, text=True, check=False)


def test_ruff_lint_is_clean():
    done = ruff("check", "--output-format", "concise", ".")
    assert done.returncode == 0, done.stdout + done.stderr


def test_ruff_format_leaves_every_file_as_it_is():
    done = ruff("format", "--check", ".")
    assert done.returncode == 0, done.stdout + done.stderr


def test_no_module_is_over_600_lines():
    long = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            if "migrations" in path.parts or "node_modules" in path.parts:
                continue
            lines = len(path.read_text().splitlines())
            if lines > MAX_LINES:
                long[str(path.relative_to(ROOT))] = lines
    assert long == {}, f"split these modules (over {MAX_LINES} lines): {long}"
