""" "Pools I may use" is cached per process under the access epoch and the config generation: the next request
of the same principal lists them without the query, and a new pool, a changed role, a token's own role subset
or a revoked role is seen by the next request. Committed data, as a server has it (no test transaction)."""

from __future__ import annotations

import pytest

from access.services import roles
from tests.access.conftest import ACTOR, allow, api, holder, role
from tests.factories import PoolFactory, TokenFactory
from tests.queries import captured_queries

pytestmark = pytest.mark.django_db(transaction=True)
POOLS_QUERY = 'FROM "pools_pool"'


def listed(client) -> tuple[set[str], list[str]]:
    with captured_queries() as queries:
        response = client.get("/api/pool?all_pools=false")  # the pools the caller may use
    assert response.status_code == 200, response.content
    return set(response.json()["pools"]), [q for q in queries if POOLS_QUERY in q and '"pools_pool"."name"' in q]


@pytest.fixture
def team(db):
    for name in ("team-a", "team-b", "other"):
        PoolFactory(name=name)
    role("osmo-team", allow(["workflow:*"], ["pool/team*"]))
    role("osmo-other", allow(["workflow:*"], ["pool/other"]))
    roles.ensure_builtin_roles()  # osmo-user: pool:List
    return holder("osmo-team", "osmo-user", username="alice")


def test_the_next_request_lists_the_pools_without_asking_the_database_again(team):
    client = api(team)
    first, asked = listed(client)
    again, asked_again = listed(client)
    assert first == again == {"team-a", "team-b"}
    assert len(asked_again) == len(asked) - 1  # the names of the usable pools: from the cache


def test_a_new_pool_a_changed_role_and_a_revoked_role_are_seen_at_once(team):
    client = api(team)
    assert listed(client)[0] == {"team-a", "team-b"}
    PoolFactory(name="team-c")  # the config generation moves
    assert listed(client)[0] == {"team-a", "team-b", "team-c"}
    roles.update_user_roles(team, add=["osmo-other"], actor=ACTOR)  # the access epoch moves
    assert listed(client)[0] == {"team-a", "team-b", "team-c", "other"}
    roles.update_user_roles(team, remove=["osmo-team"], actor=ACTOR)
    assert listed(client)[0] == {"other"}


def test_a_token_lists_only_what_its_own_roles_give(team):
    roles.update_user_roles(team, add=["osmo-other"], actor=ACTOR)
    token = TokenFactory(user=team)
    token.roles.set(roles_named("osmo-other", "osmo-user"))
    assert listed(api(team))[0] == {"team-a", "team-b", "other"}
    assert listed(api(secret=token.secret))[0] == {"other"}  # not the user's answer from the cache
    assert listed(api(team))[0] == {"team-a", "team-b", "other"}


def roles_named(*names: str):
    from access.models import Role

    return list(Role.objects.filter(name__in=names))
