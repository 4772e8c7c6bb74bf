"""The one Jinja2 sandbox used for template strings and rule operands: compiled once, bounded, no internals.

OSMO renders in worker subprocesses with a timeout and an rlimit; we render in-process, so the bounds are
structural instead:
- `ImmutableSandboxedEnvironment` with `StrictUndefined`: no `__class__`-style attributes, no mutation of
  lists/dicts, undefined names are errors;
- the template language is trimmed: no macros, call blocks, imports/includes/extends, no nested `for`
  loops, no `_private` attribute or item access (rejected when the string is compiled, with a clear error);
- a curated filter set (no `random`, `format`, `center`, `indent`, `wordwrap`, `batch`, ...), `str` methods
  that pad or multiply text are unsafe, `"%"` string formatting and `str.format` are refused;
- `*`, `**` and `+` on text/lists are checked before they run; `range()` hands out at most MAX_RANGE_ITEMS
  items per rendered string; a rendered string longer than MAX_OUTPUT_CHARS is an error;
- compiling is bounded before it starts (`template_bounds`, on Jinja's linear token stream): nesting,
  filter chains, expressions and size, since the parser and optimizer take time cubic in the nesting; any
  failure of compiling (Python's "too many nested parentheses", RecursionError) is a SandboxError;
- the work is bounded, not only the output (`sandbox_budget`): operators, calls, filters, tests,
  comparisons, `~` and every printed value pay the weight of their operands from a per-string budget
  before they run, so `{{ [[[1]*1000]*1000]*30 }}` is refused before it prints 30 million items.
Rendered text is returned as data: it is never parsed or rendered again.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass

from jinja2 import StrictUndefined, TemplateSyntaxError, meta, nodes
from jinja2 import filters as jinja_filters
from jinja2.compiler import CodeGenerator, operators, optimizeconst
from jinja2.environment import Template
from jinja2.exceptions import SecurityError, UndefinedError
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.utils import _PassArg, pass_eval_context

from pools.engine.errors import EngineError
from pools.engine.sandbox_budget import BudgetExceeded, WorkBudget, repeat_weight
from pools.engine.template_bounds import TemplateTooLarge, check_tokens

__all__ = [
    "MAX_OUTPUT_CHARS",
    "MAX_RANGE_ITEMS",
    "CompiledString",
    "SandboxError",
    "UndefinedVariableError",
    "check_bounds",
    "compile_string",
    "compile_template",
    "has_template_syntax",
    "render_string",
    "render_context",
]

MAX_OUTPUT_CHARS = 64 * 1024
MAX_RANGE_ITEMS = 10_000
_MAX_POWER_BITS = 1 << 16
_AMPLIFYING_STR_METHODS = frozenset(
    {"center", "ljust", "rjust", "zfill", "expandtabs", "replace", "join", "format", "format_map"}
)
_SAFE_FILTERS = (
    "abs",
    "attr",
    "capitalize",
    "count",
    "d",
    "default",
    "dictsort",
    "first",
    "float",
    "groupby",
    "int",
    "items",
    "last",
    "length",
    "list",
    "lower",
    "map",
    "max",
    "min",
    "reject",
    "rejectattr",
    "reverse",
    "round",
    "select",
    "selectattr",
    "sort",
    "string",
    "sum",
    "title",
    "tojson",
    "trim",
    "truncate",
    "unique",
    "upper",
    "wordcount",
)
_FORBIDDEN_NODES = {
    nodes.Macro: "macro",
    nodes.CallBlock: "call",
    nodes.Import: "import",
    nodes.FromImport: "from ... import",
    nodes.Include: "include",
    nodes.Extends: "extends",
    nodes.Block: "block",
}
_BARE = re.compile(r"\{\{-?\s*([A-Za-z_][A-Za-z0-9_]*)\s*-?\}\}")
_CONSTANT_NAMES = frozenset({"true", "false", "none", "True", "False", "None"})


class _RenderBudget(WorkBudget):
    """One template string's allowance: units of work, and the items range() may still hand out."""

    __slots__ = ("range_left",)

    def __init__(self) -> None:
        super().__init__()
        self.range_left = MAX_RANGE_ITEMS


