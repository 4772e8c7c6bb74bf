"""access.policy: one decision (memoised and not), and "pools this user may use" over 1,000 pools, 20 roles."""

from __future__ import annotations

from bench.django_env import throwaway_database
from bench.harness import Row, measure

POOLS = 1000
ROLES = 20


def run() -> list[Row]:
    with throwaway_database():
        from django.contrib.auth import get_user_model
        from django.db import connection, transaction
        from django.test.utils import CaptureQueriesContext

        from access import policy, usable_pools
        from access.models import Role
        from access.services import roles
        from clusters.models import Backend
        from configs.revisions import Actor
        from pools.models import Pool

        actor = Actor(name="bench", source="cli")
        backend = Backend.objects.create(name="bench-cluster")
        Pool.objects.bulk_create([Pool(name=f"team{i % 40:02d}-pool-{i:04d}", backend=backend) for i in range(POOLS)])
        names = []
        for index in range(ROLES):
            name = f"osmo-team{index:02d}"
            roles.set_pool_role(name, actor)
            Role.objects.filter(name=name).update(
                policies=[
                    {"effect": "Allow", "actions": ["workflow:*"], "resources": [f"pool/team{index:02d}*"]},
                    {"effect": "Deny", "actions": ["workflow:Delete"], "resources": [f"pool/team{index:02d}-pool-00*"]},
                ]
            )
            names.append(name)
        user = get_user_model().objects.create_user("bench-user")
        roles.update_user_roles(user, add=[*names, "osmo-user"], actor=actor)
        resource = "pool/team07-pool-0447"

        warm = policy.Principal(user)
        warm.decide("workflow:Create", resource)
        rows = [
            measure(
                "policy decision, cached (same request)",
                lambda: warm.decide("workflow:Create", resource),
                runs=2000,
                target="≤ 50 µs",
            )
        ]

        def not_memoised():
            warm._decisions.clear()
            return warm.decide("workflow:Create", resource)

        rows.append(
            measure(
                f"policy decision, not memoised ({ROLES + 2} roles loaded)",
                not_memoised,
                runs=2000,
                note="matching only",
            )
        )
        rows.append(
            measure(
                "policy decision, new principal (rules cached: epoch query)",
                lambda: policy.Principal(user).decide("workflow:Create", resource),
                runs=300,
                note="1 query (access.epoch)",
            )
        )

        def uncached():
            with transaction.atomic():  # no access cache inside a transaction: the rules are loaded
                return policy.Principal(user).decide("workflow:Create", resource)

        rows.append(measure("policy decision, new principal (loads roles)", uncached, runs=300, note="1 query"))
        expected = len(usable_pools.allowed_pools(warm))
        with CaptureQueriesContext(connection) as queries:
            usable_pools.allowed_pools(warm)
        rows.append(
            measure(
                f"pools this user may use ({POOLS} pools, {ROLES} team roles)",
                lambda: usable_pools.allowed_pools(warm),
                runs=200,
                target="≤ 2 ms",
                note=(
                    f"{expected} pools, cached (access.usable_pools): {len(queries)} queries, the epochs (in a "
                    "request: read once, by authentication already)"
                ),
            )
        )

        def not_cached():
            with transaction.atomic():  # nothing is cached inside a transaction: the query is built and run
                return usable_pools.allowed_pools(warm)

        rows.append(
            measure(
                f"pools this user may use, not cached ({POOLS} pools, {ROLES} team roles)",
                not_cached,
                runs=200,
                note="1 query: what a request pays after a pool or access change",
            )
        )
        rows.append(
            measure(
                f"pools this user may use, new principal ({POOLS} pools)",
                lambda: usable_pools.allowed_pools(policy.Principal(user)),
                runs=200,
                note="cached: the epochs only",
            )
        )
        return rows
