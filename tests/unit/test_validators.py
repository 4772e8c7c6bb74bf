"""Field and document validation: every refusal names the field, the value and why."""

from datetime import timedelta

import pytest

from clusters.config_types import BACKEND
from configs.errors import ConfigError
from configs.validators import check_name, check_timeouts, normalize_exit_actions, parse_timeout
from pools.config_types import POD_TEMPLATE, POOL, RESOURCE_VALIDATION


@pytest.mark.parametrize("name", ["a", "pool1", "team-gpu_pool.v2", "heterogeneous_pool", "A1"])
def test_valid_names(name):
    assert check_name(name) == name


@pytest.mark.parametrize("name", ["", "1pool", "-pool", "pool-", "pool name", "pool/x", "pöol", None, 3])
def test_invalid_names_are_refused_with_field_and_value(name):
    with pytest.raises(ConfigError) as caught:
        check_name(name, "platforms.x")
    assert caught.value.field == "platforms.x"
    assert caught.value.value == name


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2h", timedelta(hours=2)),
        ("30m", timedelta(minutes=30)),
        ("7d", timedelta(days=7)),
        ("45s", timedelta(seconds=45)),
        ("1500ms", timedelta(seconds=1.5)),
        ("PT2H", timedelta(hours=2)),
        ("P1DT6H", timedelta(days=1, hours=6)),
        ("P1W", timedelta(weeks=1)),
        (3600, timedelta(hours=1)),
        ("", None),
        (None, None),
    ],
)
def test_timeouts_accept_short_units_and_iso8601(text, expected):
    assert parse_timeout(text, "default_exec_timeout") == expected


@pytest.mark.parametrize("text", ["2 hours", "2H", "1h30m", "PT", "P", "-5m", "0s", "h", True, 1.5])
def test_bad_timeouts_are_refused(text):
    with pytest.raises(ConfigError) as caught:
        parse_timeout(text, "max_exec_timeout")
    assert caught.value.field == "max_exec_timeout"


def test_default_timeout_may_not_exceed_maximum():
    with pytest.raises(ConfigError) as caught:
        check_timeouts({"default_exec_timeout": "10h", "max_exec_timeout": "8h"})
    assert caught.value.field == "default_exec_timeout"
    assert "max_exec_timeout (8h)" in caught.value.reason
    check_timeouts({"default_exec_timeout": "PT8H", "max_exec_timeout": "8h"})


def test_exit_actions_normalise_keys_and_check_codes():
    assert normalize_exit_actions({"complete": "0", "FAIL": "1-10, 16", "Reschedule": 137}) == {
        "COMPLETE": "0",
        "FAIL": "1-10,16",
        "RESCHEDULE": "137",
    }


@pytest.mark.parametrize(
    ("actions", "field"),
    [
        ({"RETRY": "1"}, "default_exit_actions.RETRY"),
        ({"FAIL": "1-"}, "default_exit_actions.FAIL"),
        ({"FAIL": "a"}, "default_exit_actions.FAIL"),
        ({"FAIL": "10-2"}, "default_exit_actions.FAIL"),
        ({"FAIL": "300"}, "default_exit_actions.FAIL"),
        ("FAIL=1", "default_exit_actions"),
    ],
)
def test_bad_exit_actions_name_the_key(actions, field):
    with pytest.raises(ConfigError) as caught:
        normalize_exit_actions(actions)
    assert caught.value.field == field


def _pool(**overrides):
    body = {
        "backend": "default",
        "platforms": {"a": {}, "b": {"override_pod_template": ["t1"]}},
        "default_platform": "a",
    }
    body.update(overrides)
    return body


def test_pool_document_parses_every_osmo_field():
    doc = POOL.parse(
        "p1",
        _pool(
            description="d",
            default_exec_timeout="1h",
            max_exec_timeout="2h",
            default_exit_actions={"fail": "1"},
            resources={"gpu": {"guarantee": 4, "maximum": 8, "weight": 2}},
            enable_maintenance=True,
            common_default_variables={"USER_CPU": 2},
            common_resource_validations=["v"],
            common_pod_template=["t"],
            topology_keys=[{"key": "rack", "label": "topology.kubernetes.io/rack"}],
        ),
    )
    assert (doc.gpu_guarantee, doc.gpu_maximum, doc.gpu_weight) == (4, 8, 2)
    assert doc.default_exit_actions == {"FAIL": "1"}
    assert [p.name for p in doc.platforms] == ["a", "b"]
    assert doc.platforms[1].override_pod_template == ["t1"]


