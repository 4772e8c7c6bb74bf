"""A long-lived per-process cache (access.epoch.EpochCache(long_lived=True): the quota trees) reads an entry
again in a thread of its own once three quarters of ACCESS_CACHE_SECONDS are past and the entry is used, so the
request that uses it is answered from the cache instead of waiting for the refill; a refill equal to what it
replaces keeps the old object. Plain caches (tokens, rules) only expire.

These tests run outside a wrapping transaction: inside one the caches are off."""

from __future__ import annotations

import itertools
import logging

import pytest
from django.db import connection

from access import epoch
from quotas.services.state import cached_trees
from tests.factories import BackendFactory, NodePoolFactory, ProjectFactory, QuotaFactory
from tests.polling import wait_until

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def now(monkeypatch, settings):
    """The caches' clock, moved on by hand: `now[0] += seconds`."""
    settings.ACCESS_CACHE_SECONDS = 60
    epoch.bump(epoch.ACCESS)  # the epoch rows the caches key on
    epoch.bump(epoch.CHARGING)
    moment = [1000.0]
    monkeypatch.setattr(epoch, "clock", lambda: moment[0])
    return moment


def refreshed(cache: epoch.EpochCache, key) -> bool:
    return not cache._refreshing and cache._entries[key][1] > 1000.0


def test_an_aging_entry_is_served_at_once_and_read_again_beside_the_request(now):
    cache, reads = epoch.EpochCache(long_lived=True), itertools.count()
    assert cache.lookup("trees", lambda: next(reads)) == 0
    now[0] += 44  # under three quarters of 60 s: nothing to do
    assert cache.lookup("trees", lambda: next(reads)) == 0 and not cache._refreshing
    now[0] += 2
    assert cache.lookup("trees", lambda: next(reads)) == 0  # the cached value, without waiting for a read
    wait_until(lambda: refreshed(cache, "trees"), what="the entry read again in its thread")
    assert cache.lookup("trees", lambda: next(reads)) == 1
    now[0] += 59  # the refill restarted the entry's life
    assert cache.lookup("trees", lambda: next(reads)) == 1


def test_lookup_many_refreshes_only_the_aging_keys(now):
    cache, asked = epoch.EpochCache(long_lived=True), []

    def load(keys):
        asked.append(sorted(keys))
        return {key: f"{key}@{len(asked)}" for key in keys}

    cache.lookup_many(["a"], load)
    now[0] += 50
    assert cache.lookup_many(["a", "b"], load) == {"a": "a@1", "b": "b@2"}  # b read now, a served and refreshed
    wait_until(lambda: refreshed(cache, "a"), what="a read again")
    assert asked == [["a"], ["b"], ["a"]]
    assert cache.lookup_many(["a", "b"], load) == {"a": "a@3", "b": "b@2"}


def test_a_refill_equal_to_the_entry_keeps_the_object_memoised_on_it(now):
    cache = epoch.EpochCache(long_lived=True)
    first = cache.lookup("tree", lambda: ("vision", 8))
    now[0] += 50
    cache.lookup("tree", lambda: ("vision", 8))
    wait_until(lambda: refreshed(cache, "tree"), what="the refill")
    assert cache.lookup("tree", lambda: ("vision", 8)) is first


def test_a_plain_cache_only_expires(now):
    cache, reads = epoch.EpochCache(), itertools.count()
    cache.lookup("token", lambda: next(reads))
    now[0] += 59
    assert cache.lookup("token", lambda: next(reads)) == 0 and not cache._refreshing
    now[0] += 1
    assert cache.lookup("token", lambda: next(reads)) == 1


def test_a_refill_that_fails_is_logged_and_the_entry_expires_as_before(now, caplog):
    cache = epoch.EpochCache(long_lived=True)
    cache.lookup("trees", lambda: "kept")

    def broken():
        raise RuntimeError("the database said no")

    now[0] += 50
    with caplog.at_level(logging.WARNING, logger="access.epoch"):
        assert cache.lookup("trees", broken) == "kept"
        wait_until(lambda: not cache._refreshing, what="the failed refill to end")
    assert "refreshing 1 cache entries ahead of their expiry failed" in caplog.text
    now[0] += 10
    assert cache.lookup("trees", lambda: "read again") == "read again"


def test_a_quota_changed_in_sql_reaches_the_cached_tree_through_the_thread(now):
    """The quota trees, through the portal's own cache: a change behind the portal's back moves no epoch; the
    refill ahead of expiry reads it, with the thread's own connection."""
    node_pool = NodePoolFactory(backend=BackendFactory())
    quota = QuotaFactory(node_pool=node_pool, project=ProjectFactory(name="vision"), deserved=8)

    def deserved() -> int:
        trees, _, _ = cached_trees([node_pool])
        return {team.name: team.quotas["gpu"].deserved for team in trees[node_pool.pk].projects}["vision"]

    assert deserved() == 8
    with connection.cursor() as cursor:
        cursor.execute("UPDATE quotas_quota SET deserved = 12 WHERE id = %s", [quota.pk])
    assert deserved() == 8  # cached: no epoch moved
    now[0] += 50
    assert deserved() == 8  # served from the cache, read again beside
    wait_until(lambda: deserved() == 12, what="the refill to read the change")
