"""Reading calls of the seed's machine-pools module from a Terraform file (pure: HCL text in, MACHINE_POOL
documents out; clusters.machinepools.importing writes them).

HCL is parsed by python-hcl2; its rule tree keeps each element's line, so every refusal names the file, the
line and the attribute. Values are what Terraform would evaluate without a plan: literals (strings, numbers,
bools, lists, maps), and `var.NAME` where the file declares that variable with a default. Anything else
(`module.x.y`, `local.z`, a function call) is refused, naming the attribute, except `cluster_id`, which only
says which backend to import into (the `--backend` option may say it instead).

What the module does by itself is applied and said (`ImportedPool.notes`): the defaults of the variables a
call leaves out, and the GPU spot pool's own taints and `node-type=gpu` label. A taint may name its effect
`schedule_type` (the ROSA Terraform provider's word, which the seed also writes) as well as `effect`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from decimal import Decimal

from clusters.machinepools import rosa_module as module
from configs.errors import ConfigError

VARIABLE_RE = re.compile(r"var\.([A-Za-z_][A-Za-z0-9_-]*)")
ESCAPES = {"$${": "${", "%%{": "%{"}


class TerraformError(ConfigError):
    """A refusal about the Terraform file: `field` is `FILE:LINE attribute path`."""


@dataclass(frozen=True)
class ClusterRef:
    """A call's `cluster_id`: the OCM cluster id when it is a literal, else the expression as written."""

    literal: str | None
    expression: str
    line: int


@dataclass
class ImportedPool:
    """One machine pool a module call makes: its MACHINE_POOL document (without a backend) and where each
    of its fields came from, so a refusal of the document can name the Terraform attribute and line."""

    name: str
    document: dict
    module: str  # the call's label: module "machine_pools"
    line: int  # the call's line
    cluster: ClusterRef
    variables: dict[str, str]  # a document field → the module variable it comes from
    lines: dict[str, int]  # an attribute path as read (`additional_pool_taints[0].effect`) → its line
    written: dict[str, str] = field(default_factory=dict)  # a path read under another name: `….schedule_type`
    notes: list[str] = field(default_factory=list)

    def source_of(self, document_field: str) -> tuple[str, int]:
        """The Terraform attribute path and line a document field (`taints[0].effect`, `labels.team`) came from,
        else the module call and its line."""
        prefix = _longest_prefix(document_field, self.variables)
        if prefix is None:
            return f'module "{self.module}"', self.line
        path = self.variables[prefix] + document_field[len(prefix) :]
        line = self.lines.get(_longest_prefix(path, self.lines) or "", self.line)
        return self.written.get(path, path), line


def _longest_prefix(path: str, known: dict) -> str | None:
    """The longest of `path`, its parents (`a.b[0].c` → `a.b[0]` → `a.b` → `a`) found in `known`."""
    while path:
        if path in known:
            return path
        parent = re.sub(r"(\.[^.\[]*|\[\d+\])$", "", path)
        path = "" if parent == path else parent
    return None


@dataclass
class Reading:
    pools: list[ImportedPool]
    notes: list[str]  # about the file, not one pool: other modules skipped, calls that make no pool


def read(text: str, filename: str = "main.tf") -> Reading:
    """The machine pools the file's calls of the machine-pools module make. Raises TerraformError."""
    start = _parse(text, filename)
    blocks = [child for child in start.body.children if _kind(child) == "block"]
    variables = {}
    for block in blocks:
        labels = _labels(block)
        if labels[0] == "variable" and len(labels) == 2:
            variables[labels[1]] = (block, _attributes(block, filename, f'variable "{labels[1]}"'))
    reading = Reading([], [])
    for block in blocks:
        labels = _labels(block)
        if labels[0] != "module" or len(labels) != 2:
            continue
        evaluator = _Evaluator(filename, f"module.{labels[1]}", variables)
        call = _Call(labels[1], _line(block), _attributes(block, filename, f"module.{labels[1]}"), evaluator)
        source = call.string("source", required=True)
        if not _is_machine_pools(source):
            reading.notes.append(
                f'module "{labels[1]}" (line {call.line}): source {source} is not the machine-pools module; skipped'
            )
            continue
        call.check_attributes()
        pools = call.pools()
        if not pools:
            flags = " or ".join(f"{half.create} = true" for half in module.HALVES)
            reading.notes.append(f'module "{labels[1]}" (line {call.line}) makes no machine pool (no {flags})')
        reading.pools += pools
    _refuse_duplicates(reading.pools, filename)
    return reading


