"""Resource validation rules in OSMO's shape: `{operator, left_operand, right_operand, assert_message}`.

Operands are rendered in the sandbox, then compared: as Kubernetes quantities when both sides parse as one
(plain numbers are quantities too), as strings for EQ/NE when neither side is a quantity, otherwise the
rule reports a clear error instead of crashing (OSMO's doc example `'{{K8_MEMORY}} * 0.8'` is text, not
arithmetic; write `'{{ K8_MEMORY * 0.8 }}'`). Operators: GT GE LT LE EQ, and NE (OSMO documents NE but
its code lacks it).

A rule that reads K8_CPU/K8_GPU/K8_MEMORY/K8_STORAGE/K8_GPU_PRODUCT/K8_GPU_CUDA_DRIVER (found with
jinja2.meta, not by substring) is a node rule; the others are static. A task passes node rules when at least
one node of its platform satisfies all of them. The four resource variables are numbers (cores, devices,
bytes), so `{{ K8_MEMORY * 0.8 }}` works; the GPU product and CUDA driver are the node's label text.
Node checks are evaluated once per distinct node shape, with the task side rendered once.
"""

from __future__ import annotations

import operator as op
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal

from pools.engine.errors import EngineError
from pools.engine.quantity import Quantity, QuantityError, parse_quantity
from pools.engine.sandbox import CompiledString, compile_string, render_context, render_string
from pools.engine.variables import NODE_VARIABLES

__all__ = [
    "CUDA_DRIVER_LABELS",
    "OPERATORS",
    "CompiledRules",
    "NodeCapacity",
    "NodeRulesVerdict",
    "Rule",
    "RuleError",
    "RuleFailure",
    "compile_rules",
    "cuda_driver_version",
    "parse_rules",
    "validate_rule_set",
]

OPERATORS: dict[str, Callable[[object, object], bool]] = {
    "GT": op.gt,
    "GE": op.ge,
    "LT": op.lt,
    "LE": op.le,
    "EQ": op.eq,
    "NE": op.ne,
}
_FIELDS = ("operator", "left_operand", "right_operand", "assert_message")
_NODE_ATTRIBUTES = {"K8_CPU": "cpu", "K8_GPU": "gpu", "K8_MEMORY": "memory", "K8_STORAGE": "storage"}
# OSMO reserves these two as node tokens too (K8_TOKENS_SET in src/utils/job/workflow.py) but its lookup table
# gives them no value; the portal gives them the node's labels (text, "" when the node has no such label).
_NODE_TEXT_ATTRIBUTES = {"K8_GPU_PRODUCT": "gpu_product", "K8_GPU_CUDA_DRIVER": "cuda_driver"}
_NODE_READS = _NODE_ATTRIBUTES.keys() | _NODE_TEXT_ATTRIBUTES.keys()


class RuleError(EngineError):
    """A malformed rule (bad shape, operator or template)."""


@dataclass(frozen=True)
class NodeCapacity:
    """What a node offers a task (K8_* values). Strings and numbers are parsed as quantities; `gpu_product`
    is the node's `nvidia.com/gpu.product` label and `cuda_driver` its `nvidia.com/cuda.driver.major`,
    `.minor`, `.rev` labels joined with dots (see `cuda_driver_version`), "" when absent."""

    name: str
    cpu: Quantity
    gpu: Quantity
    memory: Quantity
    storage: Quantity
    gpu_product: str = ""
    cuda_driver: str = ""

    def __post_init__(self) -> None:
        for attribute in ("cpu", "gpu", "memory", "storage"):
            value = getattr(self, attribute)
            if not isinstance(value, Quantity):
                object.__setattr__(self, attribute, parse_quantity(value))

    def variables(self) -> dict[str, int | float | str]:
        values: dict[str, int | float | str] = {
            name: _number(getattr(self, attribute).value) for name, attribute in _NODE_ATTRIBUTES.items()
        }
        values.update({name: getattr(self, attribute) for name, attribute in _NODE_TEXT_ATTRIBUTES.items()})
        return values

    @property
    def shape(self) -> tuple:
        """What the node rules can read of this node: nodes of one shape get one verdict."""
        return (
            self.cpu.value,
            self.gpu.value,
            self.memory.value,
            self.storage.value,
            self.gpu_product,
            self.cuda_driver,
        )


