"""OSMO 6.2 matching, as pure functions (OSMO's `src/utils/roles/action_registry.go` and its tests)."""

from __future__ import annotations

import pytest

from access.matching import (
    Decision,
    Rule,
    evaluate,
    resource_matches,
    rules_of,
    visible_in_role,
)


@pytest.mark.parametrize(
    ("pattern", "action", "expected"),
    [
        ("workflow:Create", "workflow:Create", True),
        ("workflow:Create", "workflow:Delete", False),
        ("*", "workflow:Create", True),
        ("*:*", "config:Update", True),
        ("workflow:*", "workflow:Cancel", True),
        ("workflow:*", "pool:List", False),
        ("*:Create", "workflow:Create", True),
        ("*:Create", "workflow:Read", False),
        ("*:Read", "config:Read", True),
        ("pool:*", "poolx:List", False),
    ],
)
def test_action_matching(pattern, action, expected):
    assert Rule("r", 1, "Allow", (pattern,), ("*",)).matches_action(action) is expected


@pytest.mark.parametrize(
    ("pattern", "resource", "expected"),
    [
        # OSMO's matchResource table
        ("pool/team-a*", "pool/team-a-gpu-03", True),
        ("pool/team-a*", "pool/team-a", True),
        ("pool/team-a*", "pool/team-b", False),
        ("config/service-*", "config/service-main", True),
        ("backend/cluster-us*", "backend/cluster-us-east", True),
        ("backend/cluster-us*", "backend/cluster-eu", False),
        ("user/svc-*", "user/svc-ci", True),
        ("pool/exact", "pool/exact", True),
        ("pool/exact", "pool/exactly", False),
        ("*", "pool/anything", True),
        ("*", "config/pool", True),
        ("pool/team*", "", True),  # a global action's resource "" is matched by every pattern
        ("config/pool", "", True),
        ("pool/*", "pool/x", True),
        ("pool/*", "config/pool", False),
        # a wildcard request ("any pool") is matched by pool/* or any pool/x pattern
        ("pool/*", "pool/*", True),
        ("pool/team*", "pool/*", True),
        ("pool/x", "pool/*", True),
        ("config/pool", "pool/*", False),
    ],
)
def test_resource_matching(pattern, resource, expected):
    assert resource_matches(pattern, resource) is expected


def test_empty_resources_match_only_global_actions():
    rule = Rule("r", 1, "Allow", ("*:*",), ())
    assert rule.matches("pool:List", "")
    assert not rule.matches("workflow:Create", "pool/team-a")


def test_missing_effect_defaults_to_allow_and_missing_resources_to_global_only():
    (rule,) = rules_of("r", [{"actions": ["workflow:Create"]}])
    assert rule.effect == "Allow" and rule.resources == ()


def _roles(**policies) -> dict:
    return {name: rules_of(name, items) for name, items in policies.items()}


def test_deny_wins_over_allow_in_the_same_role():
    roles = _roles(
        team=[
            {"effect": "Allow", "actions": ["workflow:*"], "resources": ["pool/*"]},
            {"effect": "Deny", "actions": ["workflow:Delete"], "resources": ["pool/*"]},
        ]
    )
    assert evaluate(roles, "workflow:Read", "pool/x").allowed
    denied = evaluate(roles, "workflow:Delete", "pool/x")
    assert not denied.allowed
    assert denied.because == ["role team policy #2 (Deny workflow:Delete on pool/*) denies workflow:Delete on pool/x"]


def test_deny_in_any_role_wins_for_decisions():
    roles = _roles(
        a=[{"effect": "Allow", "actions": ["workflow:Create"], "resources": ["pool/*"]}],
        b=[{"effect": "Deny", "actions": ["workflow:Create"], "resources": ["pool/secret"]}],
    )
    assert not evaluate(roles, "workflow:Create", "pool/secret").allowed
    assert evaluate(roles, "workflow:Create", "pool/open").allowed


def test_nothing_matched_says_so():
    decision = evaluate(_roles(a=[], b=[]), "workflow:Create", "pool/x")
    assert decision == Decision(False, ["no policy of roles a, b allows workflow:Create on pool/x"])


def test_allow_names_every_allowing_policy():
    roles = _roles(
        a=[{"actions": ["*:*"], "resources": ["*"]}], b=[{"actions": ["workflow:Create"], "resources": ["pool/x"]}]
    )
    assert [line.split(" policy")[0] for line in evaluate(roles, "workflow:Create", "pool/x").because] == [
        "role a",
        "role b",
    ]


def test_visibility_deny_only_counts_within_its_role():
    a = rules_of(
        "a",
        [
            {"actions": ["workflow:Create"], "resources": ["pool/*"]},
            {"effect": "Deny", "actions": ["workflow:Create"], "resources": ["pool/restricted"]},
        ],
    )
    assert visible_in_role(a, "workflow:Create", "pool/dev")
    assert not visible_in_role(a, "workflow:Create", "pool/restricted")
