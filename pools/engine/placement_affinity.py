"""Taints/tolerations and node affinity, compiled once per pod (docs/scheduling-semantics.md §3.1, §3.3).

Follows k8s.io/api core/v1 toleration.go, component-helpers scheduling/corev1/nodeaffinity and
apimachinery labels/selector.go, including their edge cases:
* an empty toleration key (legal only with Exists) matches every taint; an empty effect matches every effect;
* Gt/Lt tolerations need an alpha gate (1.35+); we model "gate off": they never match;
* nodeSelectorTerms are ORed, a term's expressions and fields are ANDed; an empty term list, or terms with
  neither expressions nor fields, match nothing; a term with a parse error (bad operator, invalid label
  value, non-integer Gt/Lt value) fails but other terms may still match;
* Gt/Lt on labels parse both sides as base-10 int64 (leading zeros allowed: "0206" > "0204");
* matchFields only sees metadata.name; label expressions never see it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from pools.engine.errors import EngineError
from pools.engine.k8s_syntax import is_label_value, label_value_error, qualified_name_error

FILTER_EFFECTS = frozenset({"NoSchedule", "NoExecute"})  # PreferNoSchedule only scores
UNSCHEDULABLE_TAINT = ("node.kubernetes.io/unschedulable", "", "NoSchedule")
NODE_NAME_FIELD = "metadata.name"
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1

LabelTest = Callable[[Mapping[str, str]], bool]


# ------------------------------------------------------------------------------------------- tolerations


@dataclass(frozen=True)
class Toleration:
    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""

    def tolerates(self, key: str, value: str, effect: str) -> bool:
        """ToleratesTaint: effect, then key, then the operator test."""
        if self.effect and self.effect != effect:
            return False
        if self.key and self.key != key:
            return False
        if self.operator == "Equal":
            return self.value == value
        return self.operator == "Exists"  # Gt/Lt (feature gate off) and unknown operators never match


def parse_tolerations(raw: object, path: str) -> tuple[Toleration, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise EngineError("tolerations must be a list", field=path, value=_short(raw))
    parsed = []
    for index, item in enumerate(raw):
        if not isinstance(item, dict):
            raise EngineError("a toleration must be an object", field=f"{path}[{index}]", value=_short(item))
        fields = {name: item.get(name) or "" for name in ("key", "operator", "value", "effect")}
        for name, value in fields.items():
            if not isinstance(value, str):
                raise EngineError(
                    f"toleration {name} must be a string",
                    field=f"{path}[{index}].{name}",
                    value=_short(value),
                )
        fields["operator"] = fields["operator"] or "Equal"
        parsed.append(Toleration(**fields))
    return tuple(parsed)


def taint_tuple(taint: dict) -> tuple[str, str, str]:
    return (taint.get("key") or "", taint.get("value") or "", taint.get("effect") or "")


def describe_taint(key: str, value: str, effect: str) -> str:
    """kubectl's spelling: key=value:effect, or key:effect when the value is empty."""
    return f"{key}={value}:{effect}" if value else f"{key}:{effect}"


# ------------------------------------------------------------------------------------- label requirements


@dataclass(frozen=True)
class Requirement:
    """One compiled matchExpressions entry. `test` is a closure so the hot loop makes one call."""

    key: str
    operator: str
    values: tuple[str, ...]
    test: LabelTest

    def describe(self) -> str:
        if self.operator in ("Exists", "DoesNotExist"):
            return f"{self.key} {self.operator}"
        if self.operator in ("Gt", "Lt"):
            return f"{self.key} {self.operator} {self.values[0]}"
        return f"{self.key} {self.operator} [{', '.join(self.values)}]"

    def explain(self, labels: Mapping[str, str]) -> str:
        if self.key in labels:
            return f"{self.describe()} (node has {self.key}={labels[self.key]})"
        return f"{self.describe()} (node has no {self.key} label)"


def parse_int64(text: str) -> int | None:
    """strconv.ParseInt(text, 10, 64): optional sign, ASCII digits (leading zeros fine), int64 range."""
    body = text[1:] if text[:1] in ("+", "-") else text
    if not body or not body.isascii() or not body.isdigit():
        return None
    number = int(text)
    return number if _INT64_MIN <= number <= _INT64_MAX else None


def _label_test(key: str, operator: str, values: tuple[str, ...]) -> LabelTest:
    if operator == "In":
        allowed = frozenset(values)
        return lambda labels: labels.get(key) in allowed  # absent label: None is never in the set
    if operator == "NotIn":
        denied = frozenset(values)
        return lambda labels: labels.get(key) not in denied  # absent label passes
    if operator == "Exists":
        return lambda labels: key in labels
    if operator == "DoesNotExist":
        return lambda labels: key not in labels
    bound = parse_int64(values[0])
    greater = operator == "Gt"

    def compare(labels: Mapping[str, str]) -> bool:
        raw = labels.get(key)
        number = None if raw is None else parse_int64(raw)
        if number is None:
            return False
        return number > bound if greater else number < bound

    return compare


