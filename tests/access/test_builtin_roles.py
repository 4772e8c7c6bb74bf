"""Built-in roles (OSMO §4.4): all five exist after migrate; a newer release's default actions are merged
into existing ones without removing what operators added (OSMO's `merge_default_role_policies`)."""

from __future__ import annotations

import pytest

from access import policy
from access.documents import BUILTIN_ROLES
from access.matching import evaluate, rules_of
from access.models import Role
from access.services import roles
from access.services.roles import merge_default_policies
from configs.models import Revision

pytestmark = pytest.mark.django_db
USER_ACTIONS = BUILTIN_ROLES["osmo-user"]["policies"][0]["actions"]


def test_the_five_built_in_roles_exist_after_migrate():
    assert set(Role.objects.values_list("name", flat=True)) >= {
        "osmo-admin",
        "osmo-user",
        "osmo-default",
        "osmo-backend",
        "osmo-ctrl",
    }
    backend = Role.objects.get(name="osmo-backend")
    assert backend.immutable and Role.objects.get(name="osmo-ctrl").immutable
    assert policy.Principal().decide("system:Health").allowed  # osmo-default, implicitly everyone's
    rules = {"osmo-backend": rules_of("osmo-backend", backend.policies)}
    assert evaluate(rules, "internal:Operator", "backend/gpu-cluster").allowed
    assert not evaluate(rules, "workflow:Create", "pool/default").allowed


def test_missing_default_actions_join_the_policy_of_the_same_scope_and_operator_grants_stay():
    edited = [
        {"effect": "Allow", "resources": ["*"], "actions": ["pool:List", "app:Extra"]},
        {"effect": "Deny", "resources": ["pool/secret*"], "actions": ["workflow:*"]},
    ]
    merged = merge_default_policies(edited, BUILTIN_ROLES["osmo-user"]["policies"])
    assert merged[0]["actions"][:2] == ["pool:List", "app:Extra"]
    assert set(merged[0]["actions"]) == set(USER_ACTIONS) | {"app:Extra"}
    assert merged[1] == edited[1]  # the operator's own deny, untouched
    assert merged[2] == {"effect": "Allow", "actions": ["workflow:*"], "resources": ["pool/default"]}
    assert merge_default_policies(merged, BUILTIN_ROLES["osmo-user"]["policies"]) == merged  # idempotent
    assert edited[0]["actions"] == ["pool:List", "app:Extra"]  # the input is not modified


def test_startup_merges_into_an_edited_built_in_role_once_with_a_revision():
    role = Role.objects.get(name="osmo-user")
    role.policies = [{"effect": "Allow", "resources": ["*"], "actions": ["pool:List", "app:Extra"]}]
    role.save()
    assert roles.ensure_builtin_roles() == ["osmo-user"]
    role.refresh_from_db()
    assert set(role.policies[0]["actions"]) == set(USER_ACTIONS) | {"app:Extra"}
    latest = Revision.objects.filter(config_type="ROLE", name="osmo-user").order_by("-revision").first()
    assert (
        latest.description == "default actions of this release merged in"
        and latest.snapshot["policies"] == role.policies
    )
    assert roles.ensure_builtin_roles() == []  # nothing missing: nothing written
