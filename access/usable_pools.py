"""The pools a principal may use, cached per process: every self-service page, `GET /api/pool` and the
profile ask, and over many pools and roles the one query that answers costs milliseconds to build and run.

An answer depends on the principal's roles, rules and object permissions (the access epoch moves with any
change to them: access.epoch) and on the pool rows (the config generation moves with any write to pools:
portal.generation), both read by the request's one epoch query. Nothing is cached inside a transaction, on
SQLite (no generation), or past `ACCESS_CACHE_SECONDS` (EpochCache).
"""

from __future__ import annotations

from django.db import connection

from access import epoch, policy

_ALLOWED = epoch.EpochCache(size=1024)  # (generation, rules key, action) -> frozenset of pool names


def allowed_pools(who, action: str = policy.POOL_ACTION) -> set[str]:
    """Names of the pools `who` may use (the pool list of `GET /api/pool` and the self-service pages)."""
    subject = policy.principal(who)
    generation = None if connection.in_atomic_block else epoch.config_generation()
    if generation is None:  # nothing to key a cache on (or nothing may be cached now)
        return policy.allowed_names(subject, "pool", action)
    key = (generation, subject.rules_key(), action)
    return set(_ALLOWED.lookup(key, lambda: frozenset(policy.allowed_names(subject, "pool", action))))
