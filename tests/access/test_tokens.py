"""Personal API tokens: creation (secret once, hashed, capped expiry, role subset), bearer authentication,
expiry and revocation, the REST endpoints, the CLI and the self-service page."""

from __future__ import annotations

import hashlib
import json
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.utils import timezone

from access.models import APIToken, AuditEvent
from access.services import roles, tokens
from configs.errors import ConfigError
from tests.access.conftest import ACTOR, api, holder
from tests.factories import TokenFactory

pytestmark = pytest.mark.django_db
ENVELOPE = {"code", "field", "value", "reason", "error_code", "message"}


def test_create_stores_only_a_hash_and_shows_the_secret_once(team_role):
    user = holder("osmo-user", "osmo-team")
    created = tokens.create(user, "laptop", roles=["osmo-team"], actor=ACTOR)
    token = APIToken.objects.get(user=user, name="laptop")
    assert created.secret.startswith("pp_") and len(created.secret) > 40
    assert token.token_hash == hashlib.sha256(created.secret.encode()).hexdigest()
    assert created.secret not in json.dumps(tokens.describe(token))
    assert [r.name for r in token.roles.all()] == ["osmo-team"]
    assert set(created.as_dict()) == {"name", "token", "expires"}
    assert AuditEvent.objects.filter(action="token.create", target=f"user/{user.username}").exists()


def test_default_roles_are_all_of_the_owners(team_role):
    user = holder("osmo-user", "osmo-team")
    created = tokens.create(user, "all")
    assert sorted(r.name for r in created.token.roles.all()) == ["osmo-team", "osmo-user"]


def test_roles_must_be_a_subset_of_the_owners(team_role):
    user = holder("osmo-user")
    with pytest.raises(ConfigError) as error:
        tokens.create(user, "t", roles=["osmo-team"])
    assert (error.value.field, error.value.value) == ("roles", "osmo-team")
    with pytest.raises(ConfigError) as error:
        tokens.create(user, "t", roles=["osmo-admin"])
    assert error.value.value == "osmo-admin"


def test_a_token_can_only_issue_tokens_within_its_own_subset(team_role):
    owner = holder("osmo-user", "osmo-team")
    narrow = TokenFactory(user=owner, roles=[roles.resolve(["osmo-user"])[0]])
    with pytest.raises(ConfigError):
        tokens.create(owner, "wider", roles=["osmo-team"], issuer=narrow)
    assert [r.name for r in tokens.create(owner, "same", issuer=narrow).token.roles.all()] == ["osmo-user"]


@pytest.mark.parametrize(
    ("expires", "ok"),
    [
        (None, True),
        ("30d", True),
        ("90d", True),
        ("91d", False),
        ("2000-01-01", False),
        ("soon", False),
        ("99999999999999999999d", False),  # timedelta overflowed: a 500
        ("1000000000d", False),
        ("\u00b2d", False),
        ("9999-12-31", False),
    ],
)
def test_expiry_is_capped(expires, ok, settings):
    settings.TOKEN_MAX_LIFETIME_DAYS = 90
    user = holder("osmo-user")
    if ok:
        token = tokens.create(user, "t", expires=expires).token
        assert token.expires_at <= timezone.now() + timedelta(days=90, minutes=1)
    else:
        with pytest.raises(ConfigError) as error:
            tokens.create(user, "t", expires=expires)
        assert error.value.field == "expires_at"


def test_expiry_as_a_date_is_midnight_utc():
    day = (timezone.now() + timedelta(days=10)).date()
    token = tokens.create(holder("osmo-user"), "t", expires=day.isoformat()).token
    assert token.expires_at.isoformat() == f"{day.isoformat()}T00:00:00+00:00"


def test_the_cap_follows_the_setting(settings):
    settings.TOKEN_MAX_LIFETIME_DAYS = 7
    with pytest.raises(ConfigError) as error:
        tokens.create(holder("osmo-user"), "t", expires="8d")
    assert "7 days" in error.value.reason


def test_bearer_token_authenticates_and_acts_with_its_roles(seed_pools, team_role):
    owner = holder("osmo-user", "osmo-team")
    created = tokens.create(owner, "ci", roles=["osmo-user"])
    response = api(secret=created.secret).get("/api/pool?all_pools=false")
    assert response.status_code == 200
    assert set(response.json()["pools"]) == {"default"}  # osmo-user's pool; osmo-team is not in the token
    full = tokens.create(owner, "full")
    assert set(api(secret=full.secret).get("/api/pool?all_pools=false").json()["pools"]) == {
        "teamcluster01",
        "team-cluster-02",
        "team-gpu-pool",
        "default",
    }
    assert APIToken.objects.get(pk=full.token.pk).last_used_at is not None


