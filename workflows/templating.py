"""OSMO's templated specs: `{{ name }}` Jinja variables with a `default-values:` section, overridden by the
CLI's `--set NAME=VALUE` (cast to int, then float, else text) and `--set-string NAME=VALUE` (always text).

    if is_templated(text, set_variables):
        text = render_spec(text, set_variables, set_string_variables, max_chars=...)   # InvalidSpec on error

The rendered text is the spec without its `default-values:` section. OSMO's own tokens (`{{workflow_id}}`,
`{{uuid}}`, `{{output}}`, `{{input:…}}`, `{{host:…}}`) are not variables: they stay in the text as written, for
the submission to replace (`workflows.spec.substitute_tokens`). Rendering runs in the engine's bounded
sandbox (`pools.engine.sandbox`: no nested loops, no imports or macros, bounded work and output).
Pure Python: no Django, no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from pools.engine.sandbox import SandboxError, compile_template, render_context, render_string
from portal.safe_yaml import Limits, SafeYAMLError, load
from workflows.errors import InvalidSpec

__all__ = ["is_templated", "render_spec"]

# OSMO's tokens, which a template leaves alone (OSMO: src/utils/job/workflow.py TemplateSpec).
_TOKEN = re.compile(r"\{\{\s*(?:uuid|workflow_id|output|input:[^}]+|host:[^}]+)\s*\}\}")
_EXPRESSION = re.compile(r"\{\{.*?\}\}", re.DOTALL)
# A top-level key starts in column 0 (not a comment); `default-values:` runs until the next one.
_TOP_LEVEL = re.compile(r"^(?![#\s])\S", re.MULTILINE)
_DEFAULTS = re.compile(r"^default-values\s*:", re.MULTILINE)


def is_templated(text: str, set_variables: list[str] = (), set_string_variables: list[str] = ()) -> bool:
    """Whether the text needs rendering: a `default-values:` section, values set for it, Jinja statements or
    comments, or a `{{ … }}` that is not one of OSMO's tokens."""
    # the substring first: the MULTILINE search alone takes ~28 ms on a 2.4 MB spec
    if set_variables or set_string_variables or ("default-values" in text and _DEFAULTS.search(text)):
        return True
    if "{%" in text or "{#" in text:
        return True
    return any(not _TOKEN.fullmatch(found) for found in _EXPRESSION.findall(text))


def render_spec(
    text: str,
    set_variables: list[str] = (),
    set_string_variables: list[str] = (),
    *,
    max_chars: int,
    limits: Limits | None = None,
) -> str:
    """The spec rendered with its default values and the set ones. Raises InvalidSpec (OSMO: USAGE)."""
    body, defaults_text = _split_defaults(text)
    values = _defaults(defaults_text, limits)
    values.update(_assignments(set_variables, "set_variables", cast=True))
    values.update(_assignments(set_string_variables, "set_string_variables", cast=False))
    protected = _TOKEN.sub(lambda m: "{% raw %}" + m.group(0) + "{% endraw %}", body)
    try:
        return render_string(compile_template(protected), render_context(values), max_chars=max_chars)
    except SandboxError as error:
        raise InvalidSpec(f"the spec's template: {error.reason}", field="file", value=_shown(error.value)) from None


def _split_defaults(text: str) -> tuple[str, str | None]:
    """(the text with its `default-values:` section blanked, that section) — at most one section. The
    section's lines stay as empty lines, so a line a template or YAML error names is the line as written."""
    found = list(_DEFAULTS.finditer(text))
    if len(found) > 1:
        raise InvalidSpec("Multiple default-values sections found in the workflow spec", field="default-values")
    if not found:
        return text, None
    start = found[0].start()
    following = _TOP_LEVEL.search(text, found[0].end())
    end = following.start() if following else len(text)
    section = text[start:end]
    return text[:start] + "\n" * section.count("\n") + text[end:], section


def _defaults(section: str | None, limits: Limits | None) -> dict:
    if section is None:
        return {}
    try:
        document = load(section, limits or Limits(what="default-values"), "default-values")
    except SafeYAMLError as error:
        raise InvalidSpec(error.reason, field=error.field or "default-values", value=error.value) from None
    values = document.get("default-values") if isinstance(document, Mapping) else None
    if values is None:
        return {}
    if not isinstance(values, Mapping):
        raise InvalidSpec(
            "must be a mapping of variable names to values", field="default-values", value=type(values).__name__
        )
    return {str(name): value for name, value in values.items()}


def _assignments(pairs: list[str], field: str, *, cast: bool) -> dict:
    values = {}
    for index, pair in enumerate(pairs):
        name, equals, value = str(pair).partition("=")
        if not equals or not name.strip():
            raise InvalidSpec(f"Data {pair} is incorrectly formatted: expected NAME=VALUE", field=f"{field}[{index}]")
        values[name.strip()] = _number(value) if cast else value
    return values


def _number(text: str) -> int | float | str:
    """OSMO's `--set` cast: an int if it reads as one, else a float, else the text."""
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            continue
    return text


def _shown(value: object) -> object:
    """A template error's value: the failing expression, not the whole spec."""
    return value if not isinstance(value, str) or len(value) <= 200 else None