def _is_machine_pools(source: str) -> bool:
    """`./modules/machine-pools`, or the same module from a registry or git (`…//modules/machine-pools?ref=v1`)."""
    path = source.split("?", 1)[0].rstrip("/")
    return path.rsplit("/", 1)[-1] == "machine-pools"


def _refuse_duplicates(pools: list[ImportedPool], filename: str) -> None:
    first: dict[str, ImportedPool] = {}
    for pool in pools:
        if pool.name in first:
            attribute, line = pool.source_of("name")
            earlier = first[pool.name]
            raise TerraformError(
                f'names a machine pool that module "{earlier.module}" (line {earlier.line}) already makes; '
                "give each pool its own name",
                field=f"{filename}:{line} module.{pool.module}.{attribute}",
                value=pool.name,
            )
        first[pool.name] = pool


class _Call:
    """One module block: its attributes evaluated on demand, mapped onto the module's two pools."""

    def __init__(self, label: str, line: int, attributes: dict, evaluator: _Evaluator) -> None:
        self.label, self.line, self.attributes, self.evaluator = label, line, attributes, evaluator

    def check_attributes(self) -> None:
        """Only the module's variables and Terraform's own arguments of a module block (not count, for_each)."""
        attributes = self.attributes
        for repeat in ("count", "for_each"):
            if repeat in attributes:
                reason = "is not read: the importer makes the pools of one call of the module"
                raise self.error(repeat, reason, _source(attributes[repeat].expression))
        unknown = sorted(set(attributes) - module.VARIABLES - module.META_ARGUMENTS)
        if unknown:
            name = unknown[0]
            raise self.error(
                name, f"is not a variable of the machine-pools module (it has {', '.join(sorted(module.VARIABLES))})"
            )

    def error(self, name: str, reason: str, value: object = None, line: int | None = None) -> TerraformError:
        line = line or (self.attributes[name].line if name in self.attributes else self.line)
        return TerraformError(reason, field=f"{self.evaluator.filename}:{line} module.{self.label}.{name}", value=value)

    def value(self, name: str):
        return self.evaluator.value(self.attributes[name].expression, name, self.attributes[name].line)

    def string(self, name: str, required: bool = False) -> str:
        if name not in self.attributes:
            if required:
                raise self.error(name, "is missing; the module call needs it")
            return ""
        value = self.value(name)
        if not isinstance(value, str):
            raise self.error(name, "must be a string", value)
        return value

    def pools(self) -> list[ImportedPool]:
        made = []
        for half in module.HALVES:
            if half.create not in self.attributes:
                continue
            create = self.value(half.create)
            if not isinstance(create, bool):
                raise self.error(half.create, "must be true or false", create)
            if create:
                made.append(self._pool(half))
        return made

    def _pool(self, half: module.Half) -> ImportedPool:
        given, notes = {}, []
        for suffix, default in half.defaults.items():
            variable = half.variable(suffix)
            if variable in self.attributes:
                given[suffix] = self.value(variable)
            else:
                given[suffix] = default
                if default not in ({}, []):  # "none" needs no saying
                    origin = module.DEFAULT_ORIGINS.get(variable, "the module's default")
                    notes.append(f"{variable} not given: {default} ({origin})")
        name = given["name"]
        if not isinstance(name, str):
            raise self.error(half.variable("name"), "must be a string", name)
        written: dict[str, str] = {}  # an attribute path as the document names it → as the file writes it
        origin = f'{self.evaluator.filename}, module "{self.label}" (line {self.line})'
        document = {
            "description": f"Imported from Terraform: {origin}",
            "instance_type": given["instance_type"],
            "autoscaling": {
                "min_replicas": _whole(given["min_replicas"]),
                "max_replicas": _whole(given["max_replicas"]),
            },
            "labels": given["labels"],
            "taints": [],
            "spot": half.spot,
            "max_price": None,
            "disk_size": module.ROSA_DEFAULT_DISK_GIB,
        }
        where = {  # document field → the module variable it comes from
            "name": half.variable("name"),
            "instance_type": half.variable("instance_type"),
            "autoscaling.min_replicas": half.variable("min_replicas"),
            "autoscaling.max_replicas": half.variable("max_replicas"),
            "labels": half.variable("labels"),
        }
        if half.spot:
            document["disk_size"] = _whole(given["disk_size"])
            where["disk_size"] = half.variable("disk_size")
            document["max_price"] = self._max_price()
            where["max_price"] = module.SPOT_MAX_PRICE
            document["labels"], notes = self._gpu_labels(given["labels"], notes)
            document["taints"] = [taint.as_kubernetes() for taint in module.GPU_SPOT_TAINTS]
            implied = ", ".join(f"{t.key}={t.value}:{t.effect}" for t in module.GPU_SPOT_TAINTS)
            notes.append(f"taints {implied}: the module puts them on its GPU spot pool")
        else:
            document["taints"] = self._taints(half, given["taints"], written)
            where["taints"] = half.variable("taints")
        return ImportedPool(
            name,
            document,
            self.label,
            self.line,
            self._cluster(),
            where,
            dict(self.evaluator.lines),
            written,
            [f"{name}: {note}" for note in notes],
        )

    def _max_price(self):
        if module.SPOT_MAX_PRICE not in self.attributes:
            return None
        price = self.value(module.SPOT_MAX_PRICE)
        return None if price == "" else price

    def _gpu_labels(self, labels, notes: list[str]) -> tuple[object, list[str]]:
        if not isinstance(labels, dict):
            return labels, notes  # the config store refuses it, naming the attribute
        added = {k: v for k, v in module.GPU_SPOT_LABELS.items() if k not in labels}
        if added:
            shown = ", ".join(f"{k}={v}" for k, v in added.items())
            notes = [*notes, f"label {shown}: the module puts it on its GPU spot pool (its ML-training Job selects it)"]
        return {**added, **labels}, notes

    def _taints(self, half: module.Half, taints, written: dict[str, str]):
        """The taints as MACHINE_POOL documents write them: `schedule_type` (the ROSA provider's word) read as
        `effect`; anything else is left for the config store to refuse."""
        if not isinstance(taints, list):
            return taints
        variable = half.variable("taints")
        read = []
        for index, taint in enumerate(taints):
            if isinstance(taint, dict) and "schedule_type" in taint:
                taint = dict(taint)
                effect = taint.pop("schedule_type")
                path = f"{variable}[{index}].schedule_type"
                if "effect" in taint and taint["effect"] != effect:
                    raise self.error(
                        path,
                        f"differs from effect ({taint['effect']}); schedule_type and effect name the same thing",
                        effect,
                        line=self.evaluator.lines.get(path),
                    )
                taint["effect"] = effect
                effect_path = f"{variable}[{index}].effect"
                written[effect_path] = path
                self.evaluator.lines.setdefault(effect_path, self.evaluator.lines.get(path, self.line))
            read.append(taint)
        return read

    def _cluster(self) -> ClusterRef:
        if "cluster_id" not in self.attributes:
            raise self.error("cluster_id", "is missing; the module call needs the cluster its pools join")
        attribute = self.attributes["cluster_id"]
        try:
            value = self.evaluator.value(attribute.expression, "cluster_id", attribute.line)
        except TerraformError:
            return ClusterRef(None, _source(attribute.expression), attribute.line)
        if not isinstance(value, str):
            raise self.error("cluster_id", "must be a string (the cluster's OCM id)", value)
        return ClusterRef(value, value, attribute.line)