@pytest.mark.parametrize(
    ("state", "reason"),
    [
        ("expired", "expired at"),
        ("revoked", "was revoked"),
        ("unknown", "unknown token"),
        ("inactive", "inactive"),
        ("garbage", "unknown token"),
    ],
)
def test_unusable_tokens_answer_401_with_the_envelope(state, reason):
    owner = holder("osmo-user")
    token = TokenFactory(user=owner)
    secret = token.secret
    if state == "expired":
        APIToken.objects.filter(pk=token.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    elif state == "revoked":
        tokens.revoke(owner, token.name)
    elif state == "unknown":
        secret = "pp_not-a-real-token"
    elif state == "inactive":
        owner.is_active = False
        owner.save()
    elif state == "garbage":
        secret = "something-else"
    response = api(secret=secret).get("/api/pool")
    assert response.status_code == 401
    assert set(response.json()) == ENVELOPE and reason in response.json()["reason"]
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_token_api_create_list_show_revoke(team_role):
    user = holder("osmo-user", "osmo-team")
    client = api(user)
    created = client.post("/api/auth/access_token/laptop?expires_at=30d&roles=osmo-team&description=my+laptop")
    assert created.status_code == 200, created.json()
    secret = created.json()  # OSMO's answer: the secret as a JSON string
    assert isinstance(secret, str) and secret.startswith("pp_")
    listed = client.get("/api/auth/access_token").json()
    assert [(t["name"], t["status"]) for t in listed] == [("laptop", "active")]
    assert secret not in json.dumps(listed) and listed[0]["prefix"] == secret[:10]
    assert (listed[0]["token_name"], listed[0]["description"], listed[0]["roles"]) == (
        "laptop",
        "my laptop",
        ["osmo-team"],
    )
    assert client.get("/api/auth/access_token/laptop").json()["roles"] == ["osmo-team"]
    revoked = client.delete("/api/auth/access_token/laptop").json()
    assert revoked["status"] == "revoked" and revoked["expires_at"] < revoked["expires"]  # stopped working now
    assert api(secret=secret).get("/api/auth/access_token").status_code == 401
    again = client.post("/api/auth/access_token/laptop", {"roles": ["osmo-user"]}, format="json")
    assert again.status_code == 200  # a revoked token's name can be reused


def test_token_api_errors_name_the_role_and_the_name():
    client = api(holder("osmo-user"))
    refused = client.post("/api/auth/access_token/x", {"roles": ["osmo-admin"]}, format="json")
    assert refused.status_code == 400
    assert (refused.json()["field"], refused.json()["value"]) == ("roles", "osmo-admin")
    client.post("/api/auth/access_token/dup", format="json")
    duplicate = client.post("/api/auth/access_token/dup", format="json")
    assert duplicate.status_code == 409 and duplicate.json()["field"] == "name"
    assert client.get("/api/auth/access_token/ghost").status_code == 404
    assert client.post("/api/auth/access_token/bad%20name").json()["field"] == "name"


def test_token_cli(team_role):
    holder("osmo-user", "osmo-team", username="carol")
    out = StringIO()
    call_command(
        "token",
        "create",
        "carol",
        "ci",
        "--roles",
        "osmo-team",
        "--expires",
        "10d",
        "--format",
        "json",
        stdout=out,
        stderr=StringIO(),
    )
    created = json.loads(out.getvalue())
    assert set(created) == {"name", "token", "expires"} and created["name"] == "ci"
    out = StringIO()
    call_command("token", "list", "carol", "--format", "json", stdout=out)
    assert [(t["name"], t["roles"], t["status"]) for t in json.loads(out.getvalue())] == [
        ("ci", ["osmo-team"], "active")
    ]
    call_command("token", "revoke", "carol", "ci", stdout=StringIO())
    assert api(secret=created["token"]).get("/api/pool").status_code == 401


def test_tokens_page_creates_shows_once_and_revokes(client):
    user = holder("osmo-user")
    client.force_login(user)
    page = client.get("/tokens/")
    assert page.status_code == 200 and b"No tokens yet." in page.content
    created = client.post("/tokens/", {"name": "web", "roles": ["osmo-user"]})
    secret = created.context["created"].secret
    assert secret.encode() in created.content
    listing = client.get("/tokens/")
    assert secret.encode() not in listing.content and b"web" in listing.content
    assert client.post("/tokens/web/revoke").status_code == 302
    assert APIToken.objects.get(name="web").revoked_at is not None


def test_tokens_page_needs_sign_in_and_auth_token(client):
    assert client.get("/tokens/").status_code == 302
    client.force_login(holder())
    page = client.get("/tokens/")
    assert b"do not allow API tokens" in page.content
    client.post("/tokens/", {"name": "x"})
    assert not APIToken.objects.exists()
    assert AuditEvent.objects.filter(action="access.denied", source="page").exists()


def test_tokens_page_writes_times_for_people_and_offers_a_copy_button(client):
    """Human times ("in 2 days", "3 hours ago") with the exact time in a title; a Copy button for the new
    token's secret; a Revoke button per active token, labelled with its name."""
    from datetime import timedelta

    from django.utils import timezone

    user = holder("osmo-user")
    client.force_login(user)
    created = client.post("/tokens/", {"name": "laptop", "roles": ["osmo-user"]}).content.decode()
    assert 'data-copy="#new-token"' in created and 'id="new-token"' in created
    now = timezone.now()
    APIToken.objects.filter(name="laptop").update(
        expires_at=now + timedelta(days=2, minutes=5), last_used_at=now - timedelta(hours=3, minutes=1)
    )
    page = client.get("/tokens/").content.decode()
    token = APIToken.objects.get(name="laptop")
    assert f'title="{token.expires_at.isoformat()}">in 2\xa0days' in page
    assert f'title="{token.last_used_at.isoformat()}">3\xa0hours, 1\xa0minute ago' in page
    assert 'aria-label="Revoke laptop"' in page and "Name:" not in page  # the pages' own form style
