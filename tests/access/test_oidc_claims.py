"""Claim extraction (access/claims.py): pure functions, Keycloak's shapes."""

from __future__ import annotations

import pytest

from access import claims


@pytest.mark.parametrize(
    ("groups", "expected"),
    [
        (["/osmo-team"], {"osmo-team"}),
        (["osmo-team"], {"osmo-team"}),
        (["/parent/osmo-team"], {"parent/osmo-team", "osmo-team"}),
        (["/a/b/osmo-gpu", "/osmo-team"], {"a/b/osmo-gpu", "osmo-gpu", "osmo-team"}),
        ("/osmo-team", {"osmo-team"}),  # a lone string is a list of one
        (["/", "", "  ", None, 7, {"x": 1}], set()),  # junk is ignored, never an error
        (None, set()),
        ({"osmo-team": True}, set()),
    ],
)
def test_group_names(groups, expected):
    assert claims.group_names(groups) == expected


def test_external_names_merges_groups_realm_and_client_roles():
    token = {
        "groups": ["/parent/osmo-team"],
        "realm_access": {"roles": ["osmo-user", "default-roles-osmo"]},
        "resource_access": {"pool-portal": {"roles": ["osmo-admin"]}, "other-client": {"roles": ["nope"]}},
    }
    assert claims.external_names(token, "pool-portal") == {
        "parent/osmo-team",
        "osmo-team",
        "osmo-user",
        "default-roles-osmo",
        "osmo-admin",
    }
    assert "osmo-admin" not in claims.external_names(token)  # client roles only for our own client


@pytest.mark.parametrize(
    "token",
    [
        {},
        {"realm_access": None},
        {"realm_access": {"roles": "osmo-user"}},
        {"realm_access": ["osmo-user"]},
        {"resource_access": {"pool-portal": []}},
    ],
)
def test_odd_shapes_do_not_crash(token):
    names = claims.external_names(token, "pool-portal")
    assert names in (set(), {"osmo-user"})


def test_received_summary_keeps_raw_group_paths():
    token = {"groups": ["/parent/osmo-team", "/parent/osmo-team"], "realm_access": {"roles": ["b", "a"]}}
    assert claims.received_summary(token) == {
        "groups": ["/parent/osmo-team"],
        "realm_roles": ["a", "b"],
        "client_roles": [],
    }


@pytest.mark.parametrize(
    ("token", "expected"),
    [
        ({"preferred_username": "alice", "email": "x@y", "sub": "1"}, "alice"),
        ({"preferred_username": "Alice Smith", "sub": "1"}, "Alice-Smith"),
        ({"preferred_username": "  ", "email": "bob.b@example.com", "sub": "1"}, "bob.b"),
        ({"sub": "f81d4fae"}, "user-f81d4fae"),
        ({"preferred_username": "é/ü", "sub": "1"}, "é-ü"),
        ({}, "user"),
    ],
)
def test_username_base(token, expected):
    assert claims.username_base(token) == expected


def test_username_candidates_stay_within_django_limits():
    base = "x" * 142
    first_three = [c for _, c in zip(range(3), claims.username_candidates(base), strict=False)]
    assert first_three == [base, base + "-2", base + "-3"]
    assert all(len(c) <= 150 for c in claims.username_candidates(base))


def test_profile_fields():
    assert claims.profile_fields({"email": " a@b.c ", "given_name": "A", "family_name": 3}) == {
        "email": "a@b.c",
        "first_name": "A",
        "last_name": "",
    }
