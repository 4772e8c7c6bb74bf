"""Object rights (django-guardian, read only by `access.policy`): a pool's owners edit that pool's config
without an admin role; granted and revoked on the pool's admin page; shown by `access explain`."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from guardian.shortcuts import assign_perm

from access import actions, policy
from access.models import AuditEvent
from access.services import object_rights
from pools.models import Platform, Pool
from tests.access.conftest import ACTOR, holder
from tests.factories import PlatformFactory, PoolFactory

pytestmark = pytest.mark.django_db

UPDATE_POOL = (actions.CONFIG_UPDATE, actions.config("pool"))


@pytest.fixture
def pools(db):
    return PoolFactory(name="vision-h100"), PoolFactory(name="speech-a100")


def owner_right():
    return next(right for right in policy.object_rights_of(Pool) if not right.via)


def test_an_owner_may_update_only_their_pool(pools):
    mine, other = pools
    owner = holder("osmo-user", username="olga")
    assert not policy.decide(owner, *UPDATE_POOL, obj=mine)
    assign_perm("pools.change_pool", owner, mine)
    subject = policy.principal(owner)  # a fresh principal: rights are loaded once per principal
    decision = policy.decide(subject, *UPDATE_POOL, obj=mine)
    assert decision.allowed and "object right pools.change_pool allows config:Update" in decision.because[0]
    assert not policy.decide(subject, *UPDATE_POOL, obj=other)
    assert not policy.decide(subject, *UPDATE_POOL)  # without the row: roles only
    assert not policy.decide(subject, actions.WORKFLOW_CREATE, obj=mine)  # config actions only
    assert policy.admin_access(subject).allowed


def test_a_role_deny_wins_over_an_object_right(pools):
    from tests.access.conftest import deny, role

    role("no-pool-config", deny([actions.CONFIG_UPDATE], ["config/pool"]))
    owner = holder("no-pool-config")
    assign_perm("pools.change_pool", owner, pools[0])
    assert not policy.decide(owner, *UPDATE_POOL, obj=pools[0])


def test_restrict_adds_the_owned_rows_in_one_query(pools):
    mine, other = pools
    PlatformFactory(pool=mine, name="h100")
    PlatformFactory(pool=other, name="a100")
    owner = holder("osmo-user")
    assign_perm("pools.change_pool", owner, mine)
    subject = policy.principal(owner)
    subject.roles  # noqa: B018  (loaded once per request, counted elsewhere)
    with CaptureQueriesContext(connection) as queries:
        names = list(policy.restrict(Pool.objects.all(), subject, actions.CONFIG_READ).values_list("name", flat=True))
        platforms = list(
            policy.restrict(Platform.objects.all(), subject, actions.CONFIG_READ).values_list("pool__name", flat=True)
        )
    assert names == ["vision-h100"] and platforms == ["vision-h100"]  # platforms: `via="pool"`
    assert len(queries) == 3  # the object rights once, then one query per list


def test_object_rights_follow_a_group(pools):
    from django.contrib.auth.models import Group

    team = Group.objects.create(name="vision-owners")
    owner = holder("osmo-user")
    owner.groups.add(team)
    assign_perm("pools.change_pool", team, pools[0])
    assert policy.decide(owner, *UPDATE_POOL, obj=pools[0]).allowed


def test_a_token_carries_roles_only(pools):
    from tests.factories import TokenFactory

    owner = holder("osmo-user")
    assign_perm("pools.change_pool", owner, pools[0])
    token = TokenFactory(user=owner)
    assert not policy.decide(token, *UPDATE_POOL, obj=pools[0])


def test_explain_shows_object_rights(pools, capsys):
    owner = holder("osmo-user", username="olga")
    assign_perm("pools.change_pool", owner, pools[0])
    call_command("access", "explain", "olga", "vision-h100")
    out = capsys.readouterr().out
    assert "object right: olga is owner (config:Read, config:Update) of pool vision-h100" in out
    call_command("access", "explain", "olga", "vision-h100", "--format", "json")
    assert json.loads(capsys.readouterr().out)["object_rights"]
    call_command("access", "explain", "olga", "speech-a100")
    assert "object right" not in capsys.readouterr().out


# --- the admin -------------------------------------------------------------------------------------------


def test_an_owner_gets_the_console_with_only_their_pool(client, pools):
    mine, other = pools
    owner = holder("osmo-user", username="olga")
    assign_perm("pools.change_pool", owner, mine)
    client.force_login(owner)
    assert client.get(reverse("admin:index")).status_code == 200
    listing = client.get(reverse("admin:pools_pool_changelist"))
    assert listing.status_code == 200
    assert b"vision-h100" in listing.content and b"speech-a100" not in listing.content
    assert client.get(reverse("admin:pools_pool_change", args=[mine.pk])).status_code == 200
    assert client.get(reverse("admin:pools_pool_change", args=[other.pk])).status_code in (302, 404)
    assert client.get(reverse("admin:pools_pool_add")).status_code == 403  # owning a pool adds none
    assert client.get(reverse("admin:pools_podtemplate_changelist")).status_code == 403
    # an owner cannot make more owners: managing rights takes a role
    rights = reverse("admin:pools_pool_rights", args=[mine.pk])
    assert client.post(rights, {"right": 0, "username": "olga"}).status_code == 403


def test_admins_grant_and_revoke_owners_on_the_pool_page(client, pools):
    mine, _ = pools
    holder("osmo-user", username="olga")
    client.force_login(holder("osmo-admin", username="console-admin"))
    change = client.get(reverse("admin:pools_pool_change", args=[mine.pk]))
    rights = reverse("admin:pools_pool_rights", args=[mine.pk])
    assert rights.encode() in change.content
    page = client.get(rights)
    assert page.status_code == 200 and b"Nobody yet." in page.content
    assert client.post(rights, {"right": 0, "username": "olga"}).status_code == 302
    assert [user.username for user in object_rights.holders(owner_right(), mine)] == ["olga"]
    assert AuditEvent.objects.filter(
        action="access.object_right.grant", target="owner of pool vision-h100: olga"
    ).exists()
    again = client.post(rights, {"right": 0, "username": "olga"}, follow=True)
    assert b"already owner of vision-h100" in again.content
    unknown = client.post(rights, {"right": 0, "username": "nobody"}, follow=True)
    assert b"no user named" in unknown.content
    olga = object_rights.holders(owner_right(), mine)[0]
    assert client.post(rights, {"right": 0, "revoke": olga.pk}).status_code == 302
    assert object_rights.holders(owner_right(), mine) == []
    assert AuditEvent.objects.filter(action="access.object_right.revoke").exists()


def test_a_grant_is_seen_at_the_next_request(client, pools):
    """Grants move the access epoch on: a cached principal's rights are never used past a change."""
    owner = holder("osmo-user", username="olga")
    client.force_login(owner)
    assert client.get(reverse("admin:pools_pool_changelist")).status_code == 302  # not an admin (yet)
    object_rights.grant(owner_right(), pools[0], "olga", ACTOR)
    assert client.get(reverse("admin:pools_pool_changelist")).status_code == 200


def test_an_owners_pool_list_is_constant_queries(client, pools):
    owner = holder("osmo-user", username="olga")
    assign_perm("pools.change_pool", owner, pools[0])
    client.force_login(owner)
    url = reverse("admin:pools_pool_changelist")
    client.get(url)  # warm caches (content types, sessions)
    with CaptureQueriesContext(connection) as few:
        assert client.get(url).status_code == 200
    for index in range(6):
        assign_perm("pools.change_pool", owner, PoolFactory(name=f"vision-extra-{index}"))
        PoolFactory(name=f"other-{index}")
    with CaptureQueriesContext(connection) as many:
        page = client.get(url)
    assert b"vision-extra-5" in page.content and b"other-5" not in page.content
    assert len(many) == len(few)
