"""ROLE as a config type (CLI, service, REST), built-in roles, immutability, the pool-role generator,
user role commands and IdP sync."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.contrib.auth.models import Group
from django.core.management import call_command
from django.db import transaction

from access.models import AuditEvent, Role
from access.services import roles
from access.services.roles import BuiltinRole, sync_roles_from_claims
from configs import store
from configs.errors import ConfigError
from configs.models import Revision
from tests.access.conftest import ACTOR, SEEDS, allow, api, holder, role
from tests.factories import TokenFactory, UserFactory

pytestmark = pytest.mark.django_db
ROLE_KEYS = {"name", "description", "policies", "immutable", "sync_mode", "external_roles"}


def run(*args) -> str:
    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO())
    return out.getvalue()


def test_builtin_roles_exist_after_migrate():
    assert {"osmo-admin", "osmo-user", "osmo-default"} <= set(Role.objects.values_list("name", flat=True))
    admin = Role.objects.get(name="osmo-admin")
    assert admin.immutable and admin.policies == [{"effect": "Allow", "actions": ["*:*"], "resources": ["*"]}]
    user = store.show("ROLE", "osmo-user")
    assert "auth:Token" in user["policies"][0]["actions"]
    assert user["policies"][1] == {"effect": "Allow", "actions": ["workflow:*"], "resources": ["pool/default"]}


@pytest.mark.parametrize("name", ["osmo-admin", "osmo-user", "osmo-default"])
def test_builtin_roles_cannot_be_deleted_by_any_door(name):
    with pytest.raises(BuiltinRole):
        store.delete("ROLE", name, ACTOR)
    with pytest.raises(BuiltinRole), transaction.atomic():
        Group.objects.get(name=name).delete()
    assert Role.objects.filter(name=name).exists()


def test_osmo_admin_stays_admin_even_with_force():
    with pytest.raises(BuiltinRole):
        store.apply("ROLE", "osmo-admin", {"policies": [allow(["pool:List"])], "immutable": True, "force": True}, ACTOR)


def test_config_update_show_history_delete_round_trip(tmp_path):
    body = {
        "name": "osmo-vision",
        "description": "vision team",
        "policies": [{"effect": "Allow", "actions": ["workflow:*"], "resources": ["pool/vision*"]}],
        "external_roles": ["vision-gpu-users"],
    }
    path = tmp_path / "role.json"
    path.write_text(json.dumps(body))
    assert (
        run("config", "update", "ROLE", "osmo-vision", "--file", str(path)) == "ROLE osmo-vision created (revision 1)\n"
    )
    shown = json.loads(run("config", "show", "ROLE", "osmo-vision"))
    assert set(shown) == ROLE_KEYS
    assert shown["sync_mode"] == "import" and shown["immutable"] is False
    path.write_text(json.dumps(shown))
    assert "unchanged" in run("config", "update", "ROLE", "osmo-vision", "--file", str(path))
    assert Group.objects.filter(name="osmo-vision").exists()
    assert "deleted (revision 2)" in run("config", "delete", "ROLE", "osmo-vision")
    assert not Group.objects.filter(name="osmo-vision").exists()
    assert [r.revision for r in Revision.objects.filter(config_type="ROLE", name="osmo-vision")] == [2, 1]


def test_rollback_restores_a_role():
    store.apply("ROLE", "r", {"policies": [allow(["pool:List"])]}, ACTOR)
    store.apply("ROLE", "r", {"policies": [allow(["workflow:*"], ["pool/x*"])]}, ACTOR)
    store.rollback("ROLE", "r", 1, ACTOR)
    assert Role.objects.get(name="r").policies == [allow(["pool:List"])]


def test_external_roles_null_keeps_the_mapping_empty_list_clears_it():
    store.apply("ROLE", "r", {"external_roles": ["idp-a"]}, ACTOR)
    store.apply("ROLE", "r", {"description": "x"}, ACTOR)
    assert Role.objects.get(name="r").external_roles == ["idp-a"]
    store.apply("ROLE", "r", {"description": "x", "external_roles": []}, ACTOR)
    assert Role.objects.get(name="r").external_roles == []


def test_immutable_roles_refuse_policy_changes_unless_forced():
    store.apply("ROLE", "locked", {"policies": [allow(["pool:List"])], "immutable": True}, ACTOR)
    with pytest.raises(ConfigError) as error:
        store.apply("ROLE", "locked", {"policies": [allow(["*:*"])], "immutable": True}, ACTOR)
    assert error.value.field == "policies" and "Role locked is immutable" in error.value.reason
    with pytest.raises(ConfigError):
        store.apply("ROLE", "locked", {"policies": [allow(["pool:List"])], "immutable": False}, ACTOR)
    store.apply(
        "ROLE", "locked", {"description": "new words", "policies": [allow(["pool:List"])], "immutable": True}, ACTOR
    )  # description only: fine
    store.apply("ROLE", "locked", {"policies": [allow(["*:*"])], "immutable": True, "force": True}, ACTOR)
    assert Role.objects.get(name="locked").policies == [allow(["*:*"])]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"policies": [{"effect": "Maybe", "actions": ["pool:List"]}]}, "policies[0].effect"),
        ({"policies": [{"actions": ["pool:list"]}]}, "policies[0].actions[0]"),
        ({"policies": [{"actions": []}]}, "policies[0].actions"),
        ({"policies": [{"actions": ["pool:List"], "resources": "pool/x"}]}, "policies[0].resources"),
        ({"policies": [{"actions": ["pool:List"], "where": 1}]}, "policies[0].where"),
        ({"sync_mode": "sometimes"}, "sync_mode"),
        ({"external_roles": "idp-a"}, "external_roles"),
        ({"permissions": []}, "permissions"),
        ({"name": "other"}, "name"),
    ],
)
def test_invalid_role_documents_name_the_field(body, field):
    with pytest.raises(ConfigError) as error:
        store.apply("ROLE", "r", body, ACTOR)
    assert error.value.field == field


def test_config_set_role_pool_generates_osmos_pool_role():
    assert run("config", "set", "ROLE", "osmo-team", "pool") == "ROLE osmo-team created (revision 1)\n"
    assert store.show("ROLE", "osmo-team") == {
        "name": "osmo-team",
        "description": "Generated Role for pool team",
        "policies": [{"effect": "Allow", "actions": ["workflow:*"], "resources": ["pool/team*"]}],
        "immutable": False,
        "sync_mode": "import",
        "external_roles": [],
    }
    assert "unchanged" in run("config", "set", "ROLE", "osmo-team", "pool")
    with pytest.raises(ConfigError) as error:
        run("config", "set", "ROLE", "team", "pool")
    assert error.value.field == "name"


def test_the_seed_legacy_role_imports_through_config_set_with_a_file():
    err = StringIO()
    call_command(
        "config",
        "set",
        "ROLE",
        "osmo-shared",
        "-f",
        str(SEEDS / "role_osmo_shared_legacy.json"),
        stdout=StringIO(),
        stderr=err,
    )
    assert "converted from the OSMO 6.0 format" in err.getvalue()
    assert "reaches no API endpoint" in err.getvalue()
    assert Role.objects.get(name="osmo-shared").policies == [
        {"effect": "Allow", "actions": ["workflow:Create"], "resources": ["pool/shared_simulation_training_pool*"]}
    ]


def test_role_api_in_osmos_shape():
    client = api(holder("osmo-admin"))
    created = client.put(
        "/api/configs/role/osmo-ml",
        {"configs": {"description": "ml", "policies": [allow(["workflow:*"], ["pool/ml*"])]}},
        format="json",
    )
    assert created.status_code == 200 and created.json()["created"] is True, created.json()
    assert set(client.get("/api/configs/role/osmo-ml").json()) == ROLE_KEYS
    assert "osmo-ml" in [role["name"] for role in client.get("/api/configs/role").json()]  # OSMO: a list
    refused = client.delete("/api/configs/role/osmo-admin")
    assert refused.status_code == 409 and refused.json()["code"] == "builtin"
    assert client.delete("/api/configs/role/osmo-ml").status_code == 200


def test_user_commands():
    role("osmo-ml", allow(["workflow:*"], ["pool/ml*"]))
    assert (
        run("user", "create", "ana", "--roles", "osmo-user,osmo-ml") == "user ana created; roles: osmo-ml, osmo-user\n"
    )
    assert "added -; removed osmo-ml; roles now: osmo-user" in run("user", "update", "ana", "--remove-roles", "osmo-ml")
    run("user", "update", "ana", "--add-roles", "osmo-ml")
    shown = json.loads(run("user", "show", "ana", "--format", "json"))
    assert shown["roles"] == ["osmo-ml", "osmo-user"] and shown["tokens"] == []
    with pytest.raises(ConfigError) as error:
        run("user", "update", "ana", "--add-roles", "osmo-nope")
    assert (error.value.field, error.value.value) == ("add_roles", "osmo-nope")
    assert {e.action for e in AuditEvent.objects.filter(target="user/ana")} >= {
        "user.create",
        "role.grant",
        "role.revoke",
    }


def test_revoking_a_role_removes_it_from_the_users_tokens(team_role):
    user = holder("osmo-team")
    token = TokenFactory(user=user, roles=[team_role])
    roles.update_user_roles(user, remove=["osmo-team"], actor=ACTOR)
    assert list(token.roles.all()) == []


# --- IdP sync -----------------------------------------------------------------------------------------


def test_sync_import_adds_and_never_removes():
    role("osmo-team", allow(["workflow:*"], ["pool/team*"]))
    user = UserFactory()
    result = sync_roles_from_claims(user, {"osmo-team", "unrelated"})
    assert (result.added, result.removed, result.unmatched) == (["osmo-team"], [], ["unrelated"])
    result = sync_roles_from_claims(user, set())
    assert (result.added, result.removed, result.changed) == ([], [], False)
    assert roles.user_role_names(user) == ["osmo-team"]


def test_sync_force_adds_and_removes_and_external_names_map():
    store.apply("ROLE", "gpu-users", {"sync_mode": "force", "external_roles": ["/corp/gpu", "gpu-realm-role"]}, ACTOR)
    user = UserFactory()
    assert sync_roles_from_claims(user, {"gpu-realm-role"}).added == ["gpu-users"]
    assert sync_roles_from_claims(user, {"gpu-realm-role"}).kept == ["gpu-users"]
    assert sync_roles_from_claims(user, {"something-else"}).removed == ["gpu-users"]
    assert roles.user_role_names(user) == []
    events = AuditEvent.objects.filter(target=f"user/{user.username}").order_by("id")
    assert [(e.action, e.source, e.detail["via"]) for e in events] == [
        ("role.grant", "oidc", "idp-sync"),
        ("role.revoke", "oidc", "idp-sync"),
    ]


def test_sync_ignore_never_touches_the_role():
    store.apply("ROLE", "manual", {"sync_mode": "ignore"}, ACTOR)
    user = holder("manual")
    other = UserFactory()
    assert sync_roles_from_claims(user, set()).removed == []
    result = sync_roles_from_claims(other, {"manual"})
    assert (result.added, result.unmatched) == ([], [])
    assert roles.user_role_names(user) == ["manual"] and roles.user_role_names(other) == []


def test_sync_never_touches_osmo_default():
    user = UserFactory()
    assert sync_roles_from_claims(user, {"osmo-default"}).added == []
