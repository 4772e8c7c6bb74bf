"""The per-process caches of token lookups and role rules (access.epoch): a request after the first pays
one epoch query, and any change, from any door or any process, is seen at the next request.

These tests run outside a wrapping transaction (`transactional_db`): inside one the caches are off.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection, transaction

from access import epoch, policy
from access.models import AccessEpoch, APIToken
from access.services import roles, tokens
from tests.access.conftest import ACTOR, api, holder
from tests.queries import captured_queries

pytestmark = pytest.mark.django_db(transaction=True)
ROOT = Path(__file__).resolve().parents[2]
TEAM_POOL = "pool/team-gpu-pool"
RULES_LOAD = 'SELECT "access_role"."name" AS "name", "access_role"."policies" AS "policies" FROM'  # policy._load


@pytest.fixture
def team_role(transactional_db):
    roles.set_pool_role("osmo-team", ACTOR)


def test_a_second_request_reads_the_epoch_instead_of_the_token_and_roles(team_role):
    user = holder("osmo-user", "osmo-team")
    client = api(secret=tokens.create(user, "ci").secret)
    assert client.get("/api/auth/access_token").status_code == 200
    with captured_queries() as second:
        assert client.get("/api/auth/access_token").status_code == 200
    epoch_reads = [q for q in second if "access_accessepoch" in q]
    assert len(epoch_reads) == 1  # read once per request, shared by the token check and the policy
    lookups = [
        q for q in second if '"access_apitoken"."token_hash" =' in q or q.startswith(RULES_LOAD)
    ]  # the token lookup, the rules load
    assert lookups == []


def test_revoking_a_token_in_another_process_is_seen_at_the_next_request(team_role):
    user = holder("osmo-user", "osmo-team")
    client = api(secret=tokens.create(user, "ci").secret)
    assert client.get("/api/auth/access_token").status_code == 200  # now cached in this process
    manage("token", "revoke", user.username, "ci")
    response = client.get("/api/auth/access_token")
    assert response.status_code == 401
    assert "revoked" in response.json()["reason"]


def test_losing_a_role_is_seen_at_once_by_sessions_and_tokens(team_role):
    user = holder("osmo-user", "osmo-team")
    token = tokens.create(user, "ci").token
    assert policy.decide(user, "workflow:Create", TEAM_POOL).allowed
    assert policy.decide(token, "workflow:Create", TEAM_POOL).allowed
    roles.update_user_roles(user, remove=["osmo-team"], actor=ACTOR)
    assert not policy.decide(user, "workflow:Create", TEAM_POOL).allowed
    assert not policy.decide(APIToken.objects.get(pk=token.pk), "workflow:Create", TEAM_POOL).allowed


def test_a_policy_edit_is_seen_at_once(team_role):
    user = holder("osmo-team")
    assert policy.decide(user, "workflow:Create", TEAM_POOL).allowed
    role = roles.resolve(["osmo-team"])[0]
    role.policies = [{"effect": "Deny", "actions": ["workflow:Create"], "resources": ["pool/team*"]}]
    role.save()
    assert not policy.decide(user, "workflow:Create", TEAM_POOL).allowed


def test_a_change_behind_djangos_back_is_seen_once_entries_expire(team_role, settings):
    user = holder("osmo-team")
    assert policy.decide(user, "workflow:Create", TEAM_POOL).allowed
    with connection.cursor() as cursor:  # raw SQL: no signal, no epoch bump
        cursor.execute("DELETE FROM auth_user_groups WHERE user_id = %s", [user.pk])
    assert policy.decide(user, "workflow:Create", TEAM_POOL).allowed  # still the cached answer
    settings.ACCESS_CACHE_SECONDS = 0
    assert not policy.decide(user, "workflow:Create", TEAM_POOL).allowed


def test_inside_a_transaction_nothing_is_cached(team_role):
    user = holder("osmo-team")
    policy.decide(user, "workflow:Create", TEAM_POOL)  # cached outside
    with transaction.atomic(), captured_queries() as inside:
        policy.decide(user, "workflow:Create", TEAM_POOL)
        policy.decide(user, "workflow:Create", TEAM_POOL)
    assert len([q for q in inside if q.startswith(RULES_LOAD)]) == 2
    assert not [q for q in inside if "access_accessepoch" in q]


def test_a_flushed_epoch_turns_caching_off_until_the_next_change(team_role):
    user = holder("osmo-team")
    AccessEpoch.objects.all().delete()
    assert epoch.current() is None
    with captured_queries() as queries:
        assert policy.decide(user, "workflow:Create", TEAM_POOL).allowed
        assert policy.decide(user, "workflow:Create", TEAM_POOL).allowed
    assert len([q for q in queries if q.startswith(RULES_LOAD)]) == 2
    roles.update_user_roles(user, remove=["osmo-team"], actor=ACTOR)
    assert epoch.current() is not None
    assert not policy.decide(user, "workflow:Create", TEAM_POOL).allowed


def test_a_login_does_not_move_the_epoch_but_deactivating_a_user_does(team_role):
    user = holder("osmo-team")
    before = epoch.current()
    user.save(update_fields=["last_login"])
    assert epoch.current() == before
    user.is_active = False
    user.save()
    assert epoch.current() != before
    assert not policy.decide(user, "workflow:Create", TEAM_POOL).allowed


def manage(*args: str) -> None:
    """Run a management command in another process, against this test's PostgreSQL database (`make test`)."""
    settings_dict = connection.settings_dict
    assert connection.vendor == "postgresql", "another process needs a database server to share this one"
    url = (
        f"postgres://{settings_dict['USER'] or ''}@{settings_dict['HOST'] or '127.0.0.1'}:"
        f"{settings_dict['PORT'] or 5432}/{settings_dict['NAME']}"
    )
    env = {**os.environ, "DATABASE_URL": url, "TEST_DATABASE_NAME": ""}
    process = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert process.returncode == 0, process.stderr
