"""Fixtures for the MACHINE_POOL doors: a ROSA backend (`rosa-a`), a Karpenter one (`karp`) and one without a
provider (`plain`), written through the config service like any backend; the seed's GPU spot pool; and a pool
with platforms made from two machine pools (`made`), for the deletes."""

from __future__ import annotations

import copy

import pytest

from clusters.machinepools.presets import GPU_SPOT_POOL
from configs import store
from configs.models import Revision
from configs.revisions import Actor
from pools.models import Platform, Pool
from pools.services.machine_pool_platforms import make_platform

CLI = Actor(name="tester", source="cli")
OCM_ID = "27h3k9q2v8m4n1p6r5s0t7u3w2x9y4z1"


@pytest.fixture
def backends(db):
    store.apply("BACKEND", "rosa-a", {"machine_provider": "rosa", "ocm_cluster_id": OCM_ID}, CLI)
    store.apply("BACKEND", "karp", {"machine_provider": "karpenter"}, CLI)
    store.apply("BACKEND", "plain", {"description": "no provider"}, CLI)


def gpu_spot(backend: str = "rosa-a", **changes) -> dict:
    body = GPU_SPOT_POOL.document(backend)
    body.update(copy.deepcopy(changes))
    return body


@pytest.fixture
def made(backends):
    """Pool `rosa` on backend rosa-a with platforms made from machine pools gpu-spot and gpu-two, and a
    platform `plain` of its own."""
    store.apply("POD_TEMPLATE", "own", {"spec": {"nodeSelector": {"team": "a"}}}, CLI)
    body = {"backend": "rosa-a", "platforms": {"plain": {"override_pod_template": ["own"]}}}
    store.apply("POOL", "rosa", body, CLI)
    for name in ("gpu-spot", "gpu-two"):
        store.apply("MACHINE_POOL", name, gpu_spot(), CLI)
        make_platform(name, CLI)
    return Pool.objects.get(name="rosa")


def last(config_type: str, name: str) -> Revision:
    return Revision.objects.filter(config_type=config_type, name=name).order_by("-revision").first()


def platforms() -> list[str]:
    return sorted(Platform.objects.values_list("name", flat=True))
