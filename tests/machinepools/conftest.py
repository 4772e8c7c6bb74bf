"""Fixtures for the MACHINE_POOL doors: a ROSA backend (`rosa-a`), a Karpenter one (`karp`) and one without a
provider (`plain`), written through the config service like any backend; and the seed's GPU spot pool."""

from __future__ import annotations

import copy

import pytest

from clusters.machinepools.presets import GPU_SPOT_POOL
from configs import store
from configs.revisions import Actor

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
