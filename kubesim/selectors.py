"""Label and field selectors with the apiserver's syntax and semantics.

Label selectors: ``k=v``, ``k==v``, ``k!=v``, ``k in (a,b)``, ``k notin (a,b)``, ``k`` (exists),
``!k`` (does not exist), ``k>3`` / ``k<3`` (integer comparison), joined by commas (AND).
``!=`` and ``notin`` also match objects that lack the label, as in Kubernetes.

Field selectors: ``path=v``, ``path==v``, ``path!=v`` joined by commas, limited per kind to
the fields the real apiserver supports (others answer 400 "field label not supported").
A missing field reads as the empty string, so ``spec.nodeName=`` selects unbound pods.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

_KEY_RE = re.compile(r"^([a-zA-Z0-9]([-a-zA-Z0-9.]*[a-zA-Z0-9])?/)?[a-zA-Z0-9]([-a-zA-Z0-9_.]*[a-zA-Z0-9])?$")
LABEL_VALUE_RE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_SET_RE = re.compile(r"^\s*(\S+?)\s+(in|notin)\s*\((.*)\)\s*$")
_OP_RE = re.compile(r"^\s*([^\s!=<>]+)\s*(==|=|!=|>|<)\s*(.*?)\s*$")


class SelectorError(ValueError):
    """An unparseable selector; the emulator answers 400 BadRequest with its message."""


def _split_top(text: str) -> list[str]:
    """Split on commas that are not inside parentheses."""
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return [p for p in (p.strip() for p in parts) if p]


def _check_key(key: str, text: str) -> str:
    if not _KEY_RE.match(key):
        raise SelectorError(f"unable to parse requirement: invalid label key {key!r} in {text!r}")
    return key


def _check_value(value: str, text: str) -> str:
    if len(value) > 63 or not LABEL_VALUE_RE.match(value):
        raise SelectorError(f"unable to parse requirement: invalid label value {value!r} in {text!r}")
    return value


# A requirement is (key, op, values); ops: in, notin, exists, !exists, gt, lt.
Requirement = tuple[str, str, frozenset[str]]


class LabelSelector:
    __slots__ = ("requirements", "text")

    def __init__(self, requirements: list[Requirement], text: str = "") -> None:
        self.requirements = requirements
        self.text = text

    @classmethod
    def parse(cls, text: str | None) -> LabelSelector:
        text = (text or "").strip()
        reqs: list[Requirement] = []
        for part in _split_top(text):
            if part.startswith("!"):
                reqs.append((_check_key(part[1:].strip(), text), "!exists", frozenset()))
            elif m := _SET_RE.match(part):
                key, op, raw = m.group(1), m.group(2), m.group(3)
                values = frozenset(_check_value(v.strip(), text) for v in raw.split(","))
                reqs.append((_check_key(key, text), op, values))
            elif m := _OP_RE.match(part):
                key, op, value = m.group(1), m.group(2), m.group(3)
                _check_key(key, text)
                if op in (">", "<"):
                    if not re.fullmatch(r"-?\d+", value):
                        raise SelectorError(
                            f"unable to parse requirement: for 'gt', 'lt' operators, "
                            f"the value must be an integer in {text!r}"
                        )
                    reqs.append((key, "gt" if op == ">" else "lt", frozenset([value])))
                else:
                    _check_value(value, text)
                    reqs.append((key, "notin" if op == "!=" else "in", frozenset([value])))
            elif _KEY_RE.match(part):
                reqs.append((part, "exists", frozenset()))
            else:
                raise SelectorError(f"unable to parse requirement: {part!r} in {text!r}")
        return cls(reqs, text)

    @classmethod
    def from_match_expressions(
        cls, match_labels: Mapping[str, str] | None = None, match_expressions: list[Mapping[str, Any]] | None = None
    ) -> LabelSelector:
        """Build from a LabelSelector / NodeSelectorTerm structure (In, NotIn, Exists, DoesNotExist, Gt, Lt)."""
        ops = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!exists", "Gt": "gt", "Lt": "lt"}
        reqs: list[Requirement] = [(k, "in", frozenset([str(v)])) for k, v in (match_labels or {}).items()]
        for expr in match_expressions or ():
            op = ops.get(expr.get("operator", ""))
            if op is None:
                raise SelectorError(f"unsupported operator {expr.get('operator')!r}")
            reqs.append((expr["key"], op, frozenset(str(v) for v in expr.get("values") or ())))
        return cls(reqs)

    def __bool__(self) -> bool:
        return bool(self.requirements)

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        labels = labels or {}
        for key, op, values in self.requirements:
            present = key in labels
            if op == "in":
                if not present or labels[key] not in values:
                    return False
            elif op == "notin":
                if present and labels[key] in values:
                    return False
            elif op == "exists":
                if not present:
                    return False
            elif op == "!exists":
                if present:
                    return False
            else:  # gt / lt
                try:
                    have, want = int(labels[key]), int(next(iter(values)))
                except (KeyError, ValueError):
                    return False
                if (op == "gt" and not have > want) or (op == "lt" and not have < want):
                    return False
        return True


def _bool_field(path: tuple[str, ...]) -> Callable[[Mapping[str, Any]], str]:
    def get(obj: Mapping[str, Any]) -> str:
        return "true" if _dig(obj, path) else "false"

    return get


def _dig(obj: Any, path: tuple[str, ...]) -> Any:
    for part in path:
        if not isinstance(obj, Mapping):
            return None
        obj = obj.get(part)
    return obj


def _str_field(path: tuple[str, ...]) -> Callable[[Mapping[str, Any]], str]:
    def get(obj: Mapping[str, Any]) -> str:
        value = _dig(obj, path)
        return "" if value is None else str(value)

    return get


def _fields(*names: str, booleans: tuple[str, ...] = ()) -> dict[str, Callable[[Mapping[str, Any]], str]]:
    out = {n: _str_field(tuple(n.split("."))) for n in ("metadata.name", "metadata.namespace", *names)}
    out.update({n: _bool_field(tuple(n.split("."))) for n in booleans})
    return out


# Field selectors the real apiserver supports per (group, plural); everything else: name + namespace.
FIELD_SELECTORS: dict[tuple[str, str], dict[str, Callable[[Mapping[str, Any]], str]]] = {
    ("", "pods"): _fields(
        "spec.nodeName",
        "spec.restartPolicy",
        "spec.schedulerName",
        "spec.serviceAccountName",
        "status.phase",
        "status.podIP",
        "status.nominatedNodeName",
        booleans=("spec.hostNetwork",),
    ),
    ("", "nodes"): _fields(booleans=("spec.unschedulable",)),
    ("", "namespaces"): _fields("status.phase"),
    ("", "secrets"): _fields("type"),
    ("", "events"): _fields(
        "involvedObject.kind",
        "involvedObject.namespace",
        "involvedObject.name",
        "involvedObject.uid",
        "involvedObject.apiVersion",
        "involvedObject.resourceVersion",
        "involvedObject.fieldPath",
        "reason",
        "reportingComponent",
        "source",
        "type",
    ),
    ("batch", "jobs"): _fields("status.successful"),
}
_DEFAULT_FIELDS = _fields()


class FieldSelector:
    __slots__ = ("requirements", "text")

    def __init__(
        self, requirements: list[tuple[Callable[[Mapping[str, Any]], str], str, bool, str]], text: str = ""
    ) -> None:
        self.requirements = requirements  # (getter, value, equal?, field name)
        self.text = text

    @classmethod
    def parse(cls, text: str | None, group: str = "", plural: str = "") -> FieldSelector:
        text = (text or "").strip()
        getters = FIELD_SELECTORS.get((group, plural), _DEFAULT_FIELDS)
        reqs = []
        for part in _split_top(text):
            m = re.match(r"^\s*([^=!\s]+)\s*(==|=|!=)\s*(.*?)\s*$", part)
            if not m:
                raise SelectorError(f"invalid selector: {text!r}; can't understand {part!r}")
            field, op, value = m.groups()
            if field not in getters:
                raise SelectorError(f"field label not supported: {field}")
            reqs.append((getters[field], value.replace("\\,", ",").replace("\\=", "="), op != "!=", field))
        return cls(reqs, text)

    def __bool__(self) -> bool:
        return bool(self.requirements)

    def matches(self, obj: Mapping[str, Any]) -> bool:
        return all((getter(obj) == value) == equal for getter, value, equal, _ in self.requirements)

    def exact(self, field: str) -> str | None:
        """The value a ``field=value`` requirement pins (used to narrow scans), else None."""
        for _, value, equal, name in self.requirements:
            if equal and name == field:
                return value
        return None
