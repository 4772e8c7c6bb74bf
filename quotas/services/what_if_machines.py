"""A machine pool's max as a what-if change (`machinepool NAME max=N`, docs/quotas.md "What-if"): turned into the
GPUs it adds to or takes from the node pool its nodes are in, `(N − its max today) × GPUs per node` of its
instance type (clusters.machinepools; the catalog with the admin's corrections), so the replay and the
right-now pass see a capacity change like `capacity NODE_POOL gpu=±N`. A machine pool with fixed replicas has
`replicas` as its max.

Its node pool: the one its nodes are in now (quotas.services.membership), else the one its new nodes would be
claimed by — the first label node pool of its backend, by name, whose label its nodes carry, else the backend's
Default (a platform node pool claims nodes only once they exist). Four queries, whatever the number of changes.
"""

from __future__ import annotations

import dataclasses

from django.db.models.fields.json import KT

from clusters.machinepools.instance_types import catalog
from clusters.machinepools.spec import MACHINEPOOL_LABEL
from clusters.models import MachinePool, Node
from portal.errors import DomainError
from quotas.models import NodePool, SelectorKind
from quotas.services.what_if_changes import Change


def resolve_machine_pools(changes: list[Change]) -> list[Change]:
    """Each `machinepool` change as the capacity change it makes; the others as they are."""
    wanted = {c.team for c in changes if c.kind == "machinepool"}
    if not wanted:
        return changes
    machines = {m.name: m for m in MachinePool.objects.filter(name__in=wanted)}
    instances = catalog()
    node_pools = _node_pools({m.backend_id for m in machines.values()})
    members = dict(  # the node pool its nodes are in now (the last by name, if they are in several)
        Node.objects.annotate(machine=KT(f"labels__{MACHINEPOOL_LABEL}"))
        .filter(machine__in=wanted, node_pool_member__isnull=False)
        .order_by("machine", "node_pool_member__node_pool__name")
        .values_list("machine", "node_pool_member__node_pool__name")
        .distinct()
    )
    resolved = []
    for index, change in enumerate(changes):
        if change.kind != "machinepool":
            resolved.append(change)
            continue
        where = f"changes[{index}]"
        machine = machines.get(change.team)
        if machine is None:
            raise DomainError("unknown machine pool", field=f"{where}.machinepool", value=change.team)
        spec = machine.spec()
        instance = instances.get(spec.instance_type)
        if instance is None or not instance.gpu_count:
            raise DomainError(
                f"its instance type {spec.instance_type} has no GPUs: its max changes no GPU capacity",
                field=f"{where}.machinepool",
                value=change.team,
            )
        pool = members.get(change.team) or _claimed(spec.node_labels(instance), node_pools.get(machine.backend_id, []))
        if pool is None:
            raise DomainError("its nodes are in no node pool", field=f"{where}.machinepool", value=change.team)
        gpus = (change.values["max"] - spec.most_nodes) * instance.gpu_count
        resolved.append(dataclasses.replace(change, node_pool=pool, values={**change.values, "gpu": gpus}))
    return resolved


def _node_pools(backends: set[int]) -> dict[int, list[NodePool]]:
    found: dict[int, list[NodePool]] = {}
    for pool in NodePool.objects.filter(backend_id__in=backends).order_by("name"):
        found.setdefault(pool.backend_id, []).append(pool)
    return found


def _claimed(labels: dict[str, str], pools: list[NodePool]) -> str | None:
    for pool in pools:
        if pool.selector_kind == SelectorKind.LABEL and labels.get(pool.label_key) == pool.label_value:
            return pool.name
    return next((pool.name for pool in pools if pool.selector_kind == SelectorKind.DEFAULT), None)
