"""OSMO's templated specs (workflows.templating): what needs rendering, default-values and the set values
(cast as OSMO's `--set` casts them), OSMO's tokens left alone, and every refusal as an InvalidSpec (USAGE)."""

from __future__ import annotations

import pytest

from workflows.errors import InvalidSpec
from workflows.submit_options import with_options
from workflows.templating import is_templated, render_spec

SPEC = """workflow:
  name: {{ name }}
  tasks:
  - args: ["{{ value }}", "{{output}}", "{{ workflow_id }}", "{{input:0}}", "{{host:server}}", "{{uuid}}"]
default-values:
  name: hello
  value: x
# a comment in column 0 ends nothing
version: 2
"""


def render(text: str, sets=(), strings=(), max_chars: int = 10_000) -> str:
    return render_spec(text, list(sets), list(strings), max_chars=max_chars)


@pytest.mark.parametrize(
    ("text", "sets", "expected"),
    [
        ("a: {{output}} {{ workflow_id }} {{uuid}} {{input:1}} {{host:x}}", [], False),
        ("a: 1", [], False),
        ("a: 1", ["x=1"], True),
        ("a: {{ x }}", [], True),
        ("a: 1\ndefault-values:\n  x: 1\n", [], True),
        ("a: {% if true %}1{% endif %}", [], True),
        ("a: 1 {# note #}", [], True),
    ],
)
def test_what_needs_rendering(text, sets, expected):
    assert is_templated(text, sets) is expected


def test_default_values_are_rendered_and_the_section_dropped():
    rendered = render(SPEC)
    assert "default-values" not in rendered and "version: 2" in rendered
    assert 'args: ["x", "{{output}}", "{{ workflow_id }}", "{{input:0}}", "{{host:server}}", "{{uuid}}"]' in rendered
    assert "name: hello" in rendered


@pytest.mark.parametrize(
    ("sets", "strings", "shown"),
    [
        (["value=3"], [], '"3"'),  # int 3, printed
        (["value=0.50"], [], '"0.5"'),  # a float, as OSMO casts it
        (["value=a=b"], [], '"a=b"'),  # split at the first =
        (["value=3"], ["value=007"], '"007"'),  # --set-string wins over --set, and stays text
    ],
)
def test_set_values_override_the_defaults(sets, strings, shown):
    assert f"args: [{shown}," in render(SPEC, sets, strings)


@pytest.mark.parametrize(
    ("text", "sets", "field", "reason"),
    [
        ("a: {{ nope }}", [], "file", "undefined variable nope"),
        (SPEC, ["value"], "set_variables[0]", "incorrectly formatted"),
        (SPEC + "default-values:\n  y: 1\n", [], "default-values", "Multiple default-values"),
        ("a: 1\ndefault-values: [1, 2]\n", [], "default-values", "must be a mapping"),
        ("a: 1\ndefault-values: {x: [}\n", [], "default-values", "invalid YAML"),
        ("a: {% for i in range(2) %}{% for j in range(2) %}x{% endfor %}{% endfor %}", [], "file", "nested"),
        ("a: {% import 'x' as y %}", [], "file", "import"),
        ("a: {{ x.__class__ }}", ["x=1"], "file", "private attribute"),
        ("a: {{ 'x' * 100 }}{{ 'y' * 100 }}", [], "file", "longer than 150"),
        ("a: {{ x ", [], "file", "template error"),
    ],
)
def test_refusals_are_usage_errors(text, sets, field, reason):
    with pytest.raises(InvalidSpec) as refused:
        render(text, sets, max_chars=150)
    assert refused.value.field == field and reason in refused.value.reason, refused.value
    assert refused.value.osmo_code == "USAGE"


def test_set_env_and_labels_merge_into_every_task_over_the_spec():
    document = {
        "workflow": {
            "labels": {"team": "a"},
            "groups": [{"name": "g", "tasks": [{"name": "t", "environment": {"A": "spec", "B": "kept"}}]}],
        }
    }
    merged = with_options(document, ["A=cli", "C=x=y"], ["team=b", "stage=dev"])
    assert merged["workflow"]["groups"][0]["tasks"][0]["environment"] == {"A": "cli", "B": "kept", "C": "x=y"}
    assert merged["workflow"]["labels"] == {"team": "b", "stage": "dev"}
    assert document["workflow"]["labels"] == {"team": "a"}  # a copy
    with pytest.raises(InvalidSpec) as refused:
        with_options(document, ["NOEQUALS"], [])
    assert refused.value.field == "env_vars[0]" and refused.value.osmo_code == "USAGE"
