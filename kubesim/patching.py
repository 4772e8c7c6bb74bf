"""Patch helpers: JSON merge patch (RFC 7386) and JSON patch (RFC 6902).

Stored objects are treated as immutable; these functions return new containers along the
changed paths and share the untouched sub-trees with the input.
"""

from __future__ import annotations

import copy
from typing import Any


class PatchError(ValueError):
    pass


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: dicts merge recursively, ``null`` deletes a key, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict):
            result[key] = merge_patch(result.get(key), value)
        else:
            result[key] = copy.deepcopy(value)
    return result


def _unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise PatchError(f"invalid JSON pointer: {path!r}")
    return [_unescape(t) for t in path[1:].split("/")]


def _index(container: list[Any], token: str, allow_end: bool) -> int:
    if token == "-" and allow_end:
        return len(container)
    try:
        idx = int(token)
    except ValueError:
        raise PatchError(f"invalid array index {token!r}") from None
    if idx < 0 or idx > len(container) or (idx == len(container) and not allow_end):
        raise PatchError(f"array index {idx} out of range")
    return idx


def _get(doc: Any, tokens: list[str]) -> Any:
    for token in tokens:
        if isinstance(doc, dict):
            if token not in doc:
                raise PatchError(f"path not found: /{'/'.join(tokens)}")
            doc = doc[token]
        elif isinstance(doc, list):
            doc = doc[_index(doc, token, allow_end=False)]
        else:
            raise PatchError(f"path not found: /{'/'.join(tokens)}")
    return doc


def _apply(doc: Any, tokens: list[str], fn: Any) -> Any:
    """Copy containers along ``tokens`` and let ``fn(parent_copy, last_token)`` edit the last one."""
    if not tokens:
        raise PatchError("operations on the document root are not supported")
    head, rest = tokens[0], tokens[1:]
    if isinstance(doc, dict):
        new: Any = dict(doc)
        if rest:
            if head not in new:
                raise PatchError(f"path not found: {head!r}")
            new[head] = _apply(new[head], rest, fn)
        else:
            fn(new, head)
        return new
    if isinstance(doc, list):
        new = list(doc)
        if rest:
            idx = _index(new, head, allow_end=False)
            new[idx] = _apply(new[idx], rest, fn)
        else:
            fn(new, head)
        return new
    raise PatchError(f"cannot traverse into a scalar at {head!r}")


def _add(value: Any):
    def fn(parent: Any, token: str) -> None:
        if isinstance(parent, dict):
            parent[token] = copy.deepcopy(value)
        else:
            parent.insert(_index(parent, token, allow_end=True), copy.deepcopy(value))

    return fn


def _remove(parent: Any, token: str) -> None:
    if isinstance(parent, dict):
        if token not in parent:
            raise PatchError(f"cannot remove a missing key {token!r}")
        del parent[token]
    else:
        del parent[_index(parent, token, allow_end=False)]


def _replace(value: Any):
    def fn(parent: Any, token: str) -> None:
        if isinstance(parent, dict):
            if token not in parent:
                raise PatchError(f"cannot replace a missing key {token!r}")
            parent[token] = copy.deepcopy(value)
        else:
            parent[_index(parent, token, allow_end=False)] = copy.deepcopy(value)

    return fn


def json_patch(doc: Any, ops: list[dict[str, Any]]) -> Any:
    """RFC 6902: add, remove, replace, move, copy, test."""
    if not isinstance(ops, list):
        raise PatchError("a JSON patch must be a list of operations")
    for op in ops:
        if not isinstance(op, dict) or "op" not in op or "path" not in op:
            raise PatchError(f"invalid JSON patch operation: {op!r}")
        kind, tokens = op["op"], _pointer(op["path"])
        if kind == "add":
            doc = _apply(doc, tokens, _add(op.get("value")))
        elif kind == "remove":
            doc = _apply(doc, tokens, _remove)
        elif kind == "replace":
            doc = _apply(doc, tokens, _replace(op.get("value")))
        elif kind in ("move", "copy"):
            source = _pointer(op.get("from", ""))
            value = _get(doc, source)
            if kind == "move":
                doc = _apply(doc, source, _remove)
            doc = _apply(doc, tokens, _add(value))
        elif kind == "test":
            if _get(doc, tokens) != op.get("value"):
                raise PatchError(f"test operation failed at {op['path']!r}")
        else:
            raise PatchError(f"unknown JSON patch operation {kind!r}")
    return doc
