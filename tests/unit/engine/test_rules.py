"""Resource validation rules: OSMO's shape, quantity comparison, static vs node rules, any-node semantics."""

from __future__ import annotations

import pytest

from pools.engine.defaults import OSMO_DEFAULT_VALIDATIONS
from pools.engine.rules import (
    NodeCapacity,
    RuleError,
    compile_rules,
    parse_rules,
    validate_rule_set,
)


def rule(operator="LE", left="{{USER_CPU}}", right="{{K8_CPU}}", message="cpu {{USER_CPU}} too high"):
    return {"operator": operator, "left_operand": left, "right_operand": right, "assert_message": message}


def node(name, cpu="8", gpu="0", memory="64Gi", storage="100Gi"):
    return NodeCapacity(name, cpu, gpu, memory, storage)


def static_result(operator, left, right, variables=None):
    failures = compile_rules([("v", [rule(operator, left, right, "failed")])]).check_static(variables or {})
    return "pass" if not failures else failures[0].kind + ": " + failures[0].message


# --------------------------------------------------------------------------- shape


@pytest.mark.parametrize(
    ("raw", "field", "reason"),
    [
        ("not a rule", "v[0]", "a rule is a mapping"),
        ({k: v for k, v in rule().items() if k != "assert_message"}, "v[0].assert_message", "required"),
        ({**rule(), "left_operand": None}, "v[0].left_operand", "required"),
        ({**rule(), "severity": "high"}, "v[0].severity", "unknown field"),
        (rule(operator="GTE"), "v[0].operator", "operator must be one of GT, GE, LT, LE, EQ, NE"),
        (rule(operator=1), "v[0].operator", "operator must be one of"),
        (rule(left=True), "v[0].left_operand", "must be a string"),
        (rule(right=["1"]), "v[0].right_operand", "must be a string"),
        (rule(left="{{ USER_CPU "), "v[0].left_operand", "template error"),
        (rule(message="{{ ''.__class__ }}"), "v[0].assert_message", "private attribute"),
        (
            rule(right="{{K8_GPU_MODEL}}"),
            "v[0]",
            "unknown node variable K8_GPU_MODEL; node variables are K8_CPU, K8_GPU",
        ),
    ],
)
def test_malformed_rules_name_the_index_and_field(raw, field, reason):
    with pytest.raises(RuleError) as caught:
        parse_rules("v", [raw])
    assert caught.value.field == field
    assert reason in caught.value.reason


def test_errors_name_the_rule_index_within_its_validation():
    with pytest.raises(RuleError) as caught:
        compile_rules([("ok", [rule()]), ("cpu", [rule(), rule(), {**rule(), "x": 1}])])
    assert caught.value.field == "cpu[2].x"


def test_validate_rule_set_reports_every_problem():
    errors = validate_rule_set("v", [rule(), rule(operator="??"), {"operator": "GT"}])
    assert [e.field for e in errors] == ["v[1].operator", "v[2].left_operand"]


def test_lenient_forms_are_accepted():
    (parsed,) = parse_rules("v", [rule(operator=" le ", right=0)])
    assert (parsed.operator, parsed.right.compiled.source) == ("LE", "0")


@pytest.mark.parametrize(
    ("raw", "is_node"),
    [
        (rule(left="{{USER_CPU}}", right="{{K8_CPU}}"), True),
        (rule(left="{{ K8_MEMORY * 0.8 }}", right="1Gi"), True),
        (rule(left="{% if K8_GPU > 0 %}1{% else %}0{% endif %}", right="1"), True),
        (rule(left="1", right="2", message="only the message reads {{K8_CPU}}"), True),
        (rule(left="{{USER_CPU}}", right="0"), False),
        (rule(left="K8_CPU", right="K8_CPU", operator="EQ"), False),  # literal text, not a variable
        (rule(left="{{USER_K8_CPU_LIMIT}}", right="1"), False),  # OSMO's substring test would call this a node rule
    ],
)
def test_node_rules_are_classified_with_jinja_meta(raw, is_node):
    compiled = compile_rules([("v", [raw])])
    assert (len(compiled.node), len(compiled.static)) == ((1, 0) if is_node else (0, 1))


def test_osmo_default_validations_compile_into_four_static_and_four_node_rules():
    compiled = compile_rules(list(OSMO_DEFAULT_VALIDATIONS.items()))
    assert [r.where for r in compiled.node] == [
        "default_cpu[0]",
        "default_memory[0]",
        "default_storage[0]",
        "default_gpu[0]",
    ]
    assert [r.where for r in compiled.static] == [
        "default_cpu[1]",
        "default_memory[1]",
        "default_storage[1]",
        "default_gpu[1]",
    ]


