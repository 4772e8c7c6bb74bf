"""Read a user's YAML or JSON once, within limits, into plain dicts and lists.

    document = load(text, Limits(max_bytes=512 * 1024, max_nodes=20_000, max_depth=32), source="train.yaml")

Every refusal is a SafeYAMLError whose reason names the source, line and column, with the document path
in `field` when there is one. Why not `yaml.safe_load`:
- its constructor expands merge keys in place, so `k1: &k1 {<<: [*k0, *k0]}` doubles the work at each
  level (30 levels held a worker for minutes), and aliases multiply work the same way;
- it silently keeps the last of two equal mapping keys, accepts integers too long to print again, NaN
  and infinity, and custom tags such as `!!set` that JSON cannot store.
Here libyaml's parser (C) produces events and this module builds the values in the same pass, counting
each node as many times as aliases and merge keys would expand it, so a bomb stops after `max_nodes`
units of work. A syntax error is libyaml's, with its position: nothing is ever parsed twice.

JSON (text starting with `{` or `[`) is read by `json` with the same limits, so JSON errors read as JSON
errors. Pure Python apart from `spec_limits`/`config_limits`, which read Django settings when called.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

import yaml
from yaml.constructor import SafeConstructor
from yaml.events import (
    AliasEvent,
    DocumentEndEvent,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
)
from yaml.nodes import ScalarNode
from yaml.resolver import Resolver

from portal.errors import DomainError
from portal.json_paths import join_index, join_key

try:
    from yaml._yaml import CParser as _Parser  # libyaml: about 10x faster than the pure Python parser
except ImportError:  # pragma: no cover - PyYAML built without libyaml
    from yaml import Loader as _Parser

__all__ = [
    "INT_DIGITS_MAX",
    "ItemLimit",
    "Limits",
    "SafeYAMLError",
    "check_document",
    "config_limits",
    "load",
    "load_json",
    "load_yaml",
    "looks_like_json",
    "spec_limits",
]

INT_DIGITS_MAX = 4300  # Python's own limit for converting integers to and from decimal text
_INT_BITS_MAX = math.ceil(INT_DIGITS_MAX * math.log2(10))
_TAG = "tag:yaml.org,2002:"
_MERGE = object()  # the value of a `<<` key: merge the mapping(s) it names
_NO_KEY = object()


class SafeYAMLError(DomainError):
    """A document refused: malformed (`syntax`), or beyond a limit, or holding a value it may not (a duplicate
    key, NaN, ...). The reason names `source:line:column` where known, `field` the path in the document."""

    code = "malformed_document"

    def __init__(self, reason: str, *, field: str = "", value: object = None, syntax: bool = False) -> None:
        super().__init__(reason, field=field, value=value)
        self.syntax = syntax

    def __str__(self) -> str:
        return self.reason


@dataclass(frozen=True)
class ItemLimit:
    """At most `maximum` items in total in the lists found at `paths` (keys; `*` is any key or index)."""

    name: str
    maximum: int
    paths: tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class Limits:
    max_bytes: int = 512 * 1024  # UTF-8 bytes, checked before parsing
    max_nodes: int = 20_000  # scalars and collections, keys included, counted through aliases and merges
    max_depth: int = 32  # nested collections, also through aliases
    items: ItemLimit | None = None
    what: str = "document"  # "the spec is larger than ..."


def spec_limits() -> Limits:
    """Workflow specs: WORKFLOW_SPEC_MAX_BYTES/NODES/DEPTH and WORKFLOW_MAX_TASKS (portal/settings.py)."""
    from django.conf import settings

    tasks = ItemLimit(
        "tasks", settings.WORKFLOW_MAX_TASKS, (("workflow", "tasks"), ("workflow", "groups", "*", "tasks"))
    )
    return Limits(
        settings.WORKFLOW_SPEC_MAX_BYTES,
        settings.WORKFLOW_SPEC_MAX_NODES,
        settings.WORKFLOW_SPEC_MAX_DEPTH,
        tasks,
        "spec",
    )


def config_limits() -> Limits:
    """Config documents and kubeconfigs: CONFIG_DOCUMENT_MAX_BYTES/NODES/DEPTH (portal/settings.py)."""
    from django.conf import settings

    return Limits(
        settings.CONFIG_DOCUMENT_MAX_BYTES,
        settings.CONFIG_DOCUMENT_MAX_NODES,
        settings.CONFIG_DOCUMENT_MAX_DEPTH,
        None,
        "document",
    )


def looks_like_json(text: str) -> bool:
    return text.lstrip()[:1] in ("{", "[")


def load(text: str, limits: Limits = Limits(), source: str = "<input>") -> object:
    """JSON when the text looks like JSON (so its errors read as JSON errors), otherwise YAML."""
    if looks_like_json(text):
        return load_json(text, limits, source)
    return load_yaml(text, limits, source)


def _check_bytes(text: str, limits: Limits, source: str) -> None:
    size = len(text) if len(text) > limits.max_bytes or len(text) * 4 <= limits.max_bytes else len(text.encode())
    if size > limits.max_bytes:
        raise SafeYAMLError(
            f"{source}: the {limits.what} is larger than {limits.max_bytes} bytes ({size} or more)", value=size
        )


# ---------------------------------------------------------------------------------------------- YAML


def load_yaml(text: str, limits: Limits = Limits(), source: str = "<input>") -> object:
    """One YAML document as plain values; None for an empty stream."""
    _check_bytes(text, limits, source)
    parser = _Parser(text)
    try:
        return _Builder(parser, limits, source).document()
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        where = f"{mark.line + 1}:{mark.column + 1}" if mark else "?"
        problem = error.problem or error.context or "syntax error"
        raise SafeYAMLError(f"{source}:{where}: invalid YAML: {problem}", syntax=True) from None  # source: named
    except yaml.YAMLError as error:
        raise SafeYAMLError(f"{source}: invalid YAML: {error}", syntax=True) from None
    finally:
        parser.dispose()


class _Frame:
    """A mapping or sequence being built."""

    __slots__ = ("anchor", "count", "height", "items", "key", "key_lines", "merges", "value")

    def __init__(self, value, anchor, items):
        self.value, self.anchor, self.items = value, anchor, items
        self.count, self.height, self.key, self.key_lines, self.merges = 1, 0, _NO_KEY, {}, None


class _Builder:
    def __init__(self, parser, limits: Limits, source: str) -> None:
        self.parser, self.limits, self.source = parser, limits, source
        self.stack: list[_Frame] = []
        self.anchors: dict[str, tuple[object, int, int]] = {}  # name -> (value, node count, height)
        self.open_anchors: set[str] = set()
        self.nodes = 0
        self.items = 0
        self.result = None
        self.mark = None

    def document(self) -> object:
        get = self.parser.get_event
        get()  # stream start
        event = get()
        if not isinstance(event, yaml.DocumentStartEvent):
            return None  # an empty stream
        handlers = {
            ScalarEvent: self.scalar,
            AliasEvent: self.alias,
            MappingStartEvent: self.start_mapping,
            SequenceStartEvent: self.start_sequence,
            MappingEndEvent: self.end,
            SequenceEndEvent: self.end,
        }
        while True:
            event = get()
            kind = type(event)
            if kind is DocumentEndEvent:
                break
            self.mark = event.start_mark
            handlers[kind](event)
        event = get()
        if isinstance(event, yaml.DocumentStartEvent):
            self.fail("expected a single document, found a second one ('---')")
        return self.result

    # ------------------------------------------------------------------------ events

    def scalar(self, event) -> None:
        value = self.construct(event)
        self.count(1)
        if event.anchor is not None:
            self.anchors[event.anchor] = (value, 1, 0)
        self.add(value, 1, 0)

    def alias(self, event) -> None:
        name = event.anchor
        if name in self.open_anchors:
            self.fail(f"recursive alias *{name}: it refers to a node that contains it")
        if name not in self.anchors:
            self.fail(f"unknown alias *{name}: no anchor &{name} before it")
        value, count, height = self.anchors[name]
        self.count(count)
        if height and len(self.stack) + height > self.limits.max_depth:
            self.too_deep()
        self.add(value, count, height)

    def start_mapping(self, event) -> None:
        self.start(event, {}, "map")

    def start_sequence(self, event) -> None:
        self.start(event, [], "seq")

    def start(self, event, value, kind: str) -> None:
        if event.tag not in (None, "!", _TAG + kind):
            self.fail(f"the tag {event.tag} is not allowed; use plain mappings, lists and scalars")
        self.count(1)
        if len(self.stack) >= self.limits.max_depth:
            self.too_deep()
        items = kind == "seq" and self.limits.items is not None and self.counts_items()
        self.stack.append(_Frame(value, event.anchor, items))
        if event.anchor is not None:
            self.open_anchors.add(event.anchor)

    def end(self, event) -> None:
        frame = self.stack.pop()
        value = frame.value
        if frame.merges:
            value = self.merged(frame)
        if frame.anchor is not None:
            self.open_anchors.discard(frame.anchor)
            self.anchors[frame.anchor] = (value, frame.count, frame.height + 1)
        self.add(value, frame.count, frame.height + 1)

    # ------------------------------------------------------------------------ building

    def add(self, value, count: int, height: int) -> None:
        if not self.stack:
            self.result = value
            return
        frame = self.stack[-1]
        frame.count += count
        if height > frame.height:
            frame.height = height
        if isinstance(frame.value, list):
            if value is _MERGE:
                self.fail("'<<' (merge) is only allowed as a mapping key")
            if frame.items:
                self.items += 1
                if self.items > self.limits.items.maximum:
                    limit = self.limits.items
                    self.fail(
                        f"more than {limit.maximum} {limit.name} (at most {limit.maximum} are allowed)",
                        value=self.items,
                    )
            frame.value.append(value)
            return
        if frame.key is _NO_KEY:
            self.add_key(frame, value, height)
            return
        key, frame.key = frame.key, _NO_KEY
        if key is _MERGE:
            self.add_merge(frame, value)
        elif value is _MERGE:
            self.fail("'<<' (merge) is only allowed as a mapping key")
        else:
            frame.value[key] = value

    def add_key(self, frame: _Frame, key, height: int) -> None:
        if height:
            self.fail("a mapping key must be a scalar, not a mapping or a list")
        line = self.mark.line + 1
        if key in frame.key_lines:
            shown = "<<" if key is _MERGE else key
            self.fail(
                f"duplicate key {shown!r} (first at line {frame.key_lines[key]}); a key may appear once in a mapping",
                value=shown,
                key=shown,
            )
        frame.key_lines[key] = line
        frame.key = key

    def add_merge(self, frame: _Frame, value) -> None:
        sources = [value] if isinstance(value, dict) else value if isinstance(value, list) else None
        if sources is None or not all(isinstance(source, dict) for source in sources):
            self.fail("'<<' (merge) takes a mapping or a list of mappings")
        if frame.merges is None:
            frame.merges = []
        # PyYAML's order: a list's first mapping wins over the next ones; the mapping's own keys win over all.
        frame.merges.extend(reversed(sources) if isinstance(value, list) else sources)

    @staticmethod
    def merged(frame: _Frame) -> dict:
        result: dict = {}
        for source in frame.merges:
            result.update(source)
        result.update(frame.value)
        return result

    def counts_items(self) -> bool:
        """Whether the sequence starting here is one of the lists whose items `Limits.items` counts."""
        depth = len(self.stack) + 1
        for pattern in self.limits.items.paths:
            if len(pattern) == depth - 1 and all(
                want == "*" or want == got for want, got in zip(pattern, self.keys(), strict=True)
            ):
                return True
        return False

    def keys(self) -> list[object]:
        return [frame.key if isinstance(frame.value, dict) else len(frame.value) for frame in self.stack]

    # ------------------------------------------------------------------------ scalars

    def construct(self, event) -> object:
        tag, value = event.tag, event.value
        if tag is None or tag == "!":
            if not event.implicit[0]:  # quoted
                return value
            tag = _RESOLVER.resolve(ScalarNode, value, event.implicit)
        if tag == _TAG + "str":
            return value
        builder = _SCALARS.get(tag)
        if builder is None:
            self.fail(f"the tag {tag} is not allowed; use plain mappings, lists and scalars", value=value)
        return builder(self, value)

    def integer(self, text: str) -> int:
        if len(text) > INT_DIGITS_MAX and sum(c.isalnum() for c in text) > INT_DIGITS_MAX:
            self.fail(f"an integer may have at most {INT_DIGITS_MAX} digits", value=text[:40] + "...")
        try:
            number = _CONSTRUCTOR.construct_yaml_int(ScalarNode(_TAG + "int", text))
        except ValueError:
            self.fail("is not a valid integer", value=text[:40])
        if number.bit_length() > _INT_BITS_MAX:
            self.fail(f"an integer may have at most {INT_DIGITS_MAX} digits", value=text[:40])
        return number

    def floating(self, text: str) -> float:
        number = _CONSTRUCTOR.construct_yaml_float(ScalarNode(_TAG + "float", text))
        if not math.isfinite(number):
            self.fail("numbers must be finite: NaN and infinity are not allowed", value=text[:40])
        return number

    def timestamp(self, text: str) -> object:
        try:
            return _CONSTRUCTOR.construct_yaml_timestamp(ScalarNode(_TAG + "timestamp", text))
        except (ValueError, OverflowError) as error:
            self.fail(f"is not a valid date or time: {error}", value=text)

    # ------------------------------------------------------------------------ limits and errors

    def count(self, nodes: int) -> None:
        self.nodes += nodes
        if self.nodes > self.limits.max_nodes:
            self.fail(
                f"the {self.limits.what} has more than {self.limits.max_nodes} values (aliases and '<<' "
                "merges count every value they repeat)",
                value=self.nodes,
            )

    def too_deep(self) -> None:
        self.fail(
            f"the {self.limits.what} is nested more than {self.limits.max_depth} levels deep "
            "(aliases count the depth they bring)"
        )

    def fail(self, reason: str, value: object = None, key: object = _NO_KEY):
        mark = self.mark
        where = f"{mark.line + 1}:{mark.column + 1}" if mark else "?"
        path = self.path()
        raise SafeYAMLError(
            f"{self.source}:{where}: {reason}", value=value, field=path if key is _NO_KEY else join_key(path, key)
        )

    def path(self) -> str:
        text = ""
        for frame in self.stack:
            if isinstance(frame.value, list):
                text = join_index(text, len(frame.value))
            elif frame.key is not _NO_KEY and frame.key is not _MERGE:
                text = join_key(text, frame.key)
        return text


_RESOLVER = Resolver()
_CONSTRUCTOR = SafeConstructor()
_SCALARS = {
    _TAG + "null": lambda builder, text: None,
    _TAG + "bool": lambda builder, text: SafeConstructor.bool_values[text.lower()],
    _TAG + "int": _Builder.integer,
    _TAG + "float": _Builder.floating,
    _TAG + "timestamp": _Builder.timestamp,
    _TAG + "merge": lambda builder, text: _MERGE,
    _TAG + "value": lambda builder, text: text,  # a plain `=`: a string, as PyYAML reads it as a key
}


# ---------------------------------------------------------------------------------------------- JSON


class _JSONRefusal(ValueError):
    def __init__(self, reason: str, value: object = None, *, duplicate: bool = False) -> None:
        super().__init__(reason)
        self.reason, self.value, self.duplicate = reason, value, duplicate


def load_json(text: str, limits: Limits = Limits(), source: str = "<input>") -> object:
    """A JSON document as plain values: duplicate keys, NaN/Infinity and integers over INT_DIGITS_MAX digits
    refused, then depth and size checked (JSON has no aliases: its size bounds the work)."""
    _check_bytes(text, limits, source)
    try:
        document = json.loads(
            text,
            object_pairs_hook=_unique_keys,
            parse_constant=_no_constant,
            parse_int=_bounded_int,
            parse_float=_finite_float,
        )
    except json.JSONDecodeError as error:
        lines = error.doc.splitlines()
        near = lines[error.lineno - 1].strip()[:60] if error.lineno - 1 < len(lines) else ""
        raise SafeYAMLError(
            f"{source}:{error.lineno}:{error.colno}: invalid JSON: {error.msg} (near {near!r})", syntax=True
        ) from None
    except _JSONRefusal as error:
        where = _duplicate_position(text, error.value) if error.duplicate else None
        at = f"{source}:{where[0]}:{where[1]}" if where else source
        raise SafeYAMLError(f"{at}: invalid JSON: {error.reason}", value=error.value) from None
    except RecursionError:
        raise SafeYAMLError(
            f"{source}: the {limits.what} is nested more than {limits.max_depth} levels deep", value=source
        ) from None
    check_document(document, limits, source)
    return document


def _unique_keys(pairs: list[tuple[str, object]]) -> dict:
    result = dict(pairs)
    if len(result) != len(pairs):
        seen: set[str] = set()
        duplicate = next(key for key, _ in pairs if key in seen or seen.add(key))
        raise _JSONRefusal(f"key {duplicate!r} appears twice in one object", duplicate, duplicate=True)
    return result


def _duplicate_position(text: str, key: str) -> tuple[int, int] | None:
    """Line and column of the first `key` that repeats within one object, read from the text's YAML events
    (JSON is YAML's flow style), so an editor can mark the line json's hook cannot name."""
    frames: list[list] = []  # per open collection: [keys seen (None in a list), next scalar is a key]

    def one_item_done() -> None:
        if frames and frames[-1][0] is not None:
            frames[-1][1] = not frames[-1][1]

    try:
        for event in yaml.parse(text, Loader=_Parser):
            if isinstance(event, MappingStartEvent | SequenceStartEvent):
                frames.append([set() if isinstance(event, MappingStartEvent) else None, True])
            elif isinstance(event, MappingEndEvent | SequenceEndEvent):
                frames.pop()
                one_item_done()
            elif isinstance(event, ScalarEvent | AliasEvent) and frames:
                keys, is_key = frames[-1]
                if keys is not None and is_key:
                    if event.value == key and key in keys:
                        return event.start_mark.line + 1, event.start_mark.column + 1
                    keys.add(event.value)
                one_item_done()
    except yaml.YAMLError:
        return None
    return None


def _no_constant(name: str) -> float:
    raise _JSONRefusal(f"numbers must be finite: {name} is not allowed", name)


def _bounded_int(text: str) -> int:
    if len(text) > INT_DIGITS_MAX + 1:
        raise _JSONRefusal(f"an integer may have at most {INT_DIGITS_MAX} digits", text[:40] + "...")
    return int(text)


def _finite_float(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise _JSONRefusal(f"numbers must be finite: {text[:40]} is too large", text[:40])
    return number


def check_document(document: object, limits: Limits = Limits(), source: str = "<input>") -> None:
    """Limits on an already-parsed document (a JSON request body): depth, values, finite numbers, integer
    size. Iterative; stops at the first value over a limit."""
    stack: list[tuple[object, int, str]] = [(document, 1, "")]
    nodes = 0
    while stack:
        value, depth, path = stack.pop()
        nodes += 1
        if nodes > limits.max_nodes:
            raise SafeYAMLError(f"{source}: the {limits.what} has more than {limits.max_nodes} values", value=nodes)
        if isinstance(value, dict | list):
            if depth > limits.max_depth:
                raise SafeYAMLError(
                    f"{source}: the {limits.what} is nested more than {limits.max_depth} levels deep", field=path
                )
            if isinstance(value, dict):
                nodes += len(value)  # the keys
                stack.extend((item, depth + 1, join_key(path, key)) for key, item in value.items())
            else:
                stack.extend((item, depth + 1, join_index(path, index)) for index, item in enumerate(value))
        elif isinstance(value, float) and not math.isfinite(value):
            raise SafeYAMLError(
                f"{source}: numbers must be finite: NaN and infinity are not allowed", field=path, value=str(value)
            )
        elif isinstance(value, int) and value.bit_length() > _INT_BITS_MAX:
            raise SafeYAMLError(f"{source}: an integer may have at most {INT_DIGITS_MAX} digits", field=path)
