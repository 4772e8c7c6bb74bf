"""docs/architecture.md names code as `path.py:function` (its code map above all): each such reference must name a
file of the repository that defines that function, class or method (`Class.method`), so the map cannot rot."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "architecture.md"
REFERENCE = re.compile(r"\b((?:[a-z_][\w-]*/)*[\w-]+\.py):([A-Za-z_](?:[\w.]*\w)?)")


def references(text: str) -> list[tuple[str, str]]:
    return sorted(set(REFERENCE.findall(text)))


def defines(path: Path, dotted: str) -> bool:
    """Does the module define `dotted` (a function or class, or `Class.method`) at its top level?"""
    scope: list[ast.stmt] = ast.parse(path.read_text()).body
    for name in dotted.split("."):
        found = next(
            (
                node
                for node in scope
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and node.name == name
            ),
            None,
        )
        if found is None:
            return False
        scope = found.body
    return True


def problems(text: str) -> list[str]:
    found = []
    for path, dotted in references(text):
        module = ROOT / path
        if not module.is_file():
            found.append(f"{path}:{dotted}: no file {path}")
        elif not defines(module, dotted):
            found.append(f"{path}:{dotted}: {path} defines no {dotted}")
    return found


def test_the_code_map_names_code_that_exists():
    text = PAGE.read_text()
    assert len(references(text)) >= 40, "the code map lost its references"
    assert problems(text) == []


def test_a_reference_to_missing_code_is_caught():
    text = "`workflows/services.py:submit` `workflows/services.py:no_such_step` `nowhere/gone.py:f` `x.py:A.b`"
    assert problems(text) == [
        "nowhere/gone.py:f: no file nowhere/gone.py",
        "workflows/services.py:no_such_step: workflows/services.py defines no no_such_step",
        "x.py:A.b: no file x.py",
    ]
