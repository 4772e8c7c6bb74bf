"""Which line of a YAML or JSON text an error is about, so an editor can mark it.

    error_line(text, error)          # 7, or None when the error names no place in the text

A syntax error (portal.safe_yaml) names `source:line:column` in its reason; a semantic error names a
document path in `field` (`tasks[0].image`, `spec.containers[0].resources.limits["nvidia.com/gpu"]`),
which is found by walking the text's YAML events (JSON is read the same way: YAML's flow style). A path
that is not in the text (a default the portal added) falls back to its deepest ancestor that is; a path
into something built from the text (a platform's resolved pod, from a pod template) is tried without its
leading keys.
"""

from __future__ import annotations

import re

import yaml
from yaml.events import (
    AliasEvent,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
)

from portal.json_paths import join_index, join_key

try:
    from yaml._yaml import CParser as _Parser
except ImportError:  # pragma: no cover - PyYAML built without libyaml
    from yaml import Loader as _Parser

MAX_TEXT = 2 * 1024 * 1024  # texts this large were refused before any semantic check
_POSITION = re.compile(r":(\d+):(\d+):")


def error_line(text: str, error: object, prefixes: tuple[str, ...] = ("",), root: str = "") -> int | None:
    """The 1-based line `error` is about: the position in its reason, else its `field` path looked up in
    `text` under each of `prefixes` in turn (a spec's paths are relative to `workflow.`). A path that starts
    with `root` (the form field holding the text: `rules[0].operator`) is looked up without it."""
    reason = str(getattr(error, "reason", "") or "")
    position = _POSITION.search(reason)
    if position:
        return int(position.group(1))
    field = str(getattr(error, "field", "") or "")
    if root and field.startswith(root) and field[len(root) : len(root) + 1] in (".", "["):
        field = field[len(root) :].removeprefix(".")
    if not field or not text:
        return None
    for prefix in prefixes:
        line = line_of(text, f"{prefix}.{field}" if prefix and not field.startswith("[") else prefix + field)
        if line is not None:
            return line
    for tail in _tails(field):  # a path into something built from the text: `platforms.a100.spec.tolerations`
        line = line_of(text, tail)
        if line is not None:
            return line
    return None


def _tails(path: str) -> list[str]:
    """`a.b[0].c` -> [`b[0].c`, `c`]: the path without its leading keys (dots inside brackets kept)."""
    tails, depth, quoted = [], 0, False
    for index, char in enumerate(path):
        if char == '"' and depth:
            quoted = not quoted
        elif not quoted and char in "[]":
            depth += 1 if char == "[" else -1
        elif char == "." and not depth:
            tails.append(path[index + 1 :])
    return tails


def without_position(reason: str) -> str:
    """`spec.yaml:3:7: invalid YAML: …` as `invalid YAML: …` (for a message shown at its line)."""
    position = _POSITION.search(reason)
    return reason[position.end() :].strip() if position else reason


def line_of(text: str, path: str) -> int | None:
    """The line where `path` is written in `text` (its key, or its list item), or that of its deepest
    written ancestor below the root; None when not even the first step is there or the text is not YAML."""
    if len(text) > MAX_TEXT:
        return None
    lines = _PathLines(path)
    parser = _Parser(text)
    try:
        lines.walk(parser)
    except yaml.YAMLError:
        pass  # a broken text: whatever was found before the break
    finally:
        parser.dispose()
    return lines.best


class _PathLines:
    """Walks events keeping the current path; remembers the line of the longest prefix of `wanted`."""

    def __init__(self, wanted: str) -> None:
        self.wanted = wanted
        self.best: int | None = None
        self.best_length = 0
        self.stack: list[list] = []  # [is_mapping, path, pending key (None: expecting a key), next index]

    def walk(self, parser) -> None:
        while True:
            event = parser.get_event()
            if event is None or isinstance(event, yaml.StreamEndEvent):
                return
            if isinstance(event, (ScalarEvent, AliasEvent, MappingStartEvent, SequenceStartEvent)):
                if self.value(event):
                    return
            elif isinstance(event, (MappingEndEvent, SequenceEndEvent)):
                self.stack.pop()
                self.done_value()

    def value(self, event) -> bool:
        """A node starts; True once the wanted path itself is found."""
        line = event.start_mark.line + 1
        if self.stack and self.stack[-1][0] and self.stack[-1][2] is None:  # a mapping key
            if not isinstance(event, ScalarEvent):
                raise yaml.YAMLError("a complex key: give up")
            self.stack[-1][2] = event.value
            return self.seen(join_key(self.stack[-1][1], event.value), line)
        path = self.here()
        if self.stack and not self.stack[-1][0] and self.seen(path, line):
            return True
        if isinstance(event, MappingStartEvent):
            self.stack.append([True, path, None, 0])
        elif isinstance(event, SequenceStartEvent):
            self.stack.append([False, path, None, 0])
        else:
            self.done_value()
        return False

    def here(self) -> str:
        if not self.stack:
            return ""
        is_mapping, path, key, index = self.stack[-1]
        return join_key(path, key) if is_mapping else join_index(path, index)

    def done_value(self) -> None:
        if not self.stack:
            return
        if self.stack[-1][0]:
            self.stack[-1][2] = None
        else:
            self.stack[-1][3] += 1

    def seen(self, path: str, line: int) -> bool:
        if path == self.wanted:
            self.best = line
            return True
        if len(path) > self.best_length and self.wanted.startswith(path) and self.wanted[len(path)] in ".[":
            self.best, self.best_length = line, len(path)
        return False
