"""How much a template may ask of the compiler, checked on its token stream before it is parsed.

Compiling is what is expensive, not lexing: Jinja's parser, optimizer and `meta.find_undeclared_variables`
take time roughly cubic in an expression's nesting (a chain of 150 filters, `{{ z|list|list|… }}`, took
3.7 s; 199 raise Python's "too many nested parentheses"). The lexer is linear, so `check_tokens` walks its
stream once and refuses, at the first token over a bound, a template with

- a nesting deeper than MAX_DEPTH: open brackets, plus the operators (`|`, `.`, `+`, `and`, `not`, `if`, …)
  applied within one bracket's current item, plus the statement blocks (`{% if %}`, `{% for %}`) around it
  — an upper bound on the depth of the tree the parser would build;
- a chain of more than MAX_FILTER_CHAIN filters applied to one value;
- more than MAX_EXPRESSIONS tags (`{{ … }}`, `{% … %}`, `{% raw %}` blocks);
- more than MAX_TEMPLATE_WEIGHT units of size: each token inside a tag counts 1 plus its nesting depth, as
  compiling it costs more the deeper it sits;
- more than MAX_TEMPLATE_CHARS characters.

    check_tokens(environment.lex(source), len(source))   # raises TemplateTooLarge(reason, line)

Pure: no Django, no I/O. docs/limits.md lists the bounds.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = [
    "MAX_DEPTH",
    "MAX_EXPRESSIONS",
    "MAX_FILTER_CHAIN",
    "MAX_TEMPLATE_CHARS",
    "MAX_TEMPLATE_WEIGHT",
    "TemplateTooLarge",
    "check_tokens",
]

MAX_DEPTH = 16
MAX_FILTER_CHAIN = 10
MAX_EXPRESSIONS = 500
MAX_TEMPLATE_WEIGHT = 5_000
MAX_TEMPLATE_CHARS = 512 * 1024

_OPENING = {"(": ")", "[": "]", "{": "}"}
_WORD_OPERATORS = frozenset({"and", "or", "not", "in", "is", "if", "else"})
_COMPARISONS = frozenset({"==", "!=", "<", ">", "<=", ">=", "in"})  # two levels: Compare, then an Operand
_BLOCK_STATEMENTS = frozenset({"if", "for", "with", "filter", "macro", "call", "block", "autoescape"})
_TAG_BEGIN = frozenset({"variable_begin", "block_begin"})
_TAG_END = frozenset({"variable_end", "block_end"})
_SKIPPED = frozenset({"whitespace", "data", "comment_begin", "comment", "comment_end", "raw_end"})


class TemplateTooLarge(Exception):
    """A template over one of the bounds: `reason` says which and the bound, `line` where, `value` the
    count when the scan stopped (the bound + 1; the weight: at most one token's worth over)."""

    def __init__(self, reason: str, line: int, value: int) -> None:
        super().__init__(f"line {line}: {reason}")
        self.reason, self.line, self.value = reason, line, value


class _Item:
    """One bracket (or the tag itself) being read: the depth around it (`base`), and for its current item
    (commas separate items) the operator levels applied and the deepest bracket closed inside (`inner`);
    `deepest` is its own tree's depth so far, its bracket's level included."""

    __slots__ = ("base", "closer", "deepest", "filters", "inner", "operators")

    def __init__(self, closer: str, base: int) -> None:
        self.closer, self.base = closer, base
        self.operators = self.filters = self.inner = 0
        self.deepest = 1

    def depth(self) -> int:
        """The depth of the tree built so far, counted from the template's top: an operator applies to
        everything before it in the item (a brackets' content included), so levels add up."""
        return self.base + 1 + self.operators + self.inner


class _Scan:
    def __init__(self, max_depth: int) -> None:
        self.max_depth = max_depth
        self.expressions = self.weight = self.blocks = 0
        self.items: list[_Item] = []
        self.statement = ""  # the first name of the block tag being read (if, set, endfor, …)
        self.assigns = False  # whether that tag has an `=` (`{% set x = 1 %}` opens no block)

    def depth(self) -> int:
        return self.items[-1].depth() if self.items else self.blocks

    def count_expression(self, line: int) -> None:
        self.expressions += 1
        if self.expressions > MAX_EXPRESSIONS:
            raise TemplateTooLarge(f"more than {MAX_EXPRESSIONS} expressions", line, self.expressions)

    def begin_tag(self, kind: str, line: int) -> None:
        self.count_expression(line)
        self.items, self.assigns = [_Item("", self.blocks)], False
        self.statement = "" if kind == "block_begin" else "-"  # `-`: an expression tag names no statement
        if kind == "variable_begin":
            self.check_depth(line)

    def end_tag(self, kind: str, line: int) -> None:
        self.items = []
        if kind == "block_end":
            if self.statement.startswith("end"):
                self.blocks = max(self.blocks - 1, 0)
            elif self.statement in _BLOCK_STATEMENTS or (self.statement == "set" and not self.assigns):
                self.blocks += 1
                self.check_depth(line)

    def token(self, kind: str, value: str, line: int) -> None:
        if kind == "operator":
            self.operator(value, line)
        elif kind == "name" and not self.statement:
            self.statement = value
            if not value.startswith("end"):  # `{% endif %}` closes a level, it is not inside it
                self.check_depth(line)
        elif kind == "name" and value in _WORD_OPERATORS:
            self.add_operator(line, 2 if value in _COMPARISONS else 1)
        self.weight += 1 + self.depth()
        if self.weight > MAX_TEMPLATE_WEIGHT:
            raise TemplateTooLarge(
                f"the expressions are too large: more than {MAX_TEMPLATE_WEIGHT} units "
                "(a token counts 1 plus how deeply it is nested)",
                line,
                self.weight,
            )

    def operator(self, value: str, line: int) -> None:
        item = self.items[-1]
        if value in _OPENING:
            self.items.append(_Item(_OPENING[value], item.depth()))
            self.check_depth(line)
        elif len(self.items) > 1 and value == item.closer:
            self.items.pop()
            self.items[-1].inner = max(self.items[-1].inner, item.deepest)
            self.check_depth(line)
        elif value == ",":
            item.operators = item.filters = item.inner = 0
        elif value == "|":
            item.filters += 1
            if item.filters > MAX_FILTER_CHAIN:
                raise TemplateTooLarge(f"a chain of more than {MAX_FILTER_CHAIN} filters", line, item.filters)
            self.add_operator(line)
        elif value == "=" and len(self.items) == 1:  # `{% set x = … %}`; a keyword argument nests
            self.assigns = True
        elif value != ";":
            self.add_operator(line, 2 if value in _COMPARISONS else 1)

    def add_operator(self, line: int, levels: int = 1) -> None:
        self.items[-1].operators += levels
        self.check_depth(line)

    def check_depth(self, line: int) -> None:
        if self.items:
            item = self.items[-1]
            item.deepest = max(item.deepest, 1 + item.operators + item.inner)
        if self.depth() > self.max_depth:
            raise TemplateTooLarge(f"nested more than {self.max_depth} levels deep", line, self.depth())


def check_tokens(tokens: Iterable[tuple[int, str, str]], chars: int, *, max_depth: int = MAX_DEPTH) -> None:
    """Walk Jinja's raw token stream `(line, kind, value)` of a template of `chars` characters; raise
    TemplateTooLarge at the first bound exceeded (the rest of the stream is never read)."""
    if chars > MAX_TEMPLATE_CHARS:
        raise TemplateTooLarge(f"more than {MAX_TEMPLATE_CHARS} characters", 1, chars)
    scan = _Scan(max_depth)
    for line, kind, value in tokens:
        if kind in _SKIPPED:
            continue
        if kind in _TAG_BEGIN:
            scan.begin_tag(kind, line)
        elif kind == "raw_begin":  # `{% raw %}…{% endraw %}`: one more piece of output to compile
            scan.count_expression(line)
        elif kind in _TAG_END:
            scan.end_tag(kind, line)
        elif scan.items:
            scan.token(kind, value, line)
