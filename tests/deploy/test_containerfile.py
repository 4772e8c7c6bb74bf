"""The Containerfile's invariants. No container engine runs here, so the build itself cannot be tried:
the instructions are read and checked (non-root, the locked install, static files collected, no secret)."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

import pytest

from tests.deploy.manifests import ROOT, settings_variables

SECRET_WORDS = re.compile(r"SECRET|PASSWORD|TOKEN|_KEY\b|_KEYS\b")


@dataclass
class Stage:
    image: str
    name: str
    instructions: list[tuple[str, str]] = field(default_factory=list)  # (INSTRUCTION, arguments)

    def all(self, instruction: str) -> list[str]:
        return [args for kind, args in self.instructions if kind == instruction]


def instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) per instruction: comments dropped, continued lines joined."""
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    joined = re.sub(r"\\\n", " ", "\n".join(lines))
    found = []
    for line in joined.splitlines():
        if line.strip():
            kind, _, args = line.strip().partition(" ")
            found.append((kind.upper(), " ".join(args.split())))
    return found


def stages(text: str) -> list[Stage]:
    args = {}
    found: list[Stage] = []
    for kind, arguments in instructions(text):
        if kind == "ARG" and not found:
            name, _, default = arguments.partition("=")
            args[name] = default
        elif kind == "FROM":
            image, _, name = arguments.partition(" AS ")
            image = re.sub(r"\$\{(\w+)\}", lambda m: args[m.group(1)], image)
            found.append(Stage(image, name.strip()))
        else:
            found[-1].instructions.append((kind, arguments))
    return found


@pytest.fixture(scope="module")
def built():
    return {stage.name: stage for stage in stages((ROOT / "Containerfile").read_text())}


def test_three_stages_ending_in_python_slim(built):
    assert list(built) == ["editor", "builder", "runtime"]
    assert built["runtime"].image == built["builder"].image == "python:3.11-slim"  # the venv moves between them


def test_dependencies_install_as_make_install_does_without_dev(built):
    (uv_pin,) = re.findall(r"uv==[\d.]+", (ROOT / "Makefile").read_text())
    runs = " ".join(built["builder"].all("RUN"))
    assert uv_pin in runs
    assert re.search(r"uv sync --frozen --no-dev --compile-bytecode\b", runs)
    assert built["builder"].all("COPY") == ["pyproject.toml uv.lock ./"]


def test_runs_as_an_unprivileged_user(built):
    users = [args for stage in built.values() for kind, args in stage.instructions if kind == "USER"]
    assert users == built["runtime"].all("USER") and len(users) == 1  # only the final stage, once
    uid, _, gid = users[0].partition(":")
    assert uid.isdigit() and int(uid) >= 1000 and gid.isdigit() and int(gid) >= 1000  # numeric: runAsNonRoot
    kinds = [kind for kind, _ in built["runtime"].instructions]
    assert kinds.index("USER") > max(i for i, kind in enumerate(kinds) if kind in ("RUN", "COPY"))


def test_static_files_and_bytecode_are_made_at_build_time(built):
    runs = " ".join(built["runtime"].all("RUN"))
    assert "python manage.py collectstatic --noinput" in runs
    assert "python -m compileall" in runs
    env = " ".join(built["runtime"].all("ENV"))
    assert "PYTHONDONTWRITEBYTECODE=1" in env and "/app/.venv/bin" in env
    assert "PORTAL_VAR_DIR" in settings_variables()


def test_the_editor_bundle_is_built_when_its_sources_are_there(built):
    (run,) = built["editor"].all("RUN")
    assert run.startswith("if [ -d frontend/editor ]; then") and "npm ci" in run and "npm run build" in run
    assert "--from=editor /src/static/ /app/static/" in built["runtime"].all("COPY")


def test_serves_gunicorn_on_8000(built):
    assert built["runtime"].all("EXPOSE") == ["8000"]
    (cmd,) = built["runtime"].all("CMD")
    assert shlex.split(cmd.strip("[]").replace(",", " "))[:2] == ["gunicorn", "portal.wsgi"]


def test_no_secret_in_the_image(built):
    for stage in built.values():
        for kind in ("ENV", "ARG", "LABEL"):
            for args in stage.all(kind):
                assert not SECRET_WORDS.search(args), f"{stage.name} {kind} {args}"
    # The one SECRET_KEY is collectstatic's build-only value, given to that command alone.
    values = re.findall(r"SECRET_KEY=(\S+)", " ".join(built["runtime"].all("RUN")))
    assert values == ["build-only-not-a-secret"]
    ignored = (ROOT / ".containerignore").read_text().split()
    assert {".git", ".venv", "var", ".env", "**/node_modules"} <= set(ignored)


def test_docker_and_podman_ignore_the_same_files():
    def entries(name: str) -> list[str]:
        return [line for line in (ROOT / name).read_text().splitlines() if line and not line.startswith("#")]

    assert entries(".dockerignore") == entries(".containerignore")


def test_the_parser_sees_a_root_user():
    parsed = stages("FROM python:3.11-slim AS runtime\nUSER 0\nRUN echo \\\n  hi\n")
    assert parsed[0].all("USER") == ["0"] and parsed[0].all("RUN") == ["echo hi"]