# --------------------------------------------------------------------------- comparison


@pytest.mark.parametrize(
    ("operator", "left", "right", "expected"),
    [
        ("EQ", "1Gi", "1073741824", "pass"),
        ("LT", "500m", "1", "pass"),
        ("LT", "1G", "1Gi", "pass"),  # Kubernetes: G = 10^9 < Gi = 2^30 (OSMO treats them as equal)
        ("GT", "2", "1.5", "pass"),
        ("GE", "1k", "1000", "pass"),
        ("LE", "0.5", "500m", "pass"),
        ("NE", "1", "2", "pass"),  # OSMO documents NE but does not implement it
        ("NE", "1Gi", "1024Mi", "failed: failed"),
        ("GT", "1", "2", "failed: failed"),
        ("EQ", "a100", "a100", "pass"),
        ("NE", "a100", "h100", "pass"),
        ("EQ", " 1 ", "1", "pass"),
        ("GT", "a100", "h100", "error: GT needs quantities or numbers; text can only be compared with EQ or NE"),
        ("LE", "1Gi", "68719476736 * 0.8", "error: right operand '68719476736 * 0.8' is not a quantity or number"),
        ("EQ", "abc", "1", "error: left operand 'abc' is not a quantity or number"),
    ],
)
def test_operand_comparison(operator, left, right, expected):
    assert static_result(operator, left, right).startswith(expected)


def test_static_rules_render_operands_and_the_message():
    compiled = compile_rules([("default_cpu", [rule("GT", "{{USER_CPU}}", "0", "Value {{USER_CPU}} must be > 0")])])
    (failure,) = compiled.check_static({"USER_CPU": 0})
    assert failure.as_dict() == {
        "validation": "default_cpu",
        "index": 0,
        "operator": "GT",
        "left": "0",
        "right": "0",
        "message": "Value 0 must be > 0",
        "kind": "failed",
    }
    assert compiled.check_static({"USER_CPU": 0.5}) == []


def test_undefined_variables_make_an_error_verdict_not_a_crash():
    (failure,) = compile_rules([("v", [rule("GT", "{{USER_STORAGE}}", "0")])]).check_static({})
    assert (failure.kind, failure.message) == ("error", "undefined variable USER_STORAGE")


def test_an_unrenderable_message_still_reports_the_failure():
    (failure,) = compile_rules([("v", [rule("GT", "0", "1", "needs {{NOPE}}")])]).check_static({})
    assert failure.kind == "failed"
    assert "needs {{NOPE}}" in failure.message and "undefined variable NOPE" in failure.message


def test_rule_failure_as_error_names_the_rule():
    (failure,) = compile_rules([("cpu", [rule("GT", "0", "1", "msg")])]).check_static({})
    error = failure.as_error()
    assert (error.field, error.reason, error.value) == ("cpu[0]", "msg", "0 GT 1")


# --------------------------------------------------------------------------- node rules


def test_a_task_passes_when_at_least_one_node_satisfies_every_node_rule():
    compiled = compile_rules(list(OSMO_DEFAULT_VALIDATIONS.items()))
    task = {"USER_CPU": 4, "USER_GPU": 1, "USER_MEMORY": "32Gi", "USER_STORAGE": "10Gi"}
    nodes = [node("cpu-only", cpu="64"), node("small-gpu", cpu="2", gpu="1"), node("gpu", cpu="16", gpu="8")]
    verdict = compiled.check_nodes(task, nodes, pool="p", platform="gpu")
    assert verdict.passed
    assert verdict.passing_nodes == ["gpu"]
    assert {name: (f"{f.validation}[{f.index}]", f.left, f.right) for name, f in verdict.failures.items()} == {
        "cpu-only": ("default_gpu[0]", "1", "0"),
        "small-gpu": ("default_cpu[0]", "4", "2"),
    }
    assert verdict.failures["small-gpu"].message == "Value 4 too high for CPU"


def test_failing_everywhere_lists_every_node():
    compiled = compile_rules([("v", [rule()])])
    verdict = compiled.check_nodes({"USER_CPU": 100}, [node("a"), node("b", cpu="32")])
    assert not verdict.passed
    assert {n: (f.left, f.right, f.message) for n, f in verdict.failures.items()} == {
        "a": ("100", "8", "cpu 100 too high"),
        "b": ("100", "32", "cpu 100 too high"),
    }
    assert verdict.as_dict()["failures"]["a"]["kind"] == "failed"