CUDA_DRIVER_LABELS = ("nvidia.com/cuda.driver.major", "nvidia.com/cuda.driver.minor", "nvidia.com/cuda.driver.rev")


def cuda_driver_version(labels: Mapping[str, object]) -> str:
    """The CUDA driver version as OSMO composes it from a node's labels (BackendResource.exposed_fields in
    src/utils/connectors/postgres.py: major.minor.rev); "" when any of the three labels is missing."""
    parts = [labels.get(key) for key in CUDA_DRIVER_LABELS]
    return ".".join(str(part) for part in parts) if all(part not in (None, "") for part in parts) else ""


def _number(value: Decimal) -> int | float:
    return int(value) if value == value.to_integral_value() else float(value)


@dataclass(frozen=True)
class Operand:
    compiled: CompiledString
    node_variable: str | None  # set when the operand is exactly `{{ K8_X }}`: read straight from the node

    @property
    def reads_node(self) -> bool:
        return bool(self.compiled.refs & _NODE_READS)


@dataclass(frozen=True)
class Rule:
    validation: str
    index: int
    operator: str
    left: Operand
    right: Operand
    message: CompiledString

    @property
    def where(self) -> str:
        return f"{self.validation}[{self.index}]"

    @property
    def is_node_rule(self) -> bool:
        refs = self.left.compiled.refs | self.right.compiled.refs | self.message.refs
        return bool(refs & _NODE_READS)


@dataclass(frozen=True)
class RuleFailure:
    """A rule that did not hold (`kind="failed"`) or could not be evaluated (`kind="error"`)."""

    validation: str
    index: int
    operator: str
    left: str
    right: str
    message: str
    kind: str = "failed"

    def as_dict(self) -> dict:
        return {
            "validation": self.validation,
            "index": self.index,
            "operator": self.operator,
            "left": self.left,
            "right": self.right,
            "message": self.message,
            "kind": self.kind,
        }

    def as_error(self) -> EngineError:
        return RuleError(
            self.message, field=f"{self.validation}[{self.index}]", value=f"{self.left} {self.operator} {self.right}"
        )


@dataclass
class NodeRulesVerdict:
    passed: bool
    passing_nodes: list[str] = field(default_factory=list)
    failures: dict[str, RuleFailure] = field(default_factory=dict)
    error: str = ""

    def as_dict(self) -> dict:
        return {
            "passed": self.passed,
            "passing_nodes": list(self.passing_nodes),
            "error": self.error,
            "failures": {node: failure.as_dict() for node, failure in self.failures.items()},
        }


# ---------------------------------------------------------------------------------------------- parsing


def parse_rules(validation: str, rules: object) -> list[Rule]:
    """Parse one named rule list; raises RuleError whose field names the rule index and field."""
    if not isinstance(rules, list):
        raise RuleError("a resource validation is a list of rules", field=validation, value=type(rules).__name__)
    return [_parse_rule(validation, index, raw) for index, raw in enumerate(rules)]


def validate_rule_set(validation: str, rules: object) -> list[EngineError]:
    """Every problem of one rule list (for forms), instead of only the first."""
    if not isinstance(rules, list):
        return [RuleError("a resource validation is a list of rules", field=validation)]
    errors = []
    for index, raw in enumerate(rules):
        try:
            _parse_rule(validation, index, raw)
        except EngineError as error:
            errors.append(error)
    return errors


