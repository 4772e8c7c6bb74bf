"""A user's credentials over `/api/credentials` (OSMO's shapes; the live CLI proof is
tests/osmo_cli/test_credential.py): bad input refused with the field and nothing written, only the owner's,
the policy's word on who may, audited, and stored encrypted."""

from __future__ import annotations

import json

import pytest
from django.db import connection

from access.models import AuditEvent, Credential
from access.services import credentials
from access.services.roles import ensure_builtin_roles
from tests.access.conftest import allow, api, holder, role
from tests.queries import assert_constant_queries

pytestmark = pytest.mark.django_db
GENERIC = {"generic_credential": {"credential": {"user": "ada", "password": "hunter2-long-secret"}}}


@pytest.fixture(autouse=True)
def builtin_roles(db):
    ensure_builtin_roles()


def post(user, name: str, body: dict):
    return api(user).post(f"/api/credentials/{name}", body, format="json")


@pytest.mark.parametrize(
    ("name", "body", "field"),
    [
        ("1bad", GENERIC, "name"),
        ("ok", {}, ""),
        ("ok", {**GENERIC, "registry_credential": {"auth": "x"}}, ""),
        ("ok", {"ssh_credential": {}}, "ssh_credential"),
        ("ok", {"registry_credential": {"registry": "nvcr.io"}}, "registry_credential.auth"),
        ("ok", {"registry_credential": {"auth": "x", "password": "y"}}, "registry_credential.password"),
        ("ok", {"data_credential": {"endpoint": "s3://b", "access_key_id": "k"}}, "data_credential.access_key"),
        ("ok", {"generic_credential": {"credential": {}}}, "generic_credential.credential"),
        ("ok", {"generic_credential": {"credential": {"a/b": "v"}}}, "generic_credential.credential.a/b"),
        ("ok", {"generic_credential": {"credential": {"k": 3}}}, "generic_credential.credential.k"),
        ("ok", {"generic_credential": {"credential": {"k": "x" * 65537}}}, "generic_credential.credential.k"),
    ],
)
def test_bad_input_is_refused_with_the_field_and_nothing_is_written(name, body, field):
    user = holder("osmo-user")
    answer = post(user, name, body)
    assert answer.status_code == 400, answer.json()
    assert answer.json()["field"] == field and answer.json()["reason"]
    assert not Credential.objects.exists() and not AuditEvent.objects.filter(action="credential.set").exists()


def test_too_many_keys_and_too_many_credentials(settings):
    user = holder("osmo-user")
    many = {"generic_credential": {"credential": {f"k{i}": "v" for i in range(credentials.MAX_KEYS + 1)}}}
    assert post(user, "many", many).json()["field"] == "generic_credential.credential"
    Credential.objects.bulk_create(
        Credential(user=user, name=f"c{i}", cred_type="GENERIC", keys=["k"], payload="{}")
        for i in range(credentials.MAX_PER_USER)
    )
    refused = post(user, "onemore", GENERIC)
    assert refused.status_code == 400 and "delete one first" in refused.json()["reason"]
    assert post(user, "c1", GENERIC).status_code == 200  # replacing one is fine


def test_only_the_owner_sees_and_deletes_a_credential():
    ada, bob = holder("osmo-user", username="ada"), holder("osmo-user", username="bob")
    assert post(ada, "omni", GENERIC).status_code == 200
    assert api(bob).get("/api/credentials").json() == {"credentials": []}
    assert api(bob).delete("/api/credentials/omni").status_code == 404
    assert Credential.objects.filter(user=ada, name="omni").exists()
    assert api(ada).get("/api/credentials").json() == {
        "credentials": [{"cred_name": "omni", "cred_type": "GENERIC", "profile": None, "keys": ["password", "user"]}]
    }


def test_without_credentials_rights_the_policy_refuses_and_audits():
    outsider = holder(role("readers", allow(["workflow:List"])).name)
    answer = post(outsider, "omni", GENERIC)
    assert answer.status_code == 403 and answer.json()["value"] == f"credentials/{outsider.username}"
    assert AuditEvent.objects.filter(action="access.denied", target__startswith="credentials:Update").exists()
    assert api(outsider).get("/api/credentials").status_code == 403
    assert not Credential.objects.exists()


def test_set_and_delete_are_audited_without_values():
    ada = holder("osmo-user", username="ada")
    post(ada, "omni", GENERIC)
    registry = {"registry": "https://nvcr.io/v2/", "username": "$oauthtoken", "auth": "k"}
    post(ada, "ngc", {"registry_credential": registry})
    api(ada).delete("/api/credentials/omni")
    events = list(AuditEvent.objects.filter(action__startswith="credential.").order_by("id"))
    assert [(e.action, e.target, e.detail["name"]) for e in events] == [
        ("credential.set", "user/ada", "omni"),
        ("credential.set", "user/ada", "ngc"),
        ("credential.delete", "user/ada", "omni"),
    ]
    assert "hunter2" not in json.dumps([e.detail for e in events])
    assert Credential.objects.get(name="ngc").profile == "nvcr.io"  # the registry as images name it


def test_a_registry_credential_for_the_same_registry_replaces_the_other_as_osmo():
    ada = holder("osmo-user", username="ada")
    post(ada, "ngc", {"registry_credential": {"registry": "nvcr.io", "auth": "old"}})
    post(ada, "ngc2", {"registry_credential": {"registry": "nvcr.io", "auth": "new"}})
    assert [(c.name, credentials.secret_values(c)["auth"]) for c in Credential.objects.all()] == [("ngc2", "new")]


def test_values_are_stored_encrypted():
    ada = holder("osmo-user", username="ada")
    post(ada, "omni", GENERIC)
    with connection.cursor() as cursor:
        cursor.execute("SELECT payload FROM access_credential")
        [(stored,)] = cursor.fetchall()
    assert stored.startswith("fernet:") and "hunter2" not in stored
    assert credentials.secret_values(Credential.objects.get())["password"] == "hunter2-long-secret"


def test_the_list_takes_constant_queries():
    ada = holder("osmo-user", username="ada")
    post(ada, "first", GENERIC)
    assert_constant_queries(
        lambda: api(ada).get("/api/credentials"),
        lambda: [post(ada, f"more{i}", GENERIC) for i in range(3)],
    )


def test_key_rotation_reencrypts_credentials_and_names_those_no_key_opens(settings):
    from io import StringIO

    from cryptography.fernet import Fernet
    from django.core.management import call_command

    ada = holder("osmo-user", username="ada")
    old, new = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    settings.FIELD_ENCRYPTION_KEYS = [old]
    post(ada, "omni", GENERIC)
    settings.FIELD_ENCRYPTION_KEYS = [new, old]
    out = StringIO()
    call_command("backend", "reencrypt", stdout=out)
    assert "1 credential(s) re-encrypted" in out.getvalue()
    settings.FIELD_ENCRYPTION_KEYS = [new]
    assert credentials.secret_values(Credential.objects.get())["password"] == "hunter2-long-secret"

    settings.FIELD_ENCRYPTION_KEYS = [Fernet.generate_key().decode()]  # the keys were lost
    with pytest.raises(credentials.CredentialInvalid) as unreadable:
        credentials.secret_values(Credential.objects.get())
    assert unreadable.value.field == "FIELD_ENCRYPTION_KEYS" and "omni" in unreadable.value.reason
    with pytest.raises(Exception, match="credential ada/omni"):
        call_command("backend", "reencrypt", stdout=StringIO())
