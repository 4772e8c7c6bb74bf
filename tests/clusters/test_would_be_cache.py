"""The per-process cache of would-be nodes (pools.services.machine_pool_shapes): every submission's node
rules read them, so a cached answer costs one epoch query; whatever they depend on — machine pools and
instance types saved or deleted, a machine pool's first node appearing, its last node deleted, the pools'
and templates' revisions — is seen at the next call.

These tests run outside a wrapping transaction: inside one the cache is off.
"""

from __future__ import annotations

import pytest

from clusters import inventory
from clusters.machinepools.spec import MACHINEPOOL_LABEL
from clusters.models import InstanceType, MachinePool
from pools.services.machine_pool_shapes import would_be_nodes
from tests.factories import MachinePoolFactory
from tests.queries import captured_queries

pytestmark = pytest.mark.django_db(transaction=True)


def names(backend) -> list[str]:
    return sorted(node.spec.name for node in would_be_nodes({backend.pk}))


def test_a_cached_answer_costs_one_epoch_query(machine_pools):
    assert names(machine_pools) == ["gpu-zero"]  # the demo fleet has nodes of the seed's two pools
    with captured_queries() as queries:
        assert names(machine_pools) == ["gpu-zero"]
    assert len(queries) == 1 and "access_accessepoch" in queries[0]


def test_machine_pools_saved_and_deleted_are_seen(machine_pools):
    assert names(machine_pools) == ["gpu-zero"]
    MachinePoolFactory(backend=machine_pools, name="late-zero")
    assert names(machine_pools) == ["gpu-zero", "late-zero"]
    MachinePool.objects.filter(name="gpu-zero").update(max_replicas=0)  # behind the portal's back: not seen
    MachinePool.objects.get(name="late-zero").delete()
    assert names(machine_pools) == []  # the delete moved the epoch; the update is read again with it


def test_an_instance_type_saved_is_seen(machine_pools):
    [before] = [n for n in would_be_nodes({machine_pools.pk}) if n.spec.name == "gpu-zero"]
    InstanceType.objects.create(name="g4dn.xlarge", vcpu=8, memory_mib=32768, gpu_count=1, gpu_model="T4")
    [after] = [n for n in would_be_nodes({machine_pools.pk}) if n.spec.name == "gpu-zero"]
    assert (before.instance.vcpu, after.instance.vcpu) == (4, 8)


def test_the_first_node_and_the_last_are_seen(machine_pools, kube_server):
    assert "gpu-zero" in names(machine_pools)
    node = kube_server.emulator.list("nodes")[0]["metadata"]["name"]
    kube_server.emulator.patch("nodes", node, {"metadata": {"labels": {MACHINEPOOL_LABEL: "gpu-zero"}}})
    inventory.sync_backend(machine_pools.pk)
    assert "gpu-zero" not in names(machine_pools)
    kube_server.emulator.delete("nodes", node)
    inventory.sync_backend(machine_pools.pk)
    assert "gpu-zero" in names(machine_pools)
