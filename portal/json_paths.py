"""JSON-ish paths for error fields and provenance: `spec.containers[0].resources.limits["nvidia.com/gpu"]`.

Plain keys join with a dot; keys that would be ambiguous (dots, slashes, spaces) are quoted in brackets,
so every path maps back to exactly one place in the document.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

_PLAIN_KEY = re.compile(r"[A-Za-z_$][A-Za-z0-9_$-]*")
_QUOTED: dict[object, str | None] = {}  # key -> '["key"]' when it needs quoting, None when plain
_QUOTED_LIMIT = 10_000
_MISSING = object()


def _quoted(key: object) -> str | None:
    try:
        return _QUOTED[key]
    except (KeyError, TypeError):
        pass
    text = str(key)
    quoted = None if _PLAIN_KEY.fullmatch(text) else f"[{json.dumps(text)}]"
    if len(_QUOTED) < _QUOTED_LIMIT and isinstance(key, str):
        _QUOTED[key] = quoted
    return quoted


def join_key(path: str, key: object) -> str:
    quoted = _quoted(key)
    if quoted is not None:
        return f"{path}{quoted}"
    return f"{path}.{key}" if path else str(key)


def join_index(path: str, index: int) -> str:
    return f"{path}[{index}]"


def chain_to_path(chain: tuple | None) -> str:
    """Format a linked chain `(parent_chain, key_or_index)`; built lazily so hot loops never format strings."""
    parts = []
    while chain is not None:
        chain, step = chain
        parts.append(step)
    path = ""
    for step in reversed(parts):
        path = join_index(path, step) if isinstance(step, int) else join_key(path, step)
    return path


def child_origin(origin: object, key: object) -> object:
    """An origin tree mirrors its value; a non-container origin is a label that covers its whole subtree."""
    if isinstance(origin, dict):
        return origin.get(key)
    if isinstance(origin, list):
        return origin[key] if isinstance(key, int) and key < len(origin) else None
    return origin


def iter_leaves(value: object, origin: object = None, path: str = "") -> Iterator[tuple[str, object, object]]:
    """Yield (path, leaf value, origin label) for every scalar and every empty dict/list."""
    if isinstance(value, dict) and value:
        for key, child in value.items():
            yield from iter_leaves(child, child_origin(origin, key), join_key(path, key))
    elif isinstance(value, list) and value:
        for index, child in enumerate(value):
            yield from iter_leaves(child, child_origin(origin, index), join_index(path, index))
    else:
        yield path, value, None if isinstance(origin, (dict, list)) else origin


def leaf_origins(value: object, origin: object = None) -> dict[str, object]:
    """{path: origin label} for every leaf; the fast, non-generator form of iter_leaves."""
    out: dict[str, object] = {}
    _collect(value, origin, "", out)
    return out


def _collect(value: object, origin: object, path: str, out: dict[str, object]) -> None:
    """Children are handled in the loop (most are leaves: no call for them); a plain key's path is made
    without a call (join_key's answer, from its cache)."""
    kind = type(value)
    if kind is dict and value:
        if type(origin) is not dict:  # a label (or a mismatched tree: no label) covers the whole subtree
            _collect_label(value, None if type(origin) is list else origin, path, out)
            return
        for key, child in value.items():
            quoted = _QUOTED.get(key, _MISSING)  # only str keys are cached, and no other key equals one
            child_path = (f"{path}.{key}" if path else key) if quoted is None else join_key(path, key)
            child_origin = origin.get(key)
            if type(child) in (dict, list) and child:
                _collect(child, child_origin, child_path, out)
            else:
                out[child_path] = None if type(child_origin) in (dict, list) else child_origin
    elif kind is list and value:
        if type(origin) is not list:
            _collect_label(value, None if type(origin) is dict else origin, path, out)
            return
        for index, child in enumerate(value):
            child_path = f"{path}[{index}]"
            child_origin = origin[index] if index < len(origin) else None  # an item added after resolution
            if type(child) in (dict, list) and child:
                _collect(child, child_origin, child_path, out)
            else:
                out[child_path] = None if type(child_origin) in (dict, list) else child_origin
    else:
        out[path] = None if type(origin) in (dict, list) else origin


def _collect_label(value: object, label: object, path: str, out: dict[str, object]) -> None:
    """_collect under one label: no origin to follow."""
    if type(value) is dict:
        for key, child in value.items():
            quoted = _QUOTED.get(key, _MISSING)  # only str keys are cached, and no other key equals one
            child_path = (f"{path}.{key}" if path else key) if quoted is None else join_key(path, key)
            if type(child) in (dict, list) and child:
                _collect_label(child, label, child_path, out)
            else:
                out[child_path] = label
    else:
        for index, child in enumerate(value):
            child_path = f"{path}[{index}]"
            if type(child) in (dict, list) and child:
                _collect_label(child, label, child_path, out)
            else:
                out[child_path] = label


def origin_tree_from_paths(value: object, labels: dict[str, object], path: str = "") -> object:
    """Rebuild an origin tree from a flat {leaf path: label} map (the stored form)."""
    if isinstance(value, dict) and value:
        return {k: origin_tree_from_paths(v, labels, join_key(path, k)) for k, v in value.items()}
    if isinstance(value, list) and value:
        return [origin_tree_from_paths(v, labels, join_index(path, i)) for i, v in enumerate(value)]
    return labels.get(path)


def json_copy(value: object) -> object:
    """Deep copy of plain JSON data (much faster than copy.deepcopy)."""
    if isinstance(value, dict):
        return {k: json_copy(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_copy(v) for v in value]
    return value
