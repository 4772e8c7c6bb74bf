"""Read a JSON or YAML document from a file, with errors that name the file, line and column.

Parsing is `portal.safe_yaml` within the config limits (CONFIG_DOCUMENT_MAX_BYTES/NODES/DEPTH).
"""

from __future__ import annotations

from pathlib import Path

from portal.safe_yaml import SafeYAMLError, config_limits, load, load_json

DocumentError = SafeYAMLError  # a document refused: its reason names the file, line and column


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
    """JSON when the text looks like JSON (so JSON errors are reported as such) or the file is .json; else YAML."""
    if not text.strip():
        raise DocumentError(f"{source}: the document is empty", field="--file", value=source)
    if source.endswith(".json"):
        return load_json(text, config_limits(), source)
    return load(text, config_limits(), source)
