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

# backend id → a rule: (a machine pool's own labels) → labels to add; installed by an app above in its ready().
# A rule is asked for once per backend and call (`memo`), so a page or a pass over many machine pools does not
# query per machine pool.
Rule = Callable[[dict[str, str]], dict[str, str]]
_ADDERS: list[Callable[[int], Rule]] = []


def install(adder: Callable[[int], Rule]) -> None:
    if adder not in _ADDERS:
        _ADDERS.append(adder)


def provisioned(spec: MachinePoolSpec, backend_id: int, memo: dict[int, list[Rule]] | None = None) -> MachinePoolSpec:
    """`spec` with the labels its nodes come up with (the added ones win: their keys are the portal's). Pass one
    `memo` dict for all the machine pools of a loop."""
    memo = {} if memo is None else memo
    if backend_id not in memo:
        memo[backend_id] = [adder(backend_id) for adder in _ADDERS]
    added: dict[str, str] = {}
    for rule in memo[backend_id]:
        added.update(rule(dict(spec.labels)))
    if not added:
        return spec
    return dataclasses.replace(spec, labels={**spec.labels, **added})
