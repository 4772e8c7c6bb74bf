"""Every pool-scoped door answers the same: an unknown pool is 404 `pool_not_found` for a caller who may
submit somewhere; a pool that exists but is not the caller's is 403 where the door acts on it
(docs/workflows-api.md)."""

from __future__ import annotations

import pytest
from django.test import Client

from configs import store
from tests.workflows.conftest import CLI, api, spec


@pytest.fixture
def other_pool(pool):
    store.apply("POOL", "other", {"backend": "sim"}, CLI)  # exists; alice (batch*) may not submit to it
    return "other"


def _web(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


SUBMIT_DOORS = {
    "api submit": lambda user, name: api(user).post(
        f"/api/pool/{name}/workflow?dry_run=true", spec("s"), format="json"
    ),
    "submit page": lambda user, name: _web(user).get(f"/pools/{name}/submit/"),
    "preview": lambda user, name: _web(user).post(f"/pools/{name}/submit/preview/", {"spec": "x"}),
}


@pytest.mark.parametrize("door", sorted(SUBMIT_DOORS))
def test_submit_doors_unknown_is_404_and_not_yours_is_403(door, other_pool, alice):
    call = SUBMIT_DOORS[door]
    assert call(alice, "batch-nope").status_code == 404
    assert call(alice, other_pool).status_code == 403
    assert call(alice, "batch").status_code in (200, 400)  # hers: the door answers (a bad spec is a 400)


def test_api_codes_name_the_pool(other_pool, alice):
    unknown = api(alice).post("/api/pool/batch-nope/workflow", spec("s"), format="json").json()
    assert (unknown["code"], unknown["field"], unknown["value"]) == ("pool_not_found", "pool", "batch-nope")
    refused = api(alice).post(f"/api/pool/{other_pool}/workflow", spec("s"), format="json").json()
    assert (refused["code"], refused["value"]) == ("forbidden", "pool/other")


def test_resources_of_an_unknown_pool_is_pool_not_found(other_pool, alice):
    body = api(alice).get("/api/resources?pools=batch-nope").json()
    assert (body["code"], body["field"], body["value"]) == ("pool_not_found", "pools", "batch-nope")
    # reading a pool's capacity is pool:List, which every user holds (as OSMO): not yours is still readable
    assert api(alice).get(f"/api/resources?pools={other_pool}").status_code == 200


def test_pool_page_of_an_unknown_pool_is_404(other_pool, alice):
    assert _web(alice).get("/pools/batch-nope/").status_code == 404
    assert _web(alice).get(f"/pools/{other_pool}/").status_code == 200  # the catalog shows every pool


def test_osmo_pool_lists_leave_an_unknown_name_out(other_pool, alice):
    """`osmo pool list -p ghost`: OSMO's client prints what it gets; an unknown name is left out."""
    assert api(alice).get("/api/pool?pools=batch-nope").json() == {"pools": {}}
    assert api(alice).get("/api/pool_quota?pools=batch-nope").json()["node_sets"] == []


def test_who_may_submit_nowhere_learns_nothing(other_pool, bob):
    body = api(bob).post("/api/pool/batch-nope/workflow", spec("s"), format="json").json()
    assert body["code"] == "forbidden"