_work: ContextVar[_RenderBudget | None] = ContextVar("work_budget", default=None)


def _budget() -> _RenderBudget:
    """This render's budget; a fresh one when Jinja folds constants while compiling."""
    return _work.get() or _RenderBudget()


class SandboxError(EngineError):
    """A template string that is not allowed, does not parse, or fails while rendering."""


class UndefinedVariableError(SandboxError):
    """A template string uses a variable that no layer defines."""


def _refuse(message: str) -> SecurityError:
    return SecurityError(message)


def _check_sequence_size(size: int) -> None:
    if size > MAX_OUTPUT_CHARS:
        raise _refuse(f"result would be {size} items long; the limit is {MAX_OUTPUT_CHARS}")


def _bounded_range(*args: int) -> range:
    items = range(*args)
    budget = _budget()
    if budget.range_left < len(items):
        raise _refuse(f"range() may produce at most {MAX_RANGE_ITEMS} items per template string")
    budget.range_left -= len(items)
    return items


@pass_eval_context
def _bounded_join(eval_ctx, value, d="", attribute=None):
    items = list(value)
    _check_sequence_size(len(str(d)) * max(len(items) - 1, 0))
    return jinja_filters.do_join(eval_ctx, items, d, attribute)


@pass_eval_context
def _bounded_replace(eval_ctx, s, old, new, count=None):
    text, old, new = str(s), str(old), str(new)
    hits = len(text) + 1 if not old else text.count(old)
    _check_sequence_size(len(text) + hits * len(new))
    return jinja_filters.do_replace(eval_ctx, text, old, new, count)


class _BudgetCodeGenerator(CodeGenerator):
    """Jinja's code generator, with the operands of `~` and of comparisons (`==`, `in`, ...) weighed first:
    both walk their operands, outside the sandbox's operator hooks."""

    @optimizeconst
    def visit_Concat(self, node: nodes.Concat, frame) -> None:
        self.write("str_join((")
        for arg in node.nodes:
            self.write("environment.weighed(")
            self.visit(arg, frame)
            self.write("), ")
        self.write("))")

    @optimizeconst
    def visit_Compare(self, node: nodes.Compare, frame) -> None:
        self.write("(environment.weighed(")
        self.visit(node.expr, frame)
        self.write(")")
        for operand in node.ops:
            self.write(f" {operators[operand.op]} environment.weighed(")
            self.visit(operand.expr, frame)
            self.write(")")
        self.write(")")


class _Sandbox(ImmutableSandboxedEnvironment):
    intercepted_binops = frozenset({"*", "**", "%", "+"})
    code_generator_class = _BudgetCodeGenerator

    @staticmethod
    def weighed(value):
        _budget().charge_values("this value", value)
        return value

    def call(__self, __context, __obj, *args, **kwargs):  # noqa: N805 - Jinja's signature
        owner = getattr(__obj, "__self__", None)
        what = f"calling {getattr(__obj, '__name__', 'a function')}"
        _budget().charge_values(what, *args, *kwargs.values(), *(() if owner is None else (owner,)))
        return super().call(__context, __obj, *args, **kwargs)

    def is_safe_attribute(self, obj, attr, value) -> bool:
        if isinstance(obj, str) and attr in _AMPLIFYING_STR_METHODS:
            return False
        return super().is_safe_attribute(obj, attr, value)

    def wrap_str_format(self, value):
        if (
            callable(value)
            and getattr(value, "__name__", "") in ("format", "format_map")
            and isinstance(getattr(value, "__self__", None), str)
        ):
            raise _refuse("str.format is not allowed in templates; join text with ~")
        return None

    def call_binop(self, context, operator, left, right):
        _charge_binop(operator, left, right)
        if operator == "*":
            _check_repeat(left, right)
        elif operator == "**":
            _check_power(left, right)
        elif operator == "%" and isinstance(left, str):
            raise _refuse("%-formatting of strings is not allowed in templates; join text with ~")
        elif operator == "+" and isinstance(left, (str, list, tuple)) and isinstance(right, (str, list, tuple)):
            _check_sequence_size(len(left) + len(right))
        return super().call_binop(context, operator, left, right)


