"""Rendering deploy/ with Debian's kubectl (its built-in kustomize) and reading the objects back.

The checks return a list of problems (empty: fine), so a test states `== []` and its failure names each one.
"""

from __future__ import annotations

import functools
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import kubernetes_validate
import yaml

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
KUBECTL = "/usr/bin/kubectl"
# The Kubernetes schema the objects are checked against (one kubernetes-validate ships).
KUBERNETES_VERSION = "1.32.0"


@functools.cache
def render(directory: Path) -> tuple[dict, ...]:
    """`kubectl kustomize <directory>`, parsed: every object it outputs."""
    assert shutil.which(KUBECTL), f"{KUBECTL} is missing: `make install` installs Debian's kubectl"
    result = subprocess.run([KUBECTL, "kustomize", str(directory)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, f"kubectl kustomize {directory}: {result.stderr}"
    return tuple(obj for obj in yaml.safe_load_all(result.stdout) if obj)


def name_of(obj: dict) -> str:
    return f"{obj['kind']} {obj['metadata']['name']}"


def schema_problems(objects) -> list[str]:
    problems = []
    for obj in objects:
        try:
            kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)
        except kubernetes_validate.ValidationError as error:
            problems.append(f"{name_of(obj)}: {error.message} at {'.'.join(map(str, error.path))}")
    return problems


def of_kind(objects, kind: str) -> list[dict]:
    return [obj for obj in objects if obj["kind"] == kind]


def pod_spec(obj: dict) -> dict | None:
    """The pod template's spec of a Deployment or Job; None for other kinds."""
    if obj["kind"] in ("Deployment", "Job"):
        return obj["spec"]["template"]["spec"]
    return None


def containers(obj: dict, *, init: bool = True) -> Iterator[dict]:
    spec = pod_spec(obj) or {}
    yield from spec.get("containers", ())
    if init:
        yield from spec.get("initContainers", ())


def command_line(container: dict) -> str:
    return " ".join([*container.get("command", ()), *container.get("args", ())])


def running(objects, pattern: str) -> list[dict]:
    """The Deployments and Jobs with a main container whose command matches `pattern` (a regex)."""
    return [obj for obj in objects if any(re.search(pattern, command_line(c)) for c in containers(obj, init=False))]


def settings_variables() -> set[str]:
    """Every environment variable the settings read (`env_str("NAME"`, … in portal/settings.py and
    portal/deployment.py)."""
    source = (ROOT / "portal" / "settings.py").read_text() + (ROOT / "portal" / "deployment.py").read_text()
    return set(re.findall(r"env_\w+\(\s*\"([A-Z0-9_]+)\"", source))
