"""Config import throughput (500-pool file) and admin pool list render with 500 pools."""

from __future__ import annotations

import time

from bench.django_env import throwaway_database
from bench.harness import Row, measure

POOLS = 500


def _pool_file(count: int) -> dict:
    return {
        f"team{i % 40}-pool-{i:04d}": {
            "description": f"bench pool {i}",
            "backend": "bench-cluster",
            "default_platform": "a100",
            "common_default_variables": {"USER_CPU": 4, "USER_GPU": 1, "USER_MEMORY": "16Gi", "USER_STORAGE": "50Gi"},
            "common_resource_validations": ["default_cpu", "default_memory"],
            "common_pod_template": ["default_user", "default_ctrl"],
            "default_exec_timeout": "2h",
            "max_exec_timeout": "8h",
            "platforms": {
                "a100": {"override_pod_template": ["a100"], "default_variables": {"USER_MEMORY": "80Gi"}},
                "h100": {"override_pod_template": ["h100"], "resource_validations": ["default_gpu"]},
                "cpu": {"override_pod_template": []},
            },
        }
        for i in range(count)
    }


def _reference_config(store, actor) -> None:
    from pools.engine import default_templates, default_validations

    store.apply("BACKEND", "bench-cluster", {"description": "bench"}, actor)
    store.apply_many("POD_TEMPLATE", default_templates(), actor)
    store.apply("POD_TEMPLATE", "a100", {"spec": {"nodeSelector": {"nvidia.com/gpu.product": "A100"}}}, actor)
    store.apply("POD_TEMPLATE", "h100", {"spec": {"nodeSelector": {"nvidia.com/gpu.product": "H100"}}}, actor)
    store.apply_many("RESOURCE_VALIDATION", default_validations(), actor)


def run() -> list[Row]:
    with throwaway_database():
        from django.contrib.auth import get_user_model
        from django.db import connection
        from django.test import Client
        from django.test.utils import CaptureQueriesContext

        from access.services import roles
        from configs import store
        from configs.revisions import Actor
        from pools.models import Pool

        actor = Actor(name="bench", source="cli")
        _reference_config(store, actor)
        document = _pool_file(POOLS)

        def fresh_import():
            Pool.objects.all().delete()
            start = time.perf_counter()
            store.apply_many("POOL", document, actor)
            return time.perf_counter() - start

        imports = sorted(fresh_import() for _ in range(3))
        median_import = imports[1]
        rows = [
            Row(
                f"config import: {POOLS}-pool file (create)",
                median_import,
                imports[-1],
                3,
                target="≥ 200 pools/s",
                note=f"{POOLS / median_import:.0f} pools/s",
            )
        ]
        unchanged = measure(
            f"config import: {POOLS}-pool file (unchanged)",
            lambda: store.apply_many("POOL", document, actor),
            runs=3,
            warmup=0,
        )
        unchanged.note = f"{POOLS / unchanged.median_s:.0f} pools/s"
        rows.append(unchanged)

        admin = get_user_model().objects.create_user("bench-admin", "b@example.com", "x", is_staff=True)
        roles.ensure_builtin_roles()
        roles.update_user_roles(admin, add=["osmo-admin"], actor=actor)  # admin access is a role, not a flag
        client = Client()
        client.force_login(admin)
        url = "/admin/pools/pool/"
        client.get(url)  # warm: the first request of a process loads the admin's caches
        queries_500 = _queries(client, url, CaptureQueriesContext, connection)
        render = measure(
            f"admin pool list render ({POOLS} pools, 100 per page)",
            lambda: client.get(url),
            runs=20,
            target="≤ 100 ms, constant query count",
        )
        Pool.objects.exclude(pk__in=list(Pool.objects.values_list("pk", flat=True)[:5])).delete()
        queries_5 = _queries(client, url, CaptureQueriesContext, connection)
        render.note = f"queries: {queries_500} with 500 pools, {queries_5} with 5"
        rows.append(render)
        return rows


def _queries(client, url, capture, connection) -> int:
    with capture(connection) as ctx:
        response = client.get(url)
    assert response.status_code == 200 and b"result_list" in response.content, "not the pool list"
    return len(ctx)
