"""OSMO's user API (`osmo user …`) and the admin token paths (`osmo token … --user`), with DRF's client.

The live proof, as the CLI sends each request, is tests/osmo_cli/test_token_user_login.py.
"""

from __future__ import annotations

import pytest

from access.models import APIToken, AuditEvent, Identity
from tests.access.conftest import api, holder
from tests.factories import TokenFactory, UserFactory, WorkflowFactory
from tests.queries import assert_constant_queries

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin(team_role):
    return holder("osmo-admin", username="root-admin")


def test_create_get_and_list_answer_osmos_shapes(admin):
    client = api(admin)
    created = client.post(
        "/api/auth/user", {"id": "ana@example.com", "roles": ["osmo-user", "osmo-team"]}, format="json"
    )
    assert created.status_code == 200, created.json()
    body = created.json()
    assert (body["id"], body["created_by"], body["external_id"], body["last_seen_at"]) == (
        "ana@example.com",
        "root-admin",
        None,
        None,
    )
    assert body["created_at"][:4].isdigit() and "T" in body["created_at"]
    shown = client.get("/api/auth/users/ana@example.com").json()
    assert [(r["role_name"], r["assigned_by"]) for r in shown["roles"]] == [
        ("osmo-team", "root-admin"),
        ("osmo-user", "root-admin"),
    ]
    assert all("T" in r["assigned_at"] for r in shown["roles"])
    listed = client.get("/api/auth/user", {"count": 100}).json()
    assert set(listed) == {"total_results", "start_index", "items_per_page", "users"}
    assert listed["users"][0]["id"] == "ana@example.com"  # newest first
    assert listed["total_results"] == listed["items_per_page"] == 2 and listed["start_index"] == 1


def test_list_filters_by_prefix_and_any_role_and_pages(admin):
    holder("osmo-user", username="svc-a")
    holder("osmo-team", username="svc-b")
    holder(username="svc-c")
    client = api(admin)
    names = lambda **q: [u["id"] for u in client.get("/api/auth/user", q).json()["users"]]  # noqa: E731
    assert sorted(names(id_prefix="svc-")) == ["svc-a", "svc-b", "svc-c"]
    assert sorted(names(roles=["osmo-user", "osmo-team"])) == ["svc-a", "svc-b"]  # roles=a&roles=b: ANY
    assert sorted(names(id_prefix="svc-", roles="osmo-team")) == ["svc-b"]
    page = client.get("/api/auth/user", {"id_prefix": "svc-", "count": 2, "start_index": 2}).json()
    assert (page["total_results"], page["items_per_page"], page["start_index"]) == (3, 2, 2)
    assert client.get("/api/auth/user", {"count": "many"}).json()["field"] == "count"


def test_list_runs_a_constant_number_of_queries(admin):
    client = api(admin)

    def more_users():
        for _ in range(5):
            user = holder("osmo-user")
            TokenFactory(user=user)

    assert_constant_queries(lambda: client.get("/api/auth/user"), grow=more_users)


def test_update_grants_and_removes_roles(admin):
    holder("osmo-user", username="bob")
    client = api(admin)
    granted = client.post("/api/auth/user/bob/roles", {"role_name": "osmo-team"}, format="json")
    assert granted.status_code == 200
    assert (granted.json()["user_id"], granted.json()["role_name"], granted.json()["assigned_by"]) == (
        "bob",
        "osmo-team",
        "root-admin",
    )
    again = client.post("/api/auth/user/bob/roles", {"role_name": "osmo-team"}, format="json")
    assert again.status_code == 200 and again.json()["assigned_at"] == granted.json()["assigned_at"]  # idempotent
    assert client.delete("/api/auth/user/bob/roles/osmo-user").status_code == 200
    listed = client.get("/api/auth/user/bob/roles").json()
    assert [r["role_name"] for r in listed["roles"]] == ["osmo-team"] and listed["user_id"] == "bob"
    unknown = client.post("/api/auth/user/bob/roles", {"role_name": "osmo-nope"}, format="json")
    assert unknown.status_code == 400 and unknown.json()["value"] == "osmo-nope"
    assert client.post("/api/auth/user/ghost/roles", {"role_name": "osmo-team"}).status_code == 404