@pytest.mark.parametrize(
    ("overrides", "field", "reason_part"),
    [
        ({"default_platform": "c"}, "default_platform", "platforms: a, b"),
        ({"backend": ""}, "backend", "needs a backend"),
        ({"colour": "red"}, "colour", "unknown field"),
        (
            {"platforms": {"a": {"override_resource_validations": []}}, "default_platform": "a"},
            "platforms.a.override_resource_validations",
            "resource_validations",
        ),
        (
            {"platforms": {"a": {"privileged_allowed": "yes"}}, "default_platform": "a"},
            "platforms.a.privileged_allowed",
            "true or false",
        ),
        ({"platforms": {"bad name": {}}, "default_platform": ""}, "platforms.bad name", "must start with a letter"),
        ({"common_pod_template": ["a", "a"]}, "common_pod_template", "same name twice"),
        ({"common_default_variables": {"1X": 1}}, "common_default_variables.1X", "variable names"),
        ({"resources": {"gpu": {"guarantee": 9, "maximum": 8}}}, "resources.gpu.guarantee", "maximum"),
        (
            {"platforms": {"a": {"allowed_mounts": ["data"]}}, "default_platform": "a"},
            "platforms.a.allowed_mounts[0]",
            "absolute host path",
        ),
        ({"common_group_templates": ["g"]}, "common_group_templates", "not supported"),
    ],
)
def test_pool_document_errors_name_the_field(overrides, field, reason_part):
    with pytest.raises(ConfigError) as caught:
        POOL.parse("p1", _pool(**overrides))
    assert caught.value.field == field
    assert reason_part in caught.value.reason


def test_osmo_computed_fields_are_ignored_with_a_warning():
    doc = POOL.parse("p1", _pool(status="ONLINE", action_permissions={"execute": "POOL"}))
    assert any("status" in w for w in doc.warnings)
    assert any("action_permissions" in w for w in doc.warnings)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"specs": {}}, "specs"),
        ({"spec": []}, "spec"),
        ([], "(document)"),
    ],
)
def test_pod_template_must_be_a_partial_pod(body, field):
    with pytest.raises(ConfigError) as caught:
        POD_TEMPLATE.parse("t", body)
    assert caught.value.field == field


@pytest.mark.parametrize(
    ("rules", "field"),
    [
        ([{"operator": "LE", "left_operand": "1", "right_operand": "2"}], "[0].assert_message"),
        ([{"operator": "ABOUT", "left_operand": "1", "right_operand": "2", "assert_message": "m"}], "[0].operator"),
        ([{"operator": "LE", "left_operand": "1", "right_operand": "2", "assert_message": "m", "x": 1}], "[0].x"),
        ({"operator": "LE"}, "(document)"),
    ],
)
def test_rule_shape_errors_name_the_rule(rules, field):
    with pytest.raises(ConfigError) as caught:
        RESOURCE_VALIDATION.parse("v", rules)
    assert caught.value.field == field


def test_rule_operators_are_case_insensitive_and_ne_is_accepted():
    rules = RESOURCE_VALIDATION.parse(
        "v", [{"operator": "ne", "left_operand": "{{USER_GPU}}", "right_operand": "3", "assert_message": "not 3"}]
    ).rules
    assert rules[0]["operator"] == "NE"


def test_backend_accepts_osmo_scheduler_settings():
    doc = BACKEND.parse("c1", {"description": "x", "scheduler_settings": {"scheduler_name": "kai"}, "online": True})
    assert doc.scheduler_name == "kai"
    with pytest.raises(ConfigError) as caught:
        BACKEND.parse("c1", {"namespace": "Bad_NS"})
    assert caught.value.field == "namespace"