def _parse_rule(validation: str, index: int, raw: object) -> Rule:
    where = f"{validation}[{index}]"
    if not isinstance(raw, Mapping):
        raise RuleError(
            "a rule is a mapping with operator, left_operand, right_operand, assert_message",
            field=where,
            value=type(raw).__name__,
        )
    extra = sorted(str(key) for key in raw if key not in _FIELDS)
    if extra:
        raise RuleError(
            "unknown field; a rule has only operator, left_operand, right_operand, assert_message",
            field=f"{where}.{extra[0]}",
            value=extra[0],
        )
    for name in _FIELDS:
        if name not in raw or raw[name] is None:
            raise RuleError("required field is missing", field=f"{where}.{name}")
    operator = raw["operator"]
    if not isinstance(operator, str) or operator.strip().upper() not in OPERATORS:
        raise RuleError(f"operator must be one of {', '.join(OPERATORS)}", field=f"{where}.operator", value=operator)
    left = _operand(raw["left_operand"], f"{where}.left_operand")
    right = _operand(raw["right_operand"], f"{where}.right_operand")
    message = _template(raw["assert_message"], f"{where}.assert_message")
    rule = Rule(validation, index, operator.strip().upper(), left, right, message)
    unknown = sorted((left.compiled.refs | right.compiled.refs | message.refs) - _NODE_READS)
    unknown = [name for name in unknown if name.startswith("K8_")]
    if unknown:
        raise RuleError(
            f"unknown node variable {unknown[0]}; node variables are {', '.join(NODE_VARIABLES)}",
            field=where,
            value=unknown[0],
        )
    return rule


def _template(value: object, where: str) -> CompiledString:
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise RuleError("must be a string (a template or a literal)", field=where, value=value)
    try:
        return compile_string(str(value))
    except EngineError as error:
        raise RuleError(error.reason, field=where, value=error.value) from None


def _operand(value: object, where: str) -> Operand:
    compiled = _template(value, where)
    node_variable = compiled.bare if compiled.bare in _NODE_ATTRIBUTES else None
    return Operand(compiled, node_variable)


def compile_rules(rule_sets: Sequence[tuple[str, list[dict]]]) -> CompiledRules:
    """Parse every named rule list in order (pool's, then platform's) and split static from node rules."""
    rules = [rule for name, raw in rule_sets for rule in parse_rules(name, raw)]
    return CompiledRules(tuple(r for r in rules if not r.is_node_rule), tuple(r for r in rules if r.is_node_rule))


# ---------------------------------------------------------------------------------------------- evaluation


class _Mismatch(Exception):
    """The operands cannot be compared with this operator."""


def _value_of(text: str) -> Quantity | str:
    stripped = text.strip()
    try:
        return parse_quantity(stripped)
    except QuantityError:
        return stripped


def _compare(operator: str, left: Quantity | str, right: Quantity | str) -> bool:
    left_is_quantity, right_is_quantity = isinstance(left, Quantity), isinstance(right, Quantity)
    if left_is_quantity and right_is_quantity:
        return OPERATORS[operator](left, right)
    if left_is_quantity != right_is_quantity:
        text = right if left_is_quantity else left
        side = "right" if left_is_quantity else "left"
        raise _Mismatch(
            f"{side} operand {text!r} is not a quantity or number "
            "(arithmetic goes inside the braces: '{{ K8_MEMORY * 0.8 }}')"
        )
    if operator not in ("EQ", "NE"):
        raise _Mismatch(f"{operator} needs quantities or numbers; text can only be compared with EQ or NE")
    return OPERATORS[operator](left, right)


def _render(compiled: CompiledString, context: dict) -> str:
    return render_string(compiled, context)


@dataclass(frozen=True)
class _Side:
    """One operand, prepared: its text and value if known now, or how to get them from a node."""

    text: str | None = None
    value: Quantity | str | None = None
    error: str = ""
    node_attribute: str | None = None
    compiled: CompiledString | None = None

    def resolve(self, node: NodeCapacity, context_for: Callable[[], dict]) -> tuple[str, Quantity | str]:
        if self.error:
            raise _Mismatch(self.error)
        if self.node_attribute is not None:
            quantity = getattr(node, self.node_attribute)
            return str(_number(quantity.value)), quantity
        if self.compiled is not None:
            text = _render(self.compiled, context_for())
            return text, _value_of(text)
        return self.text, self.value


