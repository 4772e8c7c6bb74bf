"""OSMO 6.0 path-glob actions → 6.2 semantic policies (OSMO's `ConvertLegacyActionToSemantic`), `!` denies kept."""

from __future__ import annotations

import pytest

from access.config_types import ROLE
from access.legacy import convert
from configs.errors import ConfigError


def one(path: str, method: str = "*") -> list[dict]:
    return convert([{"base": "http", "path": path, "method": method}], "actions").policies


@pytest.mark.parametrize(
    ("path", "method", "expected"),
    [
        ("*", "*", [{"effect": "Allow", "actions": ["*:*"], "resources": ["*"]}]),
        (
            "/api/pool/*/workflow",
            "post",
            [{"effect": "Allow", "actions": ["workflow:Create"], "resources": ["pool/*"]}],
        ),
        (
            "/api/pool/team-a/workflow",
            "post",
            [{"effect": "Allow", "actions": ["workflow:Create"], "resources": ["pool/team-a"]}],
        ),
        (
            "/api/pool/shared*",
            "post",
            [{"effect": "Allow", "actions": ["workflow:Create"], "resources": ["pool/shared*"]}],
        ),
        ("/api/pool*", "post", [{"effect": "Allow", "actions": ["workflow:Create"], "resources": ["pool/*"]}]),
        ("/api/workflow", "get", [{"effect": "Allow", "actions": ["workflow:List"], "resources": ["*"]}]),
        (
            "/api/workflow*",
            "get",
            [{"effect": "Allow", "actions": ["workflow:List", "workflow:Read"], "resources": ["*"]}],
        ),
        ("/api/profile/*", "*", [{"effect": "Allow", "actions": ["profile:*"], "resources": ["*"]}]),
        ("/health", "get", [{"effect": "Allow", "actions": ["system:Health"], "resources": ["*"]}]),
        ("/api/configs/pool", "get", [{"effect": "Allow", "actions": ["config:Read"], "resources": ["config/pool"]}]),
        ("/api/pool", "get", [{"effect": "Allow", "actions": ["pool:List"], "resources": ["*"]}]),
    ],
)
def test_path_and_method_become_semantic_actions(path, method, expected):
    assert one(path, method) == expected


def test_deny_patterns_are_kept_as_deny_policies():
    converted = convert(
        [{"path": "/api/pool/*", "method": "post"}, {"path": "!/api/pool/prod*", "method": "post"}], "actions"
    )
    assert converted.policies == [
        {"effect": "Deny", "actions": ["workflow:Create"], "resources": ["pool/prod*"]},
        {"effect": "Allow", "actions": ["workflow:Create"], "resources": ["pool/*"]},
    ]
    assert converted.warnings == []


def test_string_form_is_accepted():
    assert convert(["http:/api/pool/team*:post"], "actions").policies == [
        {"effect": "Allow", "actions": ["workflow:Create"], "resources": ["pool/team*"]}
    ]


def test_a_glob_that_reaches_nothing_is_dropped_with_a_warning():
    converted = convert([{"base": "http", "path": "/api/pool/team-a", "method": "post"}], "actions")
    assert converted.policies == []
    assert "reaches no API endpoint" in converted.warnings[0]


def test_inner_wildcards_are_never_widened():
    converted = convert([{"path": "/api/pool/te*m/workflow", "method": "post"}], "actions")
    assert converted.policies == []
    assert any("only a trailing '*'" in warning for warning in converted.warnings)


@pytest.mark.parametrize(
    ("item", "field"),
    [
        ({"base": "ftp", "path": "/x", "method": "get"}, "actions[0].base"),
        ({"base": "http", "path": "/x", "method": "fetch"}, "actions[0].method"),
        ({"base": "http", "method": "get"}, "actions[0].path"),
        ({"base": "http", "path": "/x", "verb": "get"}, "actions[0].verb"),
    ],
)
def test_malformed_legacy_actions_name_the_field(item, field):
    with pytest.raises(ConfigError) as error:
        convert([item], "actions")
    assert error.value.field == field


def test_the_seed_legacy_role_imports_with_a_warning(seed_role):
    doc = ROLE.parse("osmo-shared", seed_role)
    assert doc.policies == [
        {"effect": "Allow", "actions": ["workflow:Create"], "resources": ["pool/shared_simulation_training_pool*"]}
    ]
    assert doc.description == "Role for shared simulation training pool"
    assert doc.warnings[0] == "converted from the OSMO 6.0 format (path globs) to semantic policies"
    assert "'http:/api/profile/*'" in doc.warnings[1] and "did you mean '/api/profile/*'" in doc.warnings[1]


def test_legacy_actions_inside_policies_are_converted_too():
    doc = ROLE.parse(
        "r",
        {
            "policies": [
                {
                    "actions": [{"base": "http", "path": "!/api/pool/x*", "method": "post"}, "workflow:Read"],
                    "resources": ["*"],
                }
            ]
        },
    )
    assert doc.policies == [
        {"effect": "Allow", "actions": ["workflow:Read"], "resources": ["*"]},
        {"effect": "Deny", "actions": ["workflow:Create"], "resources": ["pool/x*"]},
    ]


@pytest.mark.parametrize("path", ["api/pool/shared*", "!api/workflow/*", "pool/shared"])
def test_a_path_without_its_leading_slash_is_refused_not_dropped(path):
    # OSMO refuses these; dropping them with a warning saved a role that grants nothing and exited 0
    with pytest.raises(ConfigError) as refused:
        convert([{"base": "http", "path": path, "method": "*"}], "policies[0].actions")
    assert refused.value.field == "policies[0].actions[0].path" and refused.value.value == path
    assert "did you mean '/" in refused.value.reason