def _repeated(left: object, right: object) -> tuple[object, int] | None:
    """(sequence, times) when `left * right` repeats a text or list."""
    for sequence, times in ((left, right), (right, left)):
        if isinstance(sequence, (str, list, tuple)) and isinstance(times, int):
            return sequence, times
    return None


def _charge_binop(operator: str, left: object, right: object) -> None:
    budget = _budget()
    repeat = _repeated(left, right) if operator == "*" else None
    if repeat is not None:
        budget.charge(repeat_weight(*repeat, budget.left + 1), f"{operator!r} on a sequence")
    else:
        budget.charge_values(f"{operator!r}", left, right)


def _weighing(function):
    """`function` (a filter or test) charging the weight of the value it is applied to first."""
    skip = 0 if _PassArg.from_obj(function) is None else 1  # context/eval_ctx come before the value

    @functools.wraps(function)
    def weighed(*args, **kwargs):
        if len(args) > skip:
            _budget().charge_values(f"the filter or test {function.__name__}", args[skip])
        return function(*args, **kwargs)

    return weighed


def _charge_output(value):
    """Every printed value pays its weight before it becomes text."""
    _budget().charge_values("printing this value", value)
    return value


def _check_repeat(left: object, right: object) -> None:
    repeat = _repeated(left, right)
    if repeat is not None:
        sequence, times = repeat
        _check_sequence_size(len(sequence) * max(times, 0))


def _check_power(base: object, exponent: object) -> None:
    too_big = (
        isinstance(base, int)
        and isinstance(exponent, int)
        and exponent > 0
        and max(base.bit_length(), 1) * exponent > _MAX_POWER_BITS
    )
    if too_big:
        raise _refuse("number too large")


def _make_environment() -> _Sandbox:
    env = _Sandbox(
        undefined=StrictUndefined, autoescape=False, keep_trailing_newline=True, cache_size=0, finalize=_charge_output
    )
    env.globals.clear()
    env.globals.update({"range": _bounded_range, "dict": dict})
    safe = {name: env.filters[name] for name in _SAFE_FILTERS}
    env.filters.clear()
    env.filters.update(
        {name: _weighing(f) for name, f in {**safe, "join": _bounded_join, "replace": _bounded_replace}.items()}
    )
    env.tests.update({name: _weighing(test) for name, test in env.tests.items()})
    return env


_ENV = _make_environment()
_GLOBALS = dict(_ENV.globals)


@dataclass(frozen=True)
class CompiledString:
    """One template string compiled once. `bare` is the variable name when the string is exactly `{{ NAME }}`."""

    source: str
    refs: frozenset[str]
    bare: str | None = None
    template: Template | None = None

    @property
    def is_literal(self) -> bool:
        return self.bare is None and self.template is None


def has_template_syntax(text: str) -> bool:
    return "{{" in text or "{%" in text or "{#" in text


@functools.lru_cache(maxsize=8192)
def compile_string(source: str) -> CompiledString:
    """Compile (and cache by content) one template string. Raises SandboxError without a field."""
    return compile_template(source)


def compile_template(source: str) -> CompiledString:
    """`compile_string` without the cache: for large one-off texts (a whole workflow spec)."""
    if not has_template_syntax(source):
        return CompiledString(source, frozenset())
    bare = _BARE.fullmatch(source)
    if bare and bare.group(1) not in _CONSTANT_NAMES and bare.group(1) not in _GLOBALS:
        return CompiledString(source, frozenset({bare.group(1)}), bare=bare.group(1))
    check_bounds(source)
    try:
        tree = _ENV.parse(source)
        _check_tree(tree, source)
        template = _ENV.from_string(tree)
        refs = frozenset(meta.find_undeclared_variables(tree) - _GLOBALS.keys())
    except SandboxError:
        raise
    except TemplateSyntaxError as error:  # also unknown filters/tests, found when compiling
        raise SandboxError(f"template error: {error.message} (line {error.lineno})", value=source) from None
    except RecursionError:
        raise SandboxError("template nested too deeply to compile", value=source) from None
    except Exception as error:  # noqa: BLE001 - also SyntaxError "too many nested parentheses", MemoryError
        raise SandboxError(f"template does not compile: {type(error).__name__}: {error}", value=source) from None
    return CompiledString(source, refs, template=template)


