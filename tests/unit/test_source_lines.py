"""Which line of a YAML or JSON text an error is about (portal.source_lines), for the code editor's markers."""

from __future__ import annotations

import pytest

from portal.errors import PortalError
from portal.safe_yaml import SafeYAMLError, load
from portal.source_lines import error_line, line_of, without_position

SPEC = """\
version: 2
workflow:
  name: train
  tasks:
  - name: main
    image: 12
    resources:
      limits: {"nvidia.com/gpu": 2}
  - name: eval
    image: x
"""


@pytest.mark.parametrize(
    ("path", "line"),
    [
        ("version", 1),
        ("workflow.name", 3),
        ("workflow.tasks", 4),
        ("workflow.tasks[0]", 5),
        ("workflow.tasks[0].image", 6),
        ("workflow.tasks[1].image", 10),
        ('workflow.tasks[0].resources.limits["nvidia.com/gpu"]', 8),
        ("workflow.tasks[1].command", 9),  # not written: its task
        ("workflow.tasks[7].image", 4),  # no such task: the list
    ],
)
def test_a_path_is_found_at_its_key_or_item_or_its_deepest_written_ancestor(path, line):
    assert line_of(SPEC, path) == line


def test_json_is_read_as_flow_yaml():
    text = '{\n  "spec": {\n    "containers": [\n      {"name": "a"},\n      {"name": "b"}\n    ]\n  }\n}'
    assert line_of(text, "spec.containers[1].name") == 5
    assert line_of(text, "[0]") is None


def test_a_path_outside_the_text_or_a_text_that_is_not_yaml_has_no_line():
    assert line_of(SPEC, "kind") is None
    assert line_of("a: [1, 2", "b") is None
    assert line_of("a: 1\nb: [\nc: 2", "a") == 1  # what was read before the break still counts


def test_a_parser_error_names_its_line_and_a_semantic_error_its_path():
    with pytest.raises(SafeYAMLError) as syntax:
        load("a: 1\nb: c: d\ne: 2\n", source="spec.yaml")
    assert error_line("anything", syntax.value) == 2  # the reason's position wins
    assert without_position(syntax.value.reason).startswith("invalid YAML:")
    semantic = PortalError("must be a string", field="tasks[0].image", value=12)
    assert error_line(SPEC, semantic, prefixes=("workflow", "")) == 6
    assert error_line(SPEC, PortalError("is required", field="version")) == 1


def test_a_form_field_name_before_the_path_is_dropped():
    rules = "- operator: XX\n  left_operand: a\n- operator: GT\n  left_operand: '{{USER_GPU}}'\n"
    error = PortalError("unknown operator", field="rules[1].operator", value="GT")
    assert error_line(rules, error, root="rules") == 3
    assert error_line(rules, PortalError("bad", field="rules"), root="rules") is None


def test_a_path_into_what_the_text_became_is_found_by_its_tail():
    template = 'metadata: {labels: {"a.b": x}}\nspec:\n  tolerations: 5\n'
    resolved = PortalError("must be a list", field="platforms.a100_platform.spec.tolerations")
    assert error_line(template, resolved) == 3
    labelled = PortalError("bad label", field='pods["x.y"].metadata.labels["a.b"]')
    assert error_line(template, labelled) == 1
    assert error_line(template, PortalError("bad", field="platforms.a100.image")) is None
