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
from tests.factories import TaskFactory, WorkflowFactory
from workflows.models import WorkflowStatus

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


def gpu_spot_went_with_its_platform() -> tuple[Revision, Revision, Revision]:
    """After machine pool gpu-spot of `made` was deleted: its platform and template are gone, gpu-two's stay;
    the revisions written (the pool's, the template's, the machine pool's)."""
    from clusters.models import MachinePool
    from pools.models import PodTemplate

    assert not MachinePool.objects.filter(name="gpu-spot").exists()
    assert platforms() == ["gpu-two", "plain"]
    assert not PodTemplate.objects.filter(name="machinepool-gpu-spot").exists()
    assert PodTemplate.objects.filter(name="machinepool-gpu-two").exists()
    pool, template = last("POOL", "rosa"), last("POD_TEMPLATE", "machinepool-gpu-spot")
    machine_pool = last("MACHINE_POOL", "gpu-spot")
    assert "gpu-spot" not in pool.snapshot["platforms"] and "gpu-two" in pool.snapshot["platforms"]
    assert template.deleted and machine_pool.deleted
    return pool, template, machine_pool


@pytest.fixture
def busy(made):
    """An unfinished workflow on the platform made for gpu-spot, a finished one on it, one on `plain`."""
    running = WorkflowFactory(pool=made, workflow_id="train-1", status=WorkflowStatus.RUNNING)
    TaskFactory(workflow=running, platform="gpu-spot", status="RUNNING")
    finished = WorkflowFactory(pool=made, workflow_id="old-1", status=WorkflowStatus.COMPLETED)
    TaskFactory(workflow=finished, platform="gpu-spot", status="COMPLETED")
    other = WorkflowFactory(pool=made, workflow_id="plain-1", status=WorkflowStatus.RUNNING)
    TaskFactory(workflow=other, platform="plain", status="RUNNING")