def check_bounds(source: str) -> None:
    """Refuse a template over the compile bounds (pools.engine.template_bounds) on its tokens: linear, before
    the parser and optimizer, whose time grows with the cube of the nesting. Raises SandboxError."""
    try:
        check_tokens(_ENV.lex(source), len(source))
    except TemplateTooLarge as error:
        raise SandboxError(f"template too large to compile: {error}", value=error.value) from None
    except TemplateSyntaxError as error:  # the lexer's own (an unclosed bracket or string)
        raise SandboxError(f"template error: {error.message} (line {error.lineno})", value=source) from None


def _check_tree(tree: nodes.Template, source: str) -> None:
    for kind, word in _FORBIDDEN_NODES.items():
        if next(tree.find_all(kind), None) is not None:
            raise SandboxError(f"{{% {word} %}} is not allowed in templates", value=source)
    for loop in tree.find_all(nodes.For):
        if next(loop.find_all(nodes.For), None) is not None:
            raise SandboxError("nested {% for %} loops are not allowed in templates", value=source)
    for node in tree.find_all(nodes.Getattr):
        if node.attr.startswith("_"):
            raise SandboxError(f"access to private attribute {node.attr!r} is not allowed", value=source)
    for node in tree.find_all(nodes.Getitem):
        if isinstance(node.arg, nodes.Const) and str(node.arg.value).startswith("_"):
            raise SandboxError(f"access to private item {node.arg.value!r} is not allowed", value=source)


def render_context(values: Mapping[str, object]) -> dict:
    """The dict every string of one render shares: the sandbox globals, then the variables."""
    return {**_GLOBALS, **values}


def render_string(compiled: CompiledString, context: Mapping[str, object], max_chars: int = MAX_OUTPUT_CHARS) -> str:
    """Render to text (a bare `{{ NAME }}` gives str(value), like Jinja), at most `max_chars` long.
    Raises SandboxError without a field."""
    if compiled.template is None:
        if compiled.bare is None:
            return compiled.source
        return str(_lookup(compiled, context))
    work = _work.set(_RenderBudget())
    try:
        return _stream(compiled, context, max_chars)
    except EngineError:
        raise
    except BudgetExceeded as error:
        raise SandboxError(f"unsafe template: {error}", value=compiled.source) from None
    except UndefinedError as error:
        raise _undefined(compiled, context, str(error)) from None
    except SecurityError as error:
        raise SandboxError(f"unsafe template: {error}", value=compiled.source) from None
    except RecursionError:
        raise SandboxError("template recursion too deep", value=compiled.source) from None
    except Exception as error:  # noqa: BLE001 - any failure inside a template is the template's error
        raise SandboxError(f"template failed: {type(error).__name__}: {error}", value=compiled.source) from None
    finally:
        _work.reset(work)


def _stream(compiled: CompiledString, context: Mapping[str, object], max_chars: int) -> str:
    ctx = compiled.template.new_context(context if isinstance(context, dict) else dict(context), shared=True)
    parts, size = [], 0
    for chunk in compiled.template.root_render_func(ctx):
        size += len(chunk)
        if size > max_chars:
            raise SandboxError(f"rendered text longer than {max_chars} characters", value=compiled.source)
        parts.append(chunk)
    return "".join(parts)


def _lookup(compiled: CompiledString, context: Mapping[str, object]) -> object:
    try:
        return context[compiled.bare]
    except KeyError:
        raise _undefined(compiled, context, "") from None


def _undefined(compiled: CompiledString, context: Mapping[str, object], detail: str) -> UndefinedVariableError:
    missing = sorted(compiled.refs - context.keys())
    if missing:
        names = ", ".join(missing)
        return UndefinedVariableError(f"undefined variable {names}", value=missing[0] if len(missing) == 1 else names)
    return UndefinedVariableError(f"undefined value: {detail}", value=compiled.source)
