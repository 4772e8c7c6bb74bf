"""Access in the admin console: who gets in, role and user pages, explain, audit and token pages."""

from __future__ import annotations

import pytest
from django.test import RequestFactory
from django.urls import reverse

from access.models import APIToken, AuditEvent, Role
from access.services import roles
from configs.models import Revision
from tests.access.conftest import ACTOR, allow, deny, holder, role
from tests.factories import PoolFactory, TokenFactory, UserFactory
from tests.queries import assert_constant_queries

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_login(client):
    client.force_login(holder("osmo-admin", username="console-admin"))
    return client


def test_researchers_sign_in_at_the_admin_login_and_land_on_home(client, robotics_role):
    user = holder("osmo-user", "osmo-robotics", username="rita")
    user.set_password("pw-rita-123")
    user.save()
    PoolFactory(name="robotics-training")
    response = client.post(
        reverse("admin:login"), {"username": "rita", "password": "pw-rita-123", "next": "/admin/"}, follow=True
    )
    assert response.redirect_chain[-1][0] == "/" and response.status_code == 200
    assert response.wsgi_request.user.username == "rita"
    assert AuditEvent.objects.filter(action="access.denied", target="admin:Access on (global)").exists()


def test_a_superuser_without_osmo_admin_is_not_let_in(client):
    superuser = UserFactory(is_superuser=True, is_staff=True)
    roles.update_user_roles(superuser, remove=["osmo-admin"], actor=ACTOR)
    client.force_login(superuser)
    assert client.get(reverse("admin:index")).status_code == 302
    assert client.get(reverse("admin:pools_pool_changelist")).status_code == 302


def test_a_config_role_gets_the_console_with_only_its_types(client):
    role("template-editors", allow(["config:Read", "config:Update"], ["config/pod_template"]))
    client.force_login(holder("template-editors"))
    index = client.get(reverse("admin:index"))
    assert index.status_code == 200
    assert b"/admin/pools/podtemplate/" in index.content and b"/admin/clusters/backend/" not in index.content
    assert client.get(reverse("admin:pools_podtemplate_add")).status_code == 200
    assert client.get(reverse("admin:clusters_backend_changelist")).status_code == 403


def test_a_deny_removes_one_type_from_a_config_role(client):
    role("configs-but-roles", allow(["config:*"], ["config/*"]), deny(["config:*"], ["config/role"]))
    client.force_login(holder("configs-but-roles"))
    assert client.get(reverse("admin:pools_pool_changelist")).status_code == 200
    assert client.get(reverse("admin:access_role_changelist")).status_code == 403


def test_role_admin_creates_a_role_from_yaml_and_records_history(admin_login):
    response = admin_login.post(
        reverse("admin:access_role_add"),
        {
            "name": "osmo-vision",
            "description": "vision",
            "policies": "- effect: Allow\n  actions: [workflow:*]\n  resources: [pool/vision*]\n",
            "sync_mode": "import",
            "external_roles": "vision-users, /corp/vision",
        },
        follow=True,
    )
    assert response.status_code == 200
    role_obj = Role.objects.get(name="osmo-vision")
    assert role_obj.policies == [{"effect": "Allow", "actions": ["workflow:*"], "resources": ["pool/vision*"]}]
    assert role_obj.external_roles == ["/corp/vision", "vision-users"]
    assert Revision.objects.get(config_type="ROLE", name="osmo-vision").author_name == "console-admin (admin)"
    event = AuditEvent.objects.get(action="config.update", target="ROLE osmo-vision")
    assert (event.source, event.remote_addr) == ("admin", "127.0.0.1")