@dataclass(frozen=True)
class _Attribute:
    expression: object
    line: int


class _Evaluator:
    """Literal values of HCL expressions, recording the line of every element it reads (`lines`: the
    attribute path, `additional_pool_taints[0].effect`, → its line)."""

    def __init__(self, filename: str, within: str, variables: dict) -> None:
        self.filename, self.within, self.variables = filename, within, variables
        self.lines: dict[str, int] = {}
        self._resolving: set[str] = set()

    def value(self, expression, path: str, line: int):
        expression = _unwrap(expression)
        if not self._resolving:  # a variable's default is shown at the line that uses it
            line = _line(expression) or line
        self.lines[path] = line
        kind = _kind(expression)
        if kind == "literal_value":
            return {"true": True, "false": False, "null": None}[str(expression.token.value)]
        if kind == "int_lit":
            return int(str(expression.token.value))
        if kind == "float_lit":
            return _number(Decimal(str(expression.token.value)))
        if kind == "unary_op" and expression.operator.strip() == "-":
            operand = self.value(expression.expr_term, path, line)
            if isinstance(operand, (int, Decimal)) and not isinstance(operand, bool):
                return -operand
        if kind == "string":
            return self._string(expression, path, line)
        if kind == "tuple":
            return [self.value(item, f"{path}[{index}]", line) for index, item in enumerate(expression.elements)]
        if kind == "object":
            return self._object(expression, path, line)
        variable = VARIABLE_RE.fullmatch(_source(expression))
        if variable:
            return self._variable(variable.group(1), path, line)
        raise self.refusal(
            path,
            line,
            "is not a literal value or a variable with a default; the importer reads no other expressions",
            _source(expression),
        )

    def refusal(self, path: str, line: int, reason: str, value: object) -> TerraformError:
        return TerraformError(reason, field=f"{self.filename}:{line} {self.within}.{path}", value=value)

    def _string(self, expression, path: str, line: int) -> str:
        parts = expression.string_parts
        text = []
        for part in parts:
            content = part.content
            kind = _kind(content)
            if kind == "interpolation":
                inner = self.value(content.expression, path, line)
                if len(parts) == 1:  # "${var.x}" is var.x itself, whatever its type
                    return inner
                if isinstance(inner, (dict, list)) or inner is None:
                    raise self.refusal(path, line, "interpolates a value that is not a string or number", inner)
                text.append(str(inner).lower() if isinstance(inner, bool) else str(inner))
            elif kind == "STRING_CHARS":
                from hcl2.utils import process_escape_sequences

                text.append(process_escape_sequences(str(content.serialize())))
            elif kind in ("ESCAPED_INTERPOLATION", "ESCAPED_DIRECTIVE"):
                raw = str(content.serialize())
                text.append(ESCAPES.get(raw[:3], raw[:2]) + raw[3:])
            else:  # a %{ if } or %{ for } directive
                reason = "is a string template; the importer reads literal strings"
                raise self.refusal(path, line, reason, _source(expression))
        return "".join(text)

    def _object(self, expression, path: str, line: int) -> dict:
        result = {}
        for element in expression.elements:
            key_rule = element.key
            if _kind(key_rule) != "object_elem_key":
                reason = "has a computed key; write keys as literals"
                raise self.refusal(path, _line(element) or line, reason, _source(key_rule))
            key_value = key_rule.value
            key_line = _line(element) or line
            if _kind(key_value) == "string":
                key = self._string(key_value, path, key_line)
            else:
                key = str(key_value.serialize())
            result[key] = self.value(element.expression, f"{path}.{key}", key_line)
        return result

    def _variable(self, name: str, path: str, line: int):
        if name not in self.variables:
            raise self.refusal(path, line, f"uses var.{name}, which this file does not declare", f"var.{name}")
        block, attributes = self.variables[name]
        if "default" not in attributes:
            raise self.refusal(
                path,
                line,
                f"uses var.{name}, whose variable block (line {_line(block)}) has no default; give it one, or "
                "write the value in the module call",
                f"var.{name}",
            )
        if name in self._resolving:
            raise self.refusal(path, line, f"var.{name} refers to itself", f"var.{name}")
        self._resolving.add(name)
        try:
            return self.value(attributes["default"].expression, path, line)
        finally:
            self._resolving.discard(name)


