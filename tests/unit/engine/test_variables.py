"""Variables: OSMO names and precedence, effective-value unit variants, typed substitution, sandbox, data-as-data."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pools.engine.errors import EngineError
from pools.engine.sandbox import MAX_OUTPUT_CHARS, SandboxError, UndefinedVariableError, compile_string
from pools.engine.variables import (
    CompiledTemplate,
    VariableError,
    build_variables,
    check_variable_names,
    k8s_name,
    referenced_variables,
    variable_values,
)


def values(**kwargs):
    return variable_values(build_variables(**kwargs))


def layers(**kwargs):
    return {name: variable.layer for name, variable in build_variables(**kwargs).items()}


# --------------------------------------------------------------------------- precedence


def test_osmo_precedence_example():  # test_task.py:test_default_variables
    result = values(
        pool_variables={"USER_CPU": 2, "USER_MEMORY": "20Gi", "USER_STORAGE": "20Gi", "USER_GPU": 1},
        resources={"cpu": 1, "memory": "10Gi"},
    )
    assert (result["USER_CPU"], result["USER_MEMORY"], result["USER_STORAGE"], result["USER_GPU"]) == (
        1,
        "10Gi",
        "20Gi",
        1,
    )


def test_layers_pool_then_platform_then_task_then_system():
    kwargs = dict(
        pool_variables={"A": 1, "B": 1, "C": 1, "USER_CPU": 4},
        platform_variables={"B": 2, "C": 2},
        task_variables={"C": 3},
        resources={"cpu": "500m"},
        system={"WF_ID": "wf-1"},
    )
    result, layer = values(**kwargs), layers(**kwargs)
    assert [result[n] for n in "ABC"] == [1, 2, 3]
    assert [layer[n] for n in ("A", "B", "C", "USER_CPU", "WF_ID")] == ["pool", "platform", "task", "task", "system"]


@pytest.mark.parametrize(
    ("resources", "name", "expected"),
    [
        ({"gpu": 0}, "USER_GPU", 0),  # zero is a value, not "unset" (OSMO quirk not copied)
        ({"cpu": 0}, "USER_CPU", 0),
        ({"cpu": 0.5}, "USER_CPU", 0.5),
        ({"cpu": "500m"}, "USER_CPU", 0.5),
        ({"cpu": "1500m"}, "USER_CPU", 1.5),
        ({"cpu": "2"}, "USER_CPU", 2),
        ({"cpu": " 3 "}, "USER_CPU", 3),
        ({"gpu": "8"}, "USER_GPU", 8),
        ({"memory": 1073741824}, "USER_MEMORY", "1073741824"),
        ({"memory": " 2Gi "}, "USER_MEMORY", "2Gi"),
        ({"storage": "1G"}, "USER_STORAGE", "1G"),
        ({"cpu": None}, "USER_CPU", 4),  # null means "not given": the default stays
    ],
)
def test_task_resources_override_when_given(resources, name, expected):
    result = values(pool_variables={"USER_CPU": 4, "USER_GPU": 1}, resources=resources)
    assert result[name] == expected
    assert type(result[name]) is type(expected)


@pytest.mark.parametrize(
    ("resources", "field"),
    [
        ({"cpu": "abc"}, "resources.cpu"),
        ({"cpu": -1}, "resources.cpu"),
        ({"cpu": True}, "resources.cpu"),
        ({"gpu": 1.5}, "resources.gpu"),
        ({"gpu": "500m"}, "resources.gpu"),
        ({"memory": "10A"}, "resources.memory"),
        ({"memory": "Gi"}, "resources.memory"),
        ({"storage": "-1Gi"}, "resources.storage"),
        ({"nodesExcluded": "node-1"}, "resources.nodesExcluded"),
        ({"nodesExcluded": [1, 2]}, "resources.nodesExcluded"),
        ({"disk": "1Gi"}, "resources.disk"),
    ],
)
def test_bad_task_resources_name_the_field(resources, field):
    with pytest.raises(VariableError) as caught:
        build_variables(resources=resources)
    assert caught.value.field == field


def test_osmo_only_resource_keys_are_ignored():
    assert "platform" not in values(resources={"platform": "a100", "topology": [], "cpu": 1})


def test_bad_default_values_name_the_admin_field():
    with pytest.raises(VariableError) as caught:
        build_variables(platform_variables={"USER_MEMORY": "lots"})
    assert caught.value.field == "default_variables.USER_MEMORY"


# --------------------------------------------------------------------------- unit variants


def test_unit_variants_of_10gi():  # test_substitute_tokens_different_units
    result = values(resources={"memory": "10Gi"})
    assert {k: result[f"USER_MEMORY_{k}"] for k in ("VAL", "UNIT", "B", "Ki", "Mi", "Gi", "Ti")} == {
        "VAL": 10,
        "UNIT": "Gi",
        "B": 10 * 2**30,
        "Ki": 10 * 2**20,
        "Mi": 10240,
        "Gi": 10,
        "Ti": 10 / 1024,
    }


def test_unit_variants_of_a_fractional_value():
    result = values(resources={"storage": "10.5Mi"})
    assert (result["USER_STORAGE_VAL"], result["USER_STORAGE_UNIT"]) == (10.5, "Mi")
    assert result["USER_STORAGE_Ki"] == 10752
    assert result["USER_STORAGE_B"] == 11010048


@pytest.mark.parametrize(
    ("memory", "val", "unit", "b"),
    [
        ("1G", 1, "G", 10**9),  # Kubernetes semantics: G is 10^9 (OSMO reads it as 2^30)
        ("1e3", 1000, "", 1000),
        ("512", 512, "", 512),
    ],
)
def test_unit_variants_follow_kubernetes_semantics(memory, val, unit, b):
    result = values(resources={"memory": memory})
    assert (result["USER_MEMORY_VAL"], result["USER_MEMORY_UNIT"], result["USER_MEMORY_B"]) == (val, unit, b)


def test_unit_variants_come_from_the_effective_value_with_its_layer():
    kwargs = dict(pool_variables={"USER_STORAGE": "20Gi"}, platform_variables={"USER_MEMORY": "8Gi"})
    result, layer = values(**kwargs), layers(**kwargs)
    assert (result["USER_STORAGE_Gi"], layer["USER_STORAGE_Gi"]) == (20, "pool")  # OSMO: None without a task value
    assert (result["USER_MEMORY_Mi"], layer["USER_MEMORY_Mi"]) == (8192, "platform")


def test_no_memory_anywhere_means_no_memory_variables():
    assert not any(name.startswith("USER_MEMORY") for name in values())


# --------------------------------------------------------------------------- excluded nodes, names


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        (["n1", "n2"], ["n1", "n2"]),
        ("ARRAY:[n1, n2]", ["n1", "n2"]),
        ("ARRAY:[]", []),
        ([], []),
    ],
)
def test_excluded_nodes_become_a_list(given, expected):
    assert values(resources={"nodesExcluded": given})["USER_EXCLUDED_NODES"] == expected
    assert values(pool_variables={"USER_EXCLUDED_NODES": given})["USER_EXCLUDED_NODES"] == expected


def test_excluded_nodes_default_to_an_empty_system_list():
    assert (values()["USER_EXCLUDED_NODES"], layers()["USER_EXCLUDED_NODES"]) == ([], "system")


@pytest.mark.parametrize(
    ("task", "expected"),
    [
        ("train", "train"),
        ("My_Task.1", "my-task-1"),
        ("--x--", "x"),
        ("!!!", "task"),
    ],
)
def test_k8s_name(task, expected):
    assert k8s_name(task) == expected


def test_k8s_name_of_long_names_is_63_chars_and_distinct():
    first, second = k8s_name("a" * 100 + "1"), k8s_name("a" * 100 + "2")
    assert len(first) == len(second) == 63
    assert first != second


@pytest.mark.parametrize(
    "name", ["USER_CPU", "USER_CONTAINER_NAME", "WF_ID", "USER_MEMORY_Gi", "K8_CPU", "USER_EXCLUDED_NODES"]
)
def test_task_variables_cannot_set_reserved_names(name):
    with pytest.raises(VariableError) as caught:
        build_variables(task_variables={name: "1"})
    assert caught.value.field == f"variables.{name}"


@pytest.mark.parametrize("name", ["1X", "has-dash", "_private", "if", "range", ""])
def test_bad_variable_names(name):
    with pytest.raises(VariableError):
        build_variables(task_variables={name: 1})
    with pytest.raises(VariableError):
        check_variable_names({name: 1}, "default_variables")


def test_admin_names_k8_is_an_error_and_system_names_a_warning():
    with pytest.raises(VariableError, match="K8_"):
        check_variable_names({"K8_CPU": 1}, "default_variables")
    assert check_variable_names({"WF_POOL": "x", "TEAM": "a"}, "common_default_variables") == [
        "common_default_variables.WF_POOL is ignored: the system sets WF_POOL for every task"
    ]


# --------------------------------------------------------------------------- rendering


TYPED = [
    ("{{N}}", 5),
    ("{{ N }}", 5),
    ("{{- N -}}", 5),
    ("{{F}}", 0.5),
    ("{{B}}", True),
    ("{{L}}", ["a", "b"]),
    ("{{D}}", {"k": "v"}),
    ("{{S}}", "text"),
    ("{{NUMTEXT}}", "7"),
    ("x{{N}}", "x5"),
    ("{{N}}m", "5m"),
    ("{{ N|string }}", "5"),
    ("{{ N + 1 }}", "6"),
    ("{{L}} ", "['a', 'b'] "),
    ("{{ true }}", "True"),
    ("{% if N > 2 %}big{% else %}small{% endif %}", "big"),
    ("plain", "plain"),
    ("line\n{{S}}\n", "line\ntext\n"),
]


@pytest.mark.parametrize(("leaf", "expected"), TYPED)
def test_typed_substitution(leaf, expected):
    variables = {"N": 5, "F": 0.5, "B": True, "L": ["a", "b"], "D": {"k": "v"}, "S": "text", "NUMTEXT": "7"}
    rendered = CompiledTemplate({"x": leaf}).render(variables)["x"]
    assert rendered == expected
    assert type(rendered) is type(expected)


def test_render_keeps_structure_and_non_strings_and_does_not_render_keys():
    body = {"spec": {"{{K}}": 1, "grace": "{{G}}", "flags": [True, None, 3, "{{S}}"]}}
    assert CompiledTemplate(body).render({"K": "k", "G": 30, "S": "s"}) == {
        "spec": {"{{K}}": 1, "grace": 30, "flags": [True, None, 3, "s"]}
    }


def test_rendered_lists_are_copies():
    names = ["a"]
    rendered = CompiledTemplate({"v": "{{L}}"}).render({"L": names})
    rendered["v"].append("b")
    assert names == ["a"]


@pytest.mark.parametrize(
    ("leaf", "field"),
    [
        ("{{NOPE}}", "spec.containers[0].image"),
        ("{{ NOPE | lower }}", "spec.containers[0].image"),
        ("x-{{ USER_CPU }}-{{ NOPE }}", "spec.containers[0].image"),
    ],
)
def test_undefined_variable_names_the_variable_and_the_path(leaf, field):
    template = CompiledTemplate({"spec": {"containers": [{"name": "c", "image": leaf}]}})
    with pytest.raises(UndefinedVariableError) as caught:
        template.render({"USER_CPU": 1})
    assert caught.value.field == field
    assert "NOPE" in caught.value.reason


def test_check_collects_every_undefined_variable_with_its_path():
    template = CompiledTemplate({"a": "{{X}}", "b": ["ok", "{{Y}}"], "c": "{{Z|default('z')}}"})
    errors = template.check({})
    assert [(e.field, e.value) for e in errors] == [("a", "X"), ("b[1]", "Y")]


def test_optional_variables_with_is_defined_render():
    template = CompiledTemplate({"a": "{% if X is defined %}{{X}}{% else %}none{% endif %}"})
    assert template.render({}) == {"a": "none"}


def test_referenced_variables_uses_jinja_meta():
    template = {
        "a": "{{A}} {{B|lower}}",
        "b": ["{% if C %}{{D}}{% endif %}"],
        "c": "{% set E = 1 %}{{E}}",
        "d": "{% for i in range(3) %}{{ F[i] }}{% endfor %}",
        "e": "USER_CPU (text, not a variable)",
    }
    assert referenced_variables(template) == {"A", "B", "C", "D", "F"}
    assert referenced_variables("{{ K8_CPU * 2 }}") == {"K8_CPU"}


def test_strings_are_compiled_once_and_cached_by_content():
    assert compile_string("{{ A + 1 }}") is compile_string("{{ A + 1 }}")
    template = CompiledTemplate({"a": "{{ A + 1 }}"})
    assert [template.render({"A": n})["a"] for n in range(3)] == ["1", "2", "3"]


# --------------------------------------------------------------------------- values are data


HOSTILE = [
    "{{7*7}}",
    '"}]',
    "a: b\nc: d",
    "ARRAY:[x]",
    "{% raw %}{{x}}{% endraw %}",
    "{{ ''.__class__ }}",
    '{"$patch": "delete"}',
    "\\u0000",
    "' or 1=1 --",
]


@pytest.mark.parametrize("value", HOSTILE)
@pytest.mark.parametrize("leaf", ["{{X}}", "prefix-{{X}}", "{{ X | upper | lower }}"])
@pytest.mark.parametrize("layer", ["pool_variables", "platform_variables", "task_variables"])
def test_variable_values_stay_literal_strings(value, leaf, layer):
    variables = values(**{layer: {"X": value}})
    rendered = CompiledTemplate({"v": leaf}).render(variables)["v"]
    expected = leaf.replace("{{X}}", value).replace("{{ X | upper | lower }}", value.upper().lower())
    assert rendered == expected
    assert isinstance(rendered, str)


@pytest.mark.parametrize("name", ["WF_ID", "WF_SUBMITTED_BY", "WF_GROUP_NAME", "WF_TASK_NAME", "WF_PRIORITY"])
@pytest.mark.parametrize("value", HOSTILE)
def test_system_values_from_users_stay_literal(name, value):
    rendered = CompiledTemplate({"v": "{{" + name + "}}", "w": "<{{" + name + "}}>"}).render(
        values(system={name: value})
    )
    assert rendered == {"v": value, "w": f"<{value}>"}


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40))
def test_property_any_text_value_renders_literally(value):
    rendered = CompiledTemplate({"bare": "{{X}}", "mixed": "a{{ X }}b"}).render(values(task_variables={"X": value}))
    assert rendered == {"bare": value, "mixed": f"a{value}b"}


@pytest.mark.parametrize("value", HOSTILE)
@pytest.mark.parametrize("key", ["cpu", "gpu", "memory", "storage"])
def test_hostile_resource_values_are_refused(key, value):
    with pytest.raises(VariableError) as caught:
        build_variables(resources={key: value})
    assert caught.value.field == f"resources.{key}"


def test_rendered_output_is_never_rendered_again():
    assert CompiledTemplate({"v": "{{X}}"}).render({"X": "{{Y}}", "Y": "secret"}) == {"v": "{{Y}}"}


# --------------------------------------------------------------------------- sandbox


SANDBOX_REFUSALS = [
    ("{{ ''.__class__ }}", "private attribute"),
    ("{{ X.__class__.__mro__ }}", "private attribute"),
    ("{{ X['__globals__'] }}", "private item"),
    ("{{ X.__init__.__globals__ }}", "private attribute"),
    ("{% macro m() %}{% endmacro %}", "macro"),
    ("{% include 'x' %}", "include"),
    ("{% extends 'x' %}", "extends"),
    ("{% import 'x' as y %}", "import"),
    ("{% for a in range(2) %}{% for b in range(2) %}{% endfor %}{% endfor %}", "nested"),
    ("{{ X|random }}", "No filter named 'random'"),
    ("{{ X|center(100000000) }}", "No filter named 'center'"),
    ("{{ X|format(1) }}", "No filter named 'format'"),
    ("{{ X ", "template error"),
]


@pytest.mark.parametrize(("leaf", "reason"), SANDBOX_REFUSALS)
def test_sandbox_refuses_at_compile_time_with_the_path(leaf, reason):
    with pytest.raises(SandboxError) as caught:
        CompiledTemplate({"spec": {"hostname": leaf}})
    assert caught.value.field == "spec.hostname"
    assert reason in caught.value.reason


SANDBOX_RUNTIME = [
    ("{{ X * 100000 }}", "limit"),
    ("{{ [1] * 100000 }}", "limit"),
    ("{{ 10 ** 100000 }}", "too large"),
    ("{{ '%s' % X }}", "%-formatting"),
    ("{{ '{}'.format(X) }}", "str.format"),
    ("{{ X.center(100000000) }}", "unsafe"),
    ("{{ X.ljust(100000000) }}", "unsafe"),
    ("{{ range(100000)|list }}", "range()"),
    ("{% for i in range(6000) %}{{ i }}{% endfor %}{% for i in range(6000) %}{% endfor %}", "range()"),
    ("{% for i in range(10000) %}{{ X * 10 }}{% endfor %}", f"longer than {MAX_OUTPUT_CHARS}"),
    ("{{ range(10000)|join('x' * 60000) }}", "limit"),
    ("{{ (X * 60000)|replace('x', 'yy') }}", "limit"),
    ("{{ L.append(1) }}", "unsafe"),
    ("{{ lipsum(1000) }}", "undefined variable lipsum"),
    ("{{ namespace(a=1) }}", "undefined variable namespace"),
    ("{{ cycler(1) }}", "undefined variable cycler"),
    ("{{ 1 / 0 }}", "ZeroDivisionError"),
    ("{{ X.y.z }}", "undefined value"),
]


@pytest.mark.parametrize(("leaf", "reason"), SANDBOX_RUNTIME)
def test_sandbox_bounds_at_render_time_with_the_path(leaf, reason):
    template = CompiledTemplate({"spec": {"hostname": leaf}})
    with pytest.raises(EngineError) as caught:
        template.render({"X": "x", "L": [1]})
    assert caught.value.field == "spec.hostname"
    assert reason in caught.value.reason


def test_sandbox_allows_what_templates_need():
    template = CompiledTemplate(
        {
            "a": "{{ USER_CPU * 2 }}",
            "b": "{{ USER_MEMORY_Gi // 2 }}Gi",
            "c": "{{ WF_ID | upper }}",
            "d": "{% for n in USER_EXCLUDED_NODES %}{{ n }},{% endfor %}",
            "e": "{{ [USER_CPU, 1] | max }}",
            "f": "{{ 'a-' ~ WF_ID }}",
            "g": "{{ USER_EXCLUDED_NODES | join(',') }}",
            "h": "{{ range(3) | sum }}",
        }
    )
    rendered = template.render(
        {"USER_CPU": 1.5, "USER_MEMORY_Gi": 10, "WF_ID": "wf", "USER_EXCLUDED_NODES": ["a", "b"]}
    )
    assert rendered == {"a": "3.0", "b": "5Gi", "c": "WF", "d": "a,b,", "e": "1.5", "f": "a-wf", "g": "a,b", "h": "3"}


# Typed substitution respects the Pod schema: where a Pod takes only strings, numbers and booleans become text.
@pytest.mark.parametrize(
    ("template", "path", "expected"),
    [
        (
            {"spec": {"containers": [{"name": "c", "env": [{"name": "N", "value": "{{COUNT}}"}]}]}},
            ("spec", "containers", 0, "env", 0, "value"),
            "16",
        ),
        ({"metadata": {"labels": {"gpus": "{{COUNT}}"}}}, ("metadata", "labels", "gpus"), "16"),
        ({"spec": {"containers": [{"name": "c", "args": ["{{FLAG}}"]}]}}, ("spec", "containers", 0, "args", 0), "true"),
        ({"spec": {"terminationGracePeriodSeconds": "{{COUNT}}"}}, ("spec", "terminationGracePeriodSeconds"), 16),
        (
            {"spec": {"containers": [{"name": "c", "resources": {"limits": {"cpu": "{{COUNT}}"}}}]}},
            ("spec", "containers", 0, "resources", "limits", "cpu"),
            16,
        ),
    ],
)
def test_typed_substitution_follows_the_pod_schema(template, path, expected):
    rendered = CompiledTemplate(template).render({"COUNT": 16, "FLAG": True})
    for step in path:
        rendered = rendered[step]
    assert rendered == expected and type(rendered) is type(expected)