def test_no_nodes_is_a_clear_error():
    verdict = compile_rules([("v", [rule()])]).check_nodes({"USER_CPU": 1}, [], pool="team", platform="a100")
    assert (verdict.passed, verdict.error) == (False, "no nodes in platform a100 of pool team")


def test_without_node_rules_every_node_passes():
    verdict = compile_rules([("v", [rule("GT", "{{USER_CPU}}", "0")])]).check_nodes({"USER_CPU": 1}, [node("a")])
    assert (verdict.passed, verdict.passing_nodes) == (True, ["a"])


@pytest.mark.parametrize(
    ("raw", "passing"),
    [
        (rule("LE", "{{USER_MEMORY}}", "{{ K8_MEMORY * 0.8 }}"), ["big"]),  # arithmetic inside the braces works
        (rule("LE", "{{USER_CPU}}", "{{ K8_CPU - 1 }}"), ["big"]),
        (rule("GE", "{{ K8_GPU }}", "{{USER_GPU}}"), ["big"]),
        (rule("EQ", "{% if K8_GPU > 0 %}gpu{% else %}cpu{% endif %}", "gpu"), ["big"]),
        (rule("LT", "{{USER_STORAGE}}", "{{K8_STORAGE}}"), ["small", "big"]),
    ],
)
def test_node_operands_can_be_expressions(raw, passing):
    task = {"USER_CPU": 4, "USER_GPU": 1, "USER_MEMORY": "60Gi", "USER_STORAGE": "10Gi"}
    nodes = [node("small", cpu="4", gpu="0", memory="64Gi"), node("big", cpu="8", gpu="1", memory="128Gi")]
    verdict = compile_rules([("v", [raw])]).check_nodes(task, nodes)
    assert verdict.passing_nodes == passing


def test_osmo_doc_example_with_arithmetic_outside_the_braces_is_a_clear_error_per_node():
    verdict = compile_rules([("v", [rule("LE", "{{USER_MEMORY}}", "{{K8_MEMORY}} * 0.8")])]).check_nodes(
        {"USER_MEMORY": "1Gi"}, [node("a", memory="1Gi")]
    )
    failure = verdict.failures["a"]
    assert (failure.kind, failure.right) == ("error", "1073741824 * 0.8")
    assert "is not a quantity or number" in failure.message


def test_a_broken_task_side_fails_every_node_with_an_error():
    verdict = compile_rules([("v", [rule()])]).check_nodes({}, [node("a"), node("b")])
    assert {f.kind for f in verdict.failures.values()} == {"error"}
    assert verdict.failures["a"].message == "undefined variable USER_CPU"


def test_nodes_of_one_shape_share_one_verdict():
    compiled = compile_rules([("v", [rule("LE", "{{USER_CPU}}", "{{ K8_CPU }}")])])
    nodes = [node(f"n{i}", cpu="8" if i % 2 else "2") for i in range(1000)]
    verdict = compiled.check_nodes({"USER_CPU": 4}, nodes)
    assert len(verdict.passing_nodes) == 500
    assert len({id(f) for f in verdict.failures.values()}) == 1


def test_node_capacity_parses_strings_and_exposes_numbers():
    capacity = NodeCapacity("n", "7500m", 8, "1Gi", "1e3", gpu_product="Tesla-T4")
    assert capacity.variables() == {
        "K8_CPU": 7.5,
        "K8_GPU": 8,
        "K8_MEMORY": 2**30,
        "K8_STORAGE": 1000,
        "K8_GPU_PRODUCT": "Tesla-T4",
        "K8_GPU_CUDA_DRIVER": "",
    }


def test_nodes_of_one_resource_shape_with_different_gpus_get_their_own_verdict():
    compiled = compile_rules([("v", [rule("EQ", "{{K8_GPU_PRODUCT}}", "Tesla-T4")])])
    nodes = [
        NodeCapacity("t4", "8", 1, "1Gi", "1Gi", "Tesla-T4"),
        NodeCapacity("l4", "8", 1, "1Gi", "1Gi", "NVIDIA-L4"),
    ]
    verdict = compiled.check_nodes({}, nodes)
    assert verdict.passing_nodes == ["t4"] and list(verdict.failures) == ["l4"]
