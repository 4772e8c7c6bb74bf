"""The labels a machine pool's nodes come up with: the machine pool's own, and what an app above adds (quotas:
the node-pool label that confines pods, docs/quotas.md#confinement). The provider is asked for them, so an
autoscaler scales up for the pods that wait for such a node, and a would-be node (scale from zero) takes what
the real one will.

Not the labels a machine pool's platform selects by (pools.services.machine_pool_platforms): those are the
machine pool's own, which users' templates may name.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from clusters.machinepools.spec import MachinePoolSpec

# (backend id, the machine pool's own labels) → labels to add; installed by an app above in its ready()
_ADDERS: list[Callable[[int, dict[str, str]], dict[str, str]]] = []


def install(adder: Callable[[int, dict[str, str]], dict[str, str]]) -> None:
    if adder not in _ADDERS:
        _ADDERS.append(adder)


def provisioned(spec: MachinePoolSpec, backend_id: int) -> MachinePoolSpec:
    """`spec` with the labels its nodes come up with (the added ones win: their keys are the portal's)."""
    added: dict[str, str] = {}
    for adder in _ADDERS:
        added.update(adder(backend_id, dict(spec.labels)))
    if not added:
        return spec
    return dataclasses.replace(spec, labels={**spec.labels, **added})