def test_external_id_links_the_identity_providers_subject(admin, settings):
    holder(username="carol")
    holder(username="dave")
    client = api(admin)
    settings.OIDC_ISSUER = ""
    off = client.patch("/api/auth/users/carol", {"external_id": "kc-123"}, format="json")
    assert off.status_code == 400 and "OIDC_ISSUER" in off.json()["reason"]
    settings.OIDC_ISSUER = "https://idp.example.test/realms/osmo"
    linked = client.patch("/api/auth/users/carol", {"external_id": "kc-123"}, format="json")
    assert linked.status_code == 200 and linked.json()["external_id"] == "kc-123"
    assert Identity.objects.get(user__username="carol").issuer == "https://idp.example.test/realms/osmo"
    taken = client.patch("/api/auth/users/dave", {"external_id": "kc-123"}, format="json")
    assert taken.status_code == 409 and "carol" in taken.json()["reason"]
    made = client.post("/api/auth/users", {"id": "erin", "external_id": "kc-456"}, format="json")
    assert made.json()["external_id"] == "kc-456"


def test_create_refusals_name_the_field(admin):
    client = api(admin)
    assert client.post("/api/auth/user", {"id": "bad/name"}, format="json").json()["field"] == "id"
    assert client.post("/api/auth/user", {"id": "-dash"}, format="json").json()["field"] == "id"
    unknown = client.post("/api/auth/user", {"id": "frank", "roles": ["osmo-nope"]}, format="json")
    assert unknown.status_code == 400 and unknown.json()["value"] == "osmo-nope"
    assert not UserFactory._meta.model.objects.filter(username="frank").exists()  # nothing half-written
    client.post("/api/auth/user", {"id": "frank"}, format="json")
    assert client.post("/api/auth/user", {"id": "frank"}, format="json").status_code == 409


def test_delete_removes_the_user_or_deactivates_one_with_workflows(admin):
    plain = holder("osmo-user", username="gone")
    TokenFactory(user=plain)
    busy = holder("osmo-user", username="busy")
    WorkflowFactory(submitted_by=busy)
    busy_token = TokenFactory(user=busy)
    client = api(admin)
    answer = client.delete("/api/auth/user/gone")
    assert answer.status_code == 200 and answer.json() == {"id": "gone", "deleted": True, "deactivated": False}
    assert client.get("/api/auth/user/gone").status_code == 404
    answer = client.delete("/api/auth/user/busy")
    assert answer.json() == {"id": "busy", "deleted": False, "deactivated": True}
    busy.refresh_from_db()
    assert not busy.is_active and not busy.groups.exists() and not APIToken.objects.filter(user=busy).exists()
    assert api(secret=busy_token.secret).get("/api/pool").status_code == 401
    assert client.get("/api/auth/user/busy").status_code == 404
    assert "busy" not in [u["id"] for u in client.get("/api/auth/user").json()["users"]]
    assert client.post("/api/auth/user", {"id": "busy"}, format="json").status_code == 409
    assert client.delete("/api/auth/user/root-admin").status_code == 400  # not yourself
    assert AuditEvent.objects.filter(action="user.delete", target="user/busy").exists()


def test_admin_token_paths_act_on_the_named_user(admin):
    owner = holder("osmo-user", "osmo-team", username="hank")
    client = api(admin)
    path = "/api/auth/user/hank/access_token"
    created = client.post(f"{path}/ci?expires_at=2099-01-01&roles=osmo-team", format="json")
    assert created.status_code == 400 and created.json()["field"] == "expires_at"  # beyond the maximum
    created = client.post(f"{path}/ci?roles=osmo-user&roles=osmo-team&description=CI")
    assert created.status_code == 200 and created.json().startswith("pp_")
    token = APIToken.objects.get(user=owner, name="ci")
    assert sorted(r.name for r in token.roles.all()) == ["osmo-team", "osmo-user"] and token.description == "CI"
    refused = client.post(f"{path}/wide?roles=osmo-admin")  # the admin's role, not hank's
    assert refused.status_code == 400 and refused.json()["value"] == "osmo-admin"
    listed = client.get(path).json()
    assert [(t["user_name"], t["token_name"], t["roles"]) for t in listed] == [
        ("hank", "ci", ["osmo-team", "osmo-user"])
    ]
    assert client.delete(f"{path}/ci").json()["status"] == "revoked"
    assert client.get("/api/auth/user/ghost/access_token").status_code == 404
    assert api(owner).get(path).status_code == 403  # managing users' tokens is not auth:Token
