"""`access.policy` against the database: the prefix rule, OSMO's pool-visibility table, principals
(users, tokens, anonymous, superusers), per-request caching and constant query counts."""

from __future__ import annotations

import random

import pytest
from django.contrib.auth.models import AnonymousUser
from django.test import RequestFactory

from access import policy, usable_pools
from access.matching import rules_of, visible_in_role
from access.services import roles
from tests.access.conftest import ACTOR, OTHER_POOLS, TEAM_POOLS, allow, deny, holder, role
from tests.factories import PoolFactory, TokenFactory, UserFactory
from tests.queries import captured_queries

pytestmark = pytest.mark.django_db


def test_seed_prefix_rule_examples(seed_pools, team_role):
    """000_…: `osmo-team` may use teamcluster01, team-cluster-02, team-gpu-pool; not myteam-…, other-team-pool."""
    user = holder("osmo-team")
    assert usable_pools.allowed_pools(user) == set(TEAM_POOLS)
    for name in TEAM_POOLS:
        assert policy.decide(user, "workflow:Create", f"pool/{name}").allowed
    for name in OTHER_POOLS:
        decision = policy.decide(user, "workflow:Create", f"pool/{name}")
        assert not decision.allowed
        assert decision.because == [f"no policy of roles osmo-default, osmo-team allows workflow:Create on pool/{name}"]


def test_generated_pool_role_is_exactly_osmos(team_role):
    assert (team_role.description, team_role.policies) == (
        "Generated Role for pool team",
        [{"effect": "Allow", "actions": ["workflow:*"], "resources": ["pool/team*"]}],
    )


VISIBILITY_POOLS = ["default", "dev", "dev-gpu", "staging", "production", "restricted"]


@pytest.mark.parametrize(
    ("case", "role_policies", "expected"),
    [
        ("admin *:* on *", [[allow(["*:*"])]], VISIBILITY_POOLS),
        ("create on dev and staging", [[allow(["workflow:Create"], ["pool/dev", "pool/staging"])]], ["dev", "staging"]),
        (
            "allow pool/* minus denies in the same role",
            [
                [
                    allow(["workflow:Create"], ["pool/*"]),
                    deny(["workflow:Create"], ["pool/restricted", "pool/production"]),
                ]
            ],
            ["default", "dev", "dev-gpu", "staging"],
        ),
        (
            "deny in another role is ignored for visibility",
            [[allow(["workflow:Create"], ["pool/*"])], [deny(["workflow:Create"], ["pool/restricted"])]],
            VISIBILITY_POOLS,
        ),
        ("app:Read grants no pool", [[allow(["app:Read"])]], []),
        ("pool:List does not count", [[allow(["pool:List"])]], []),
        ("empty resources are global-only", [[allow(["workflow:Create"], [])]], []),
        ("missing resources are global-only", [[{"actions": ["workflow:Create"]}]], []),
        ("*:Create works", [[allow(["*:Create"], ["pool/staging"])]], ["staging"]),
        ("workflow:* with a prefix", [[allow(["workflow:*"], ["pool/dev*"])]], ["dev", "dev-gpu"]),
        (
            "union of roles",
            [[allow(["workflow:Create"], ["pool/dev"])], [allow(["workflow:Create"], ["pool/default"])]],
            ["default", "dev"],
        ),
        ("deny-only role", [[deny(["workflow:Create"], ["pool/*"])]], []),
        ("* action on one pool", [[allow(["*"], ["pool/production"])]], ["production"]),
        ("create on *", [[allow(["workflow:Create"], ["*"])]], VISIBILITY_POOLS),
        ("no roles", [], []),
        (
            "deny of another action does not hide",
            [[allow(["workflow:*"], ["pool/*"]), deny(["workflow:Delete"])]],
            VISIBILITY_POOLS,
        ),
    ],
)
def test_allowed_pools_table(case, role_policies, expected):
    """After OSMO's `TestGetAllowedPools` (pool_access_test.go), plus our own cases."""
    for name in VISIBILITY_POOLS:
        PoolFactory(name=name)
    names = [role(f"role-{index}", *policies).name for index, policies in enumerate(role_policies)]
    user = holder(*names)
    assert usable_pools.allowed_pools(user) == set(expected), case


def test_cross_role_deny_hides_nothing_but_refuses_the_decision():
    """OSMO's TestCrossRoleDenySemantics, and the decision that disagrees with it (documented in docs/access.md)."""
    PoolFactory(name="restricted")
    role("everything", allow(["workflow:Create"], ["pool/*"]))
    role("no-restricted", deny(["workflow:Create"], ["pool/restricted"]))
    user = holder("everything", "no-restricted")
    assert "restricted" in usable_pools.allowed_pools(user)
    decision = policy.decide(user, "workflow:Create", "pool/restricted")
    assert not decision.allowed
    assert decision.because == [
        "role no-restricted policy #1 (Deny workflow:Create on pool/restricted) denies "
        "workflow:Create on pool/restricted"
    ]
    explained = policy.explain(user, "workflow:Create", "pool/restricted")
    assert (explained.allowed, explained.listed) == (False, True)
    assert explained.listed_because == [
        "role everything allows workflow:Create on pool/restricted and does not deny it"
    ]


def test_deny_precedence_on_delete():
    """OSMO: Allow workflow:* + Deny workflow:Delete → DELETE denied, GET allowed."""
    role("team", allow(["workflow:*"], ["pool/*"]), deny(["workflow:Delete"], ["pool/*"]))
    user = holder("team")
    assert policy.decide(user, "workflow:Read", "pool/a").allowed
    assert not policy.decide(user, "workflow:Delete", "pool/a").allowed