def _prepare(operand: Operand, context: dict) -> _Side:
    if operand.node_variable is not None:
        return _Side(node_attribute=_NODE_ATTRIBUTES[operand.node_variable])
    if operand.reads_node:
        return _Side(compiled=operand.compiled)
    try:
        text = _render(operand.compiled, context)
    except EngineError as error:
        return _Side(error=error.reason)
    return _Side(text=text, value=_value_of(text))


@dataclass(frozen=True)
class CompiledRules:
    static: tuple[Rule, ...] = ()
    node: tuple[Rule, ...] = ()

    def __len__(self) -> int:
        return len(self.static) + len(self.node)

    @property
    def reads_gpu_labels(self) -> bool:
        """Whether a node rule reads `K8_GPU_PRODUCT` or `K8_GPU_CUDA_DRIVER`: the inventory reads those labels
        for every member node only then."""
        text = _NODE_TEXT_ATTRIBUTES.keys()
        return any((r.left.compiled.refs | r.right.compiled.refs | r.message.refs) & text for r in self.node)

    def check_static(self, variables: Mapping[str, object]) -> list[RuleFailure]:
        """Evaluate the static rules with plain variable values; returns failures (empty = all hold)."""
        context = render_context(variables)
        return [failure for rule in self.static if (failure := _evaluate(rule, context)) is not None]

    def check_nodes(
        self, variables: Mapping[str, object], nodes: Sequence[NodeCapacity], *, pool: str = "", platform: str = ""
    ) -> NodeRulesVerdict:
        """Pass when at least one node satisfies every node rule; failures name each node's first failed rule."""
        if not nodes:
            return NodeRulesVerdict(False, error=f"no nodes in platform {platform or '?'} of pool {pool or '?'}")
        if not self.node:
            return NodeRulesVerdict(True, [n.name for n in nodes])
        context = render_context(variables)
        prepared = [(rule, _prepare(rule.left, context), _prepare(rule.right, context)) for rule in self.node]
        verdicts: dict[tuple, RuleFailure | None] = {}
        passing, failures = [], {}
        for node in nodes:
            shape = node.shape
            if shape not in verdicts:
                verdicts[shape] = _first_node_failure(prepared, node, context)
            failure = verdicts[shape]
            if failure is None:
                passing.append(node.name)
            else:
                failures[node.name] = failure
        return NodeRulesVerdict(bool(passing), passing, failures)


def _evaluate(rule: Rule, context: dict) -> RuleFailure | None:
    left_text = right_text = ""
    try:
        left_text = _render(rule.left.compiled, context)
        right_text = _render(rule.right.compiled, context)
        if _compare(rule.operator, _value_of(left_text), _value_of(right_text)):
            return None
    except (EngineError, _Mismatch) as error:
        reason = error.reason if isinstance(error, EngineError) else str(error)
        return RuleFailure(rule.validation, rule.index, rule.operator, left_text, right_text, reason, "error")
    return RuleFailure(rule.validation, rule.index, rule.operator, left_text, right_text, _message(rule, context))


def _message(rule: Rule, context: dict) -> str:
    try:
        return _render(rule.message, context)
    except EngineError as error:
        return f"{rule.message.source} (message could not be rendered: {error.reason})"


def _first_node_failure(
    prepared: list[tuple[Rule, _Side, _Side]], node: NodeCapacity, context: dict
) -> RuleFailure | None:
    node_context: dict | None = None

    def context_for() -> dict:
        nonlocal node_context
        if node_context is None:
            node_context = {**context, **node.variables()}
        return node_context

    for rule, left, right in prepared:
        left_text = right_text = ""
        try:
            left_text, left_value = left.resolve(node, context_for)
            right_text, right_value = right.resolve(node, context_for)
            if _compare(rule.operator, left_value, right_value):
                continue
        except (EngineError, _Mismatch) as error:
            reason = error.reason if isinstance(error, EngineError) else str(error)
            return RuleFailure(rule.validation, rule.index, rule.operator, left_text, right_text, reason, "error")
        return RuleFailure(
            rule.validation, rule.index, rule.operator, left_text, right_text, _message(rule, context_for())
        )
    return None
