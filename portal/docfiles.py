"""Read a JSON or YAML document from a file, with errors that name the file, line and column."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from portal.errors import DomainError


class DocumentError(DomainError):
    code = "malformed_document"

    def __str__(self) -> str:
        # The reason already names the file, line and column.
        return self.reason


def load_document(path: str | Path) -> object:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise DocumentError("file not found", field="--file", value=str(path)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise DocumentError(f"cannot read file: {exc}", field="--file", value=str(path)) from None
    return parse_document(text, source=str(path))


def parse_document(text: str, source: str = "<input>") -> object:
    """JSON when the text looks like JSON (so JSON errors are reported as such), otherwise YAML."""
    stripped = text.lstrip()
    if not stripped:
        raise DocumentError(f"{source}: the document is empty", field="--file", value=source)
    if stripped[0] in "{[" or source.endswith(".json"):
        return _parse_json(text, source)
    return _parse_yaml(text, source)


def _parse_json(text: str, source: str) -> object:
    try:
        return json.loads(text, object_pairs_hook=_no_duplicate_keys)
    except json.JSONDecodeError as exc:
        line = exc.doc.splitlines()[exc.lineno - 1] if exc.lineno - 1 < len(exc.doc.splitlines()) else ""
        raise DocumentError(
            f"{source}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg} (near {line.strip()[:60]!r})",
            field="--file", value=source) from None
    except _DuplicateKey as exc:
        raise DocumentError(f"{source}: invalid JSON: key {exc.key!r} appears twice in one object",
                            field="--file", value=source) from None


def _parse_yaml(text: str, source: str) -> object:
    try:
        return yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{mark.line + 1}:{mark.column + 1}" if mark else "?"
        problem = exc.problem or exc.context or "syntax error"
        raise DocumentError(f"{source}:{where}: invalid YAML: {problem}", field="--file", value=source) from None
    except yaml.YAMLError as exc:
        raise DocumentError(f"{source}: invalid YAML: {exc}", field="--file", value=source) from None


class _DuplicateKey(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _no_duplicate_keys(pairs):
    result = {}
    for key, value in pairs:
        if key in result:
            raise _DuplicateKey(key)
        result[key] = value
    return result