def test_role_admin_takes_a_change_description(admin_login):
    response = admin_login.post(
        reverse("admin:access_role_add"),
        {"name": "osmo-lab", "sync_mode": "import", "policies": "[]", "change_description": "for the lab's robots"},
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    assert Revision.objects.get(config_type="ROLE", name="osmo-lab").description == "for the lab's robots"


def test_role_admin_converts_legacy_actions_with_a_warning(admin_login):
    response = admin_login.post(
        reverse("admin:access_role_add"),
        {
            "name": "osmo-shared",
            "sync_mode": "import",
            "policies": '[{"actions": [{"base": "http", "path": "/api/pool/shared*", "method": "post"}]}]',
        },
        follow=True,
    )
    assert b"6.0 path actions converted" in response.content
    assert Role.objects.get(name="osmo-shared").policies[0]["resources"] == ["pool/shared*"]


def test_role_admin_shows_errors_on_the_field(admin_login):
    response = admin_login.post(
        reverse("admin:access_role_add"), {"name": "bad", "sync_mode": "import", "policies": "- actions: [nope]\n"}
    )
    assert response.status_code == 200
    assert "must look like workflow:Create" in response.context["adminform"].form.errors["policies"][0]
    assert not Role.objects.filter(name="bad").exists()


def test_role_admin_refuses_to_change_an_immutable_role(admin_login):
    admin_role = Role.objects.get(name="osmo-admin")
    response = admin_login.post(
        reverse("admin:access_role_change", args=[admin_role.pk]),
        {"description": "x", "policies": "[]", "immutable": "on", "sync_mode": "import"},
    )
    assert response.status_code == 200
    assert "built in" in str(response.context["adminform"].form.errors)
    assert Role.objects.get(name="osmo-admin").policies[0]["actions"] == ["*:*"]


def test_builtin_roles_have_no_delete_button_and_cannot_be_deleted(admin_login):
    builtin = Role.objects.get(name="osmo-user")
    page = admin_login.get(reverse("admin:access_role_change", args=[builtin.pk]))
    assert b"/delete/" not in page.content
    assert admin_login.post(reverse("admin:access_role_delete", args=[builtin.pk]), {"post": "yes"}).status_code == 403
    assert Role.objects.filter(name="osmo-user").exists()


def test_user_admin_changes_roles_through_the_service(admin_login, team_role):
    user = holder("osmo-user", username="uma")
    TokenFactory(user=user, roles=roles.resolve(["osmo-user"]))
    page = admin_login.get(reverse("admin:auth_user_change", args=[user.pk]))
    assert page.status_code == 200 and reverse("admin:access_explain").encode() + b"?user=uma" in page.content
    response = admin_login.post(
        reverse("admin:auth_user_change", args=[user.pk]),
        {
            "username": "uma",
            "email": "",
            "first_name": "",
            "last_name": "",
            "is_active": "on",
            "roles": [str(team_role.pk)],
            "last_login_0": "",
            "last_login_1": "",
            "date_joined_0": "2026-01-01",
            "date_joined_1": "00:00:00",
        },
    )
    assert response.status_code == 302, response.context["adminform"].form.errors
    assert roles.user_role_names(user) == ["osmo-team"]
    assert list(APIToken.objects.get(user=user).roles.all()) == []
    assert set(AuditEvent.objects.filter(target="user/uma", source="admin").values_list("action", flat=True)) == {
        "role.grant",
        "role.revoke",
    }


def test_user_changelist_lists_roles_in_constant_queries(admin_login, team_role):
    url = reverse("admin:auth_user_changelist")
    for _ in range(3):
        holder("osmo-team")
    admin_login.get(url)
    assert b"osmo-team" in admin_login.get(url).content

    def add_users():
        for _ in range(10):
            holder("osmo-team", "osmo-user")

    assert_constant_queries(lambda: admin_login.get(url), grow=add_users)


def test_explain_page_names_role_and_policy(admin_login, team_role):
    holder("osmo-team", username="tess")
    pool = PoolFactory(name="team-gpu-pool")
    pool_page = admin_login.get(reverse("admin:pools_pool_change", args=[pool.pk]))
    assert reverse("admin:access_explain").encode() + b"?pool=team-gpu-pool" in pool_page.content
    page = admin_login.get(reverse("admin:access_explain"), {"user": "tess", "pool": "team-gpu-pool"})
    assert page.status_code == 200
    assert page.context["result"].because == [
        "role osmo-team policy #1 (Allow workflow:* on pool/team*) allows workflow:Create on pool/team-gpu-pool"
    ]
    denied = admin_login.get(reverse("admin:access_explain"), {"user": "tess", "pool": "myteam-cluster-01"})
    assert denied.context["result"].allowed is False and b"may not" in denied.content
    unknown = admin_login.get(reverse("admin:access_explain"), {"user": "ghost", "pool": "x"})
    assert "no user named 'ghost'" in unknown.context["error"]


def test_audit_admin_is_read_only_and_filterable(admin_login):
    holder("osmo-user", username="vic")
    listing = admin_login.get(reverse("admin:access_auditevent_changelist"), {"action": "role.grant"})
    assert listing.status_code == 200 and b"user/vic" in listing.content
    assert admin_login.get(reverse("admin:access_auditevent_changelist"), {"q": "vic"}).status_code == 200
    event = AuditEvent.objects.first()
    assert admin_login.get(reverse("admin:access_auditevent_add")).status_code == 403
    page = admin_login.get(reverse("admin:access_auditevent_change", args=[event.pk]))
    assert page.status_code == 200 and b'name="_save"' not in page.content


def test_token_admin_revokes(admin_login):
    token = TokenFactory(user=holder("osmo-user"))
    response = admin_login.post(
        reverse("admin:access_apitoken_changelist"), {"action": "revoke", "_selected_action": [token.pk]}
    )
    assert response.status_code == 302
    token.refresh_from_db()
    assert token.revoked_at is not None
    assert AuditEvent.objects.filter(action="token.revoke", source="admin").exists()


def test_revision_list_shows_only_readable_types(client):
    from configs import store

    store.apply("POD_TEMPLATE", "t", {"spec": {}}, ACTOR)
    store.apply("BACKEND", "c", {}, ACTOR)
    role("backend-readers", allow(["config:Read"], ["config/backend"]))
    client.force_login(holder("backend-readers"))
    page = client.get(reverse("admin:configs_revision_changelist"))
    assert [r.config_type for r in page.context["cl"].result_list] == ["BACKEND"]
    revision = Revision.objects.get(config_type="POD_TEMPLATE")
    hidden = client.get(reverse("admin:configs_revision_change", args=[revision.pk]))
    assert (hidden.status_code, hidden["Location"]) == (302, "/admin/")  # as if it did not exist


def test_access_pages_render(admin_login):
    token = TokenFactory(user=holder("osmo-user"))
    role_obj = Role.objects.get(name="osmo-user")
    for url in (
        reverse("admin:access_role_add"),
        reverse("admin:auth_user_add"),
        reverse("admin:access_role_change", args=[role_obj.pk]),
        reverse("admin:access_apitoken_change", args=[token.pk]),
        reverse("admin:access_explain"),
        reverse("admin:index"),
    ):
        assert admin_login.get(url).status_code == 200, url


def test_signed_in_non_admins_follow_a_safe_next_outside_the_admin(client):
    client.force_login(holder("osmo-user"))
    assert client.get(reverse("admin:login"), {"next": "/tokens/"})["Location"] == "/tokens/"
    assert client.get(reverse("admin:login"), {"next": "https://evil.example/"})["Location"] == "/"
    assert client.get(reverse("admin:login"), {"next": "/admin/pools/pool/"})["Location"] == "/"


def test_fallback_home_page_shows_roles_and_pools(client, robotics_role):
    from access.views import home

    PoolFactory(name="robotics-training")
    request = RequestFactory().get("/")
    request.user = holder("osmo-user", "osmo-robotics", username="hugo")
    page = home(request).content
    assert b"You are signed in as <strong>hugo</strong>; your roles: osmo-default, osmo-robotics, osmo-user" in page
    assert b"robotics-training" in page