def test_everyone_holds_osmo_default_even_anonymous():
    anonymous = policy.Principal(AnonymousUser())
    assert policy.role_names(anonymous) == ["osmo-default"]
    assert policy.decide(anonymous, "system:Health").allowed
    assert not policy.decide(anonymous, "pool:List").allowed
    assert policy.role_names(UserFactory()) == ["osmo-default"]


def test_inactive_users_hold_nothing_but_the_default():
    user = holder("osmo-admin")
    user.is_active = False
    assert policy.role_names(user) == ["osmo-default"]


def test_superusers_are_admins_only_through_osmo_admin():
    superuser = UserFactory(is_superuser=True, is_staff=True)
    assert roles.user_role_names(superuser) == ["osmo-admin"]
    assert policy.decide(superuser, "config:Update", "config/pool").allowed
    roles.update_user_roles(superuser, remove=["osmo-admin"], actor=ACTOR)
    assert not policy.decide(superuser, "config:Update", "config/pool").allowed


def test_a_token_holds_its_roles_intersected_with_its_owners(team_role, robotics_role):
    owner = holder("osmo-team", "osmo-robotics", "osmo-user")
    token = TokenFactory(user=owner, roles=[team_role, robotics_role])
    assert policy.role_names(token) == ["osmo-default", "osmo-robotics", "osmo-team"]
    assert not policy.decide(token, "pool:List").allowed  # osmo-user is not in the token's subset
    roles.update_user_roles(owner, remove=["osmo-team"], actor=ACTOR)
    assert policy.role_names(token) == ["osmo-default", "osmo-robotics"]
    assert not policy.decide(token, "workflow:Create", "pool/team-a").allowed
    roles.update_user_roles(owner, add=["osmo-team"], actor=ACTOR)
    assert policy.role_names(token) == ["osmo-default", "osmo-robotics"]  # OSMO: regranting does not re-expand


def test_a_token_loses_a_role_its_owner_loses_by_any_door(team_role):
    owner = holder("osmo-team")
    token = TokenFactory(user=owner, roles=[team_role])
    owner.groups.remove(team_role.group)  # e.g. a Django group change, not through the service
    assert policy.role_names(token) == ["osmo-default"]


def test_decisions_after_the_first_cost_no_query(seed_pools, team_role):
    user = holder("osmo-team", "osmo-user")
    subject = policy.principal(user)
    with captured_queries() as first:
        subject.decide("workflow:Create", "pool/team-gpu-pool")
    assert len(first) == 1
    with captured_queries() as entry:  # not an admin by role: are they a pool owner?
        policy.admin_access(subject)
    assert len(entry) == 1  # the principal's object rights, once
    with captured_queries() as later:
        for name in TEAM_POOLS + OTHER_POOLS:
            subject.decide("workflow:Create", f"pool/{name}")
            subject.decide("workflow:Delete", f"pool/{name}")
        policy.admin_access(subject)
        policy.role_names(subject)
    assert len(later) == 0


def test_a_request_shares_one_principal():
    request = RequestFactory().get("/")
    request.user = holder("osmo-user")
    assert policy.principal(request) is policy.principal(request)
    with captured_queries() as queries:
        policy.decide(request, "pool:List")
        policy.decide(request, "workflow:Read", "pool/x")
        policy.decide(request, "pool:List")
    assert len(queries) == 1


def test_pools_for_is_one_query_whatever_the_number_of_pools_and_roles():
    for index in range(20):
        role(
            f"team{index:02d}",
            allow(["workflow:*"], [f"pool/team{index:02d}*"]),
            deny(["workflow:Create"], [f"pool/team{index:02d}-frozen"]),
        )
    user = holder(*[f"team{index:02d}" for index in range(20)])
    for index in range(5):
        PoolFactory(name=f"team{index:02d}-pool")
    subject = policy.principal(user)
    subject.roles  # noqa: B018  (roles loaded once per request, counted elsewhere)
    with captured_queries() as few:
        assert len(usable_pools.allowed_pools(subject)) == 5
    for index in range(200):
        PoolFactory(name=f"team{index % 20:02d}-bulk-{index}")
    PoolFactory(name="team03-frozen")
    with captured_queries() as many:
        assert len(usable_pools.allowed_pools(subject)) == 205
    assert len(few) == len(many) == 1


def test_pools_for_agrees_with_per_role_visibility_on_random_roles():
    """The SQL filter and the in-memory matcher say the same thing (300 random role sets)."""
    names = ["a", "ab", "abc", "a-b", "b", "ba", "team_x", "team%y", "pool", "c.d"]
    for name in names:
        PoolFactory(name=name)
    rng = random.Random(7)
    patterns = [
        "*",
        "pool/*",
        "pool/a*",
        "pool/ab",
        "pool/b*",
        "pool/team_*",
        "pool/team%*",
        "pool/c.d",
        "p*",
        "pool/",
        "config/pool",
        "pool/zz*",
        "pool/a-*",
        "pool/ab*",
    ]
    actions = ["workflow:Create", "workflow:*", "*:*", "*:Create", "pool:List", "workflow:Delete"]
    for _ in range(300):
        role_set = {}
        for index in range(rng.randint(0, 3)):
            role_set[f"r{index}"] = [
                {
                    "effect": rng.choice(["Allow", "Allow", "Deny"]),
                    "actions": rng.sample(actions, rng.randint(1, 2)),
                    "resources": rng.sample(patterns, rng.randint(0, 3)),
                }
                for _ in range(rng.randint(1, 3))
            ]
        subject = policy.Principal(UserFactory.build())
        subject._roles = {name: rules_of(name, items) for name, items in role_set.items()}
        expected = {
            name
            for name in names
            if any(visible_in_role(rules, "workflow:Create", f"pool/{name}") for rules in subject.roles.values())
        }
        assert usable_pools.allowed_pools(subject) == expected, role_set
