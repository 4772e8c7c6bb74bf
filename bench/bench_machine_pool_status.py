"""Machine pools' status over REST (issue #33): `GET /api/machine_pools?limit=500` with 500 machine pools on two
backends (ROSA in us-east-1 and Karpenter), 500 nodes in the inventory (two for every other pool, one of them not
ready), an admin's instance type and a backend's price override, so every part of the figure is computed: node
counts, the catalog, the price chain (spot from the shipped table or an estimate), placement, scheduling.

* the API: one request through Django's test client as an osmo-admin signed in (authentication, the policy,
  the FilterSet, the page's queries, the figures and the JSON rendering);
* the service alone: `pools.services.machine_pool_status.page` and `as_dict` (what the API and `machinepool
  list --format json` answer), without HTTP.

The query count of the request is in the note: it does not grow with the pools (tests assert it).
Target: ≤ 100 ms for the 500-pool page.
"""

from __future__ import annotations

from decimal import Decimal

from bench.django_env import throwaway_database
from bench.harness import Row, measure

POOLS, RUNS = 500, 25
TARGET = "≤ 100 ms"


def run() -> list[Row]:
    with throwaway_database():
        return _run()


def _run() -> list[Row]:
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from access.services import roles
    from clusters.machinepools.spec import MACHINEPOOL_LABEL
    from clusters.models import Backend, InstanceType, MachinePool, Node
    from configs.revisions import Actor
    from pools.services import machine_pool_status
    from tests.factories import UserFactory
    from usage.models import PriceOverride

    rosa = Backend.objects.create(
        name="bench-rosa", machine_provider="rosa", ocm_cluster_id="c1", rosa_topology="classic", aws_region="us-east-1"
    )
    karpenter = Backend.objects.create(name="bench-karpenter", connection="url", machine_provider="karpenter")
    InstanceType.objects.create(name="g4dn.custom", vcpu=4, memory_mib=16384, gpu_count=1, gpu_model="T4")
    PriceOverride.objects.create(backend=rosa, instance_type="m5.xlarge", on_demand_hourly=Decimal("0.15"))
    types = ("g4dn.xlarge", "m5.xlarge", "g4dn.custom", "c5.2xlarge")
    pools = [
        MachinePool(
            backend=rosa if i % 2 else karpenter,
            name=f"pool-{i:03d}",
            instance_type=types[i % len(types)],
            min_replicas=0,
            max_replicas=3 + i % 5,
            labels={"team": f"t{i % 10}"},
            taints=[{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}] if i % 2 else [],
            spot=bool(i % 3 == 0),
            availability_zones=["us-east-1a"] if i % 2 else [],
            state=MachinePool.State.READY if i % 4 else MachinePool.State.SCALING,
            provider_id=f"pool-{i:03d}",
            last_answer="in step",
        )
        for i in range(POOLS)
    ]
    MachinePool.objects.bulk_create(pools)
    Node.objects.bulk_create(
        Node(
            backend=pool.backend,
            name=f"{pool.name}-node-{n}",
            labels={MACHINEPOOL_LABEL: pool.name},
            ready=n == 0,
        )
        for pool in pools[::2]
        for n in range(2)
    )
    roles.ensure_builtin_roles()
    admin = UserFactory(username="bench-admin")
    roles.update_user_roles(admin, add=["osmo-admin"], actor=Actor(name="bench", source="cli"))
    client = Client()
    client.force_login(admin)
    url = f"/api/machine_pools?limit={POOLS}"

    def api() -> None:
        answer = client.get(url)
        assert answer.status_code == 200 and len(answer.json()["machine_pools"]) == POOLS, answer.content[:300]

    def service() -> None:
        page = machine_pool_status.page(machine_pool_status.all_machine_pools(), 0, POOLS)
        assert len(page.as_dict()["machine_pools"]) == POOLS

    api()
    with CaptureQueriesContext(connection) as queries:
        api()
    name = f"machine pool status: {POOLS} machine pools"
    return [
        measure(
            f"{name}, GET /api/machine_pools", api, runs=RUNS, target=TARGET, note=f"{len(queries)} queries a request"
        ),
        measure(f"{name}, the service (page + JSON rows)", service, runs=RUNS, target=TARGET),
    ]
