"""portal.safe_yaml: the same values as yaml.safe_load for valid documents, and every refusal named with its
source, line, column and document path (no Django needed)."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest
import yaml

from portal.safe_yaml import (
    INT_DIGITS_MAX,
    ItemLimit,
    Limits,
    SafeYAMLError,
    check_document,
    load,
    load_json,
    load_yaml,
)

ROOT = Path(__file__).resolve().parents[2]
MALFORMED_ON_PURPOSE = {
    ROOT / "docs/examples/workflows/invalid-yaml.yaml",  # the docs show its refusal
    ROOT / "docs/examples/workflows/templated.yaml",  # a Jinja template: YAML once rendered (docs/workflows.md)
}
REPO_YAML = sorted(
    p
    for pattern in ("docs/**/*.yaml", "pools/demo/*.yaml")
    for p in ROOT.glob(pattern)
    if p not in MALFORMED_ON_PURPOSE
)


DEFAULT = Limits()


def refused(text: str, limits: Limits = DEFAULT, source: str = "spec.yaml") -> SafeYAMLError:
    with pytest.raises(SafeYAMLError) as caught:
        load(text, limits, source)
    return caught.value


def merge_bomb(levels: int) -> str:
    return "k0: &k0 {a: 1}\n" + "".join(f"k{i}: &k{i} {{<<: [*k{i - 1}, *k{i - 1}]}}\n" for i in range(1, levels + 1))


# ------------------------------------------------------------------------------------------ same values


@pytest.mark.parametrize("path", REPO_YAML, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_repositorys_yaml_reads_as_safe_load_reads_it(path):
    text = path.read_text()
    assert load_yaml(text, Limits(max_nodes=10**6)) == yaml.safe_load(text)


@pytest.mark.parametrize(
    "text",
    [
        "a: 1\nb: -2\nc: 0x1f\nd: 0o17\ne: 1_000\nf: 1:30\ng: +12",
        "a: 1.5\nb: -1e3\nc: 6.02e+23\nd: 1_000.5",
        "a: yes\nb: No\nc: true\nd: off\ne: ~\nf: null\ng:\nh: ''",
        "a: 2024-01-02\nb: 2024-01-02T03:04:05Z\nc: 2024-01-02 03:04:05.5 +02:00",
        "a: '1'\nb: \"true\"\nc: !!str 12\nd: !!int '7'\ne: !!float '2'\nf: ! 12",
        "a: |\n  line one\n  line two\nb: >\n  folded\n  text\n",
        "base: &b {x: 1, y: 2}\nother: &o {y: 3, z: 4}\nm:\n  <<: [*b, *o]\n  x: 9\n",
        "base: &b {x: 1}\nm: {<<: *b, y: 2}\nn: {<<: {p: 1, x: 5}, x: 6}",
        "list: &l [1, [2, 3], {k: v}]\ncopy: *l\n",
        "3: int key\ntrue: bool key\n~: null key\n2024-01-01: date key",
        "- a\n- - b\n  - c\n- {d: e}\n",
        "= : odd",
        "# only a comment\n",
        "",
        "--- \nsingle: document\n...\n",
    ],
)
def test_values_match_safe_load(text):
    assert load_yaml(text) == yaml.safe_load(text)


def test_merge_keys_keep_pyyamls_order_and_precedence():
    text = "b: &b {x: 1, y: 2}\no: &o {y: 3, z: 4}\nm:\n  <<: [*b, *o]\n  x: 9\n"
    assert (
        list(load_yaml(text)["m"].items()) == list(yaml.safe_load(text)["m"].items()) == [("y", 2), ("z", 4), ("x", 9)]
    )


def test_an_empty_stream_is_none_and_json_is_read_as_json():
    assert load_yaml("") is None
    assert load('  {"a": [1, 2.5, "x", null, true]}') == {"a": [1, 2.5, "x", None, True]}


# ------------------------------------------------------------------------------------------ bombs


def test_the_merge_key_doubling_bomb_is_refused_at_the_node_limit():
    error = refused(merge_bomb(30))
    assert "more than 20000 values" in error.reason and "'<<' merges" in error.reason
    assert error.reason.startswith("spec.yaml:12:")  # the level where the expanded count passes 20,000
    assert error.field.startswith("k11")


def test_merges_below_the_limit_read_like_safe_load():
    text = merge_bomb(8)
    assert load_yaml(text) == yaml.safe_load(text)


def test_the_alias_bomb_is_refused():
    levels = ["a: &a [x, x, x, x, x, x, x, x, x]"] + [
        f"{b}: &{b} [{', '.join([f'*{a}'] * 9)}]" for a, b in zip("abcdefgh", "bcdefghi", strict=True)
    ]
    error = refused("\n".join(levels))
    assert "more than 20000 values" in error.reason and error.field.startswith("e[")


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("a: &a [*a]", "spec.yaml:1:8"),
        ("a: &a {b: *a}", "spec.yaml:1:11"),
        ("a: &a\n  - b: [*a]\n", "spec.yaml:2:9"),
    ],
)
def test_recursive_aliases_are_refused(text, where):
    error = refused(text)
    assert error.reason.startswith(f"{where}: recursive alias *a")


def test_unknown_aliases_are_refused():
    assert "unknown alias *nope" in refused("a: *nope").reason


@pytest.mark.parametrize(
    "text",
    [
        "a: " + "[" * 40 + "]" * 40,
        "a: " + "{b: " * 40 + "1" + "}" * 40,
        "".join("  " * i + f"k{i}:\n" for i in range(40)) + "  " * 40 + "leaf",
        "x: &x " + "[" * 20 + "]" * 20 + "\ny: " + "[" * 20 + "*x" + "]" * 20,  # depth brought by an alias
    ],
)
def test_nesting_deeper_than_the_limit_is_refused(text):
    error = refused(text)
    assert "nested more than 32 levels deep" in error.reason


def test_the_depth_limit_stops_libyaml_early_on_a_huge_nesting():
    error = refused("a: " + "[" * 500_000)
    assert "nested more than 32 levels" in error.reason and error.reason.startswith("spec.yaml:1:35")


def test_the_size_is_checked_before_parsing():
    error = refused("a: [" + "1, " * 200_000 + "\n", Limits(max_bytes=1000))
    assert error.reason == "spec.yaml: the document is larger than 1000 bytes (600005 or more)"
    assert refused("é" * 600, Limits(max_bytes=1000)).value == 1200  # bytes, not characters


def test_items_at_the_given_paths_are_counted_across_lists():
    limits = Limits(items=ItemLimit("tasks", 3, (("workflow", "tasks"), ("workflow", "groups", "*", "tasks"))))
    assert load_yaml("workflow:\n  tasks: [1, 2, 3]\n", limits) == {"workflow": {"tasks": [1, 2, 3]}}
    error = refused("workflow:\n  groups:\n  - tasks: [1, 2]\n  - tasks: [3, 4]\n", limits)
    assert error.reason == "spec.yaml:4:16: more than 3 tasks (at most 3 are allowed)"
    assert error.field == "workflow.groups[1].tasks[1]" and error.value == 4
    assert load_yaml("other:\n  tasks: [1, 2, 3, 4]\n", limits)  # other lists are not counted


# ------------------------------------------------------------------------------------------ content


def test_duplicate_keys_are_refused_with_both_lines():
    error = refused("workflow:\n  name: a\n  tasks: []\n  name: b\n")
    assert error.reason == ("spec.yaml:4:3: duplicate key 'name' (first at line 2); a key may appear once in a mapping")
    assert (error.field, error.value) == ("workflow.name", "name")
    assert "duplicate key '<<'" in refused("b: &b {x: 1}\nm: {<<: *b, <<: *b}").reason


def test_a_key_merged_and_written_is_not_a_duplicate():
    assert load_yaml("b: &b {x: 1}\nm: {<<: *b, x: 2}") == {"b": {"x": 1}, "m": {"x": 2}}


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("a: " + "9" * (INT_DIGITS_MAX + 1), "an integer may have at most 4300 digits"),
        ("a: 0x" + "f" * 4000, "an integer may have at most 4300 digits"),
        ("a: .nan", "numbers must be finite"),
        ("a: -.inf", "numbers must be finite"),
        ("a: 1.0e+999", "numbers must be finite"),
        ("a: !!set {x}", "the tag tag:yaml.org,2002:set is not allowed"),
        ("a: !!binary aGk=", "the tag tag:yaml.org,2002:binary is not allowed"),
        ("a: !!python/object:os.system x", "the tag tag:yaml.org,2002:python/object:os.system is not allowed"),
        ("a: !custom x", "the tag !custom is not allowed"),
        ("a: 2024-13-45", "is not a valid date or time"),
        ("? [a, b]\n: c", "a mapping key must be a scalar"),
        ("a: [<<]", "'<<' (merge) is only allowed as a mapping key"),
        ("a: {<<: [1, 2]}", "'<<' (merge) takes a mapping or a list of mappings"),
        ("a: 1\n---\nb: 2", "expected a single document"),
    ],
)
def test_values_json_cannot_hold_or_that_mislead_are_refused(text, reason):
    error = refused(text)
    assert reason in error.reason and error.reason.startswith("spec.yaml:")


def test_an_integer_just_under_the_limit_reads():
    assert load_yaml("a: " + "9" * INT_DIGITS_MAX) == {"a": int("9" * INT_DIGITS_MAX)}


def test_values_read_through_their_tags():
    assert load_yaml("a: !!int '12'\nb: 2024-01-02") == {"a": 12, "b": datetime.date(2024, 1, 2)}


# ------------------------------------------------------------------------------------------ syntax errors


@pytest.mark.parametrize(
    ("text", "where", "problem"),
    [
        ("a: [b\n", "2:1", "did not find expected ',' or ']'"),
        ("a:\n\tb: 1\n", "2:1", "found character that cannot start any token"),
        ("a: 'open\n", "2:1", "found unexpected end of stream"),
    ],
)
def test_syntax_errors_name_line_and_column(text, where, problem):
    error = refused(text)
    assert error.reason == f"spec.yaml:{where}: invalid YAML: {problem}"


# ------------------------------------------------------------------------------------------ JSON


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ('{"a": NaN}', "numbers must be finite: NaN is not allowed"),
        ('{"a": -Infinity}', "numbers must be finite: -Infinity is not allowed"),
        ('{"a": 1e999}', "numbers must be finite: 1e999 is too large"),
        ('{"a": ' + "9" * 5000 + "}", "an integer may have at most 4300 digits"),
    ],
)
def test_json_refusals(text, reason):
    assert refused(text, source="body").reason == f"body: invalid JSON: {reason}"


@pytest.mark.parametrize(
    ("text", "position"),
    [
        ('{"a": 1, "b": {"c": 1, "c": 2}}', "1:24"),
        ('{"c": [{"c": 1}, {"c": 2}],\n "b": {"c": 1, "d": {"c": 3},\n   "c": 2}}', "3:4"),
        ('[{"x": {"y": 1}},\n {"x": 1, "y": 2, "x": 3}]', "2:19"),
    ],
)
def test_a_json_duplicate_key_names_its_line_and_column(text, position):
    """json's hook knows no position; the refusal still names where the repeated key is, for the editor."""
    key = "x" if text.startswith("[") else "c"
    assert (
        refused(text, source="body").reason == f"body:{position}: invalid JSON: key '{key}' appears twice in one object"
    )


def test_json_syntax_errors_name_line_and_column():
    assert refused('{"a": 1,\n "b": }').reason == "spec.yaml:2:7: invalid JSON: Expecting value (near '\"b\": }')"


def test_json_depth_and_size_limits():
    assert "nested more than 32 levels deep" in refused("[" * 40 + "]" * 40).reason
    assert "nested more than 32 levels deep" in refused("[" * 100_000 + "]" * 100_000, Limits(max_bytes=10**6)).reason
    assert "more than 10 values" in refused(str(list(range(20))), Limits(max_nodes=10)).reason
    assert load_json("[1]") == [1]


def test_check_document_applies_the_limits_to_parsed_values():
    check_document({"a": [1, {"b": "c"}]})
    for document, reason in (
        ({"a": float("nan")}, "numbers must be finite"),
        ({"a": 10**5000}, "at most 4300 digits"),
        ({"a": [[[[1]]]]}, "nested more than 3 levels"),
        ({"a": list(range(50))}, "more than 20 values"),
    ):
        with pytest.raises(SafeYAMLError) as caught:
            check_document(document, Limits(max_depth=3, max_nodes=20))
        assert reason in caught.value.reason