def compile_requirement(expression: object) -> Requirement:
    """labels.NewRequirement: raises ValueError (the term's parse error) for anything it would reject."""
    if not isinstance(expression, dict):
        raise ValueError("a match expression must be an object")
    key, operator = expression.get("key") or "", expression.get("operator") or ""
    values = expression.get("values") or []
    if not isinstance(key, str) or not isinstance(operator, str) or not isinstance(values, list):
        raise ValueError("key and operator must be strings and values a list")
    if not all(isinstance(v, str) for v in values):
        raise ValueError(f"{key}: values must be strings")
    if (reason := qualified_name_error(key)) is not None:
        raise ValueError(f"key {key!r}: {reason}")
    if operator in ("In", "NotIn") and not values:
        raise ValueError(f"{key} {operator}: values can't be empty")
    if operator in ("Exists", "DoesNotExist") and values:
        raise ValueError(f"{key} {operator}: values must be empty")
    if operator in ("Gt", "Lt"):
        if len(values) != 1 or parse_int64(values[0]) is None:
            raise ValueError(f"{key} {operator}: needs exactly one integer value")
    elif operator not in ("In", "NotIn", "Exists", "DoesNotExist"):
        raise ValueError(f"{operator!r} is not a valid node selector operator")
    for value in values:
        if not is_label_value(value):
            raise ValueError(f"{key} {operator}: invalid label value {value!r}: {label_value_error(value)}")
    return Requirement(key, operator, tuple(values), _label_test(key, operator, tuple(values)))


@dataclass(frozen=True)
class FieldRequirement:
    key: str
    operator: str  # In or NotIn
    value: str

    def matches(self, node_name: str) -> bool:
        field_value = node_name if self.key == NODE_NAME_FIELD else ""  # the node exposes no other field
        return (field_value == self.value) == (self.operator == "In")

    def describe(self) -> str:
        return f"{self.key} {self.operator} [{self.value}]"


def compile_field(expression: object) -> FieldRequirement:
    """nodeSelectorRequirementsAsFieldSelector: In/NotIn with exactly one value."""
    if not isinstance(expression, dict):
        raise ValueError("a match field must be an object")
    key, operator, values = (
        expression.get("key") or "",
        expression.get("operator"),
        expression.get("values") or [],
    )
    if operator not in ("In", "NotIn"):
        raise ValueError(f"field selector operator {operator!r} is not supported (In or NotIn)")
    if not isinstance(values, list) or len(values) != 1 or not isinstance(values[0], str):
        raise ValueError(f"field selector {key} {operator}: must have exactly one value")
    return FieldRequirement(str(key), operator, values[0])


# ---------------------------------------------------------------------------------------- selector terms


@dataclass(frozen=True)
class Term:
    index: int
    requirements: tuple[Requirement, ...] = ()
    fields: tuple[FieldRequirement, ...] = ()
    error: str | None = None

    def matches(self, labels: Mapping[str, str], node_name: str) -> bool:
        if self.error is not None:
            return False
        for requirement in self.requirements:
            if not requirement.test(labels):
                return False
        if self.fields and node_name:  # upstream skips field selectors when the node has no name
            for requirement in self.fields:
                if not requirement.matches(node_name):
                    return False
        return True

    def explain(self, labels: Mapping[str, str], node_name: str) -> str:
        if self.error is not None:
            return f"term {self.index} is invalid: {self.error}"
        failing = [r.explain(labels) for r in self.requirements if not r.test(labels)]
        failing += [f"{r.describe()} (node is {node_name})" for r in self.fields if not r.matches(node_name)]
        return "; ".join(failing)


def compile_term(raw: object, index: int) -> Term | None:
    """None for an empty term (it selects nothing and is skipped, as upstream does)."""
    if not isinstance(raw, dict):
        return Term(index, error="a node selector term must be an object")
    expressions, fields = raw.get("matchExpressions") or [], raw.get("matchFields") or []
    if not expressions and not fields:
        return None
    try:
        if not isinstance(expressions, list) or not isinstance(fields, list):
            raise ValueError("matchExpressions and matchFields must be lists")
        return Term(index, tuple(map(compile_requirement, expressions)), tuple(map(compile_field, fields)))
    except ValueError as error:
        return Term(index, error=str(error))


@dataclass(frozen=True)
class RequiredAffinity:
    """requiredDuringSchedulingIgnoredDuringExecution, compiled. No terms => matches nothing."""

    terms: tuple[Term, ...]

    def matches(self, labels: Mapping[str, str], node_name: str) -> bool:
        for term in self.terms:  # noqa: SIM110 - a plain loop is faster than any() in this hot path
            if term.matches(labels, node_name):
                return True
        return False

    def explain(self, labels: Mapping[str, str], node_name: str) -> str:
        if not self.terms:
            return "nodeSelectorTerms has no non-empty term, which matches no node"
        if len(self.terms) == 1:
            return self.terms[0].explain(labels, node_name)
        return "no term matched: " + " | ".join(
            f"term {t.index}: {t.explain(labels, node_name)}" if t.error is None else t.explain(labels, node_name)
            for t in self.terms
        )


def compile_required_affinity(affinity: object, path: str) -> RequiredAffinity | None:
    """None when the pod has no required node affinity (no constraint)."""
    if affinity is None:
        return None
    if not isinstance(affinity, dict):
        raise EngineError("affinity must be an object", field=path, value=_short(affinity))
    node_affinity = affinity.get("nodeAffinity") or {}
    required = (
        node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution") if isinstance(node_affinity, dict) else None
    )
    if required is None:
        return None
    if not isinstance(required, dict):
        raise EngineError(
            "requiredDuringSchedulingIgnoredDuringExecution must be an object",
            field=f"{path}.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution",
            value=_short(required),
        )
    raw_terms = required.get("nodeSelectorTerms") or []
    if not isinstance(raw_terms, list):
        raise EngineError(
            "nodeSelectorTerms must be a list",
            value=_short(raw_terms),
            field=f"{path}.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms",
        )
    compiled = (compile_term(raw, index) for index, raw in enumerate(raw_terms))
    return RequiredAffinity(tuple(term for term in compiled if term is not None))


def parse_node_selector(raw: object, path: str) -> tuple[tuple[str, str], ...]:
    if raw is None:
        return ()
    if not isinstance(raw, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in raw.items()):
        raise EngineError("nodeSelector must map label keys to string values", field=path, value=_short(raw))
    return tuple(raw.items())


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