def _parse(text: str, filename: str):
    import hcl2  # lazy: the grammar loads only when a file is imported
    from lark.exceptions import UnexpectedInput

    try:
        return hcl2.parses(text)
    except UnexpectedInput as error:
        near = text.splitlines()[error.line - 1].strip() if 0 < error.line <= len(text.splitlines()) else ""
        raise TerraformError(
            f"is not valid HCL (column {error.column})", field=f"{filename}:{error.line}", value=near
        ) from None


def _attributes(block, filename: str, within: str) -> dict[str, _Attribute]:
    attributes: dict[str, _Attribute] = {}
    for child in block.body.children:
        if _kind(child) == "attribute":
            name = str(child.identifier.serialize())
            if name in attributes:
                raise TerraformError(
                    f"is given twice (first on line {attributes[name].line})",
                    field=f"{filename}:{_line(child)} {within}.{name}",
                    value=name,
                )
            attributes[name] = _Attribute(child.expression, _line(child))
    return attributes


def _labels(block) -> list[str]:
    """`module "machine_pools"` → ["module", "machine_pools"] (quotes taken off)."""
    return [str(label.serialize()).strip('"') for label in block.labels]


def _unwrap(expression):
    while _kind(expression) == "expr_term":
        expression = expression.expression
    return expression


def _kind(node) -> str:
    lark_name = getattr(node, "lark_name", None)
    return lark_name() if callable(lark_name) else type(node).__name__


def _line(node) -> int:
    return getattr(getattr(node, "_meta", None), "line", 0) or 0


def _source(expression) -> str:
    """The expression as written (python-hcl2 writes a non-literal as `${…}`)."""
    text = str(expression.serialize())
    return text[2:-1] if text.startswith("${") and text.endswith("}") else text


def _number(value: Decimal):
    return int(value) if value == value.to_integral_value() else value


def _whole(value):
    """Terraform's numbers are one type: 2.0 is 2. Anything else goes to the config store as it is."""
    if isinstance(value, Decimal) and value == value.to_integral_value():
        return int(value)
    return value
