"""What quotas tells pools of confinement (`pools.confinement`, installed in quotas' AppConfig.ready()): the node
pool a platform's tasks are charged to and the selector their pods carry, from the same cached charge
submission uses (`charge_cache.charge`, `node_pools.node_selector`); and which node pool a node's labels put it in,
read as the scheduler reads them: the node pool whose selector its labels match (docs/quotas.md, "Confinement")."""

from __future__ import annotations

from pools.confinement import Confinement
from quotas.models import NodePool
from quotas.services import charge_cache
from quotas.services.node_pools import node_selector


class PortalConfiner:
    def of_platform(self, pool, platform: str) -> Confinement | None:
        node_pool, _queue, selector = charge_cache.charge(pool, platform)
        return Confinement(node_pool, dict(selector)) if selector else None

    def node_pools(self, backend_id: int, labels: dict[str, dict]) -> dict[str, str]:
        """node → the node pool whose pods' selector its labels match (one query); unlabelled nodes left out."""
        selectors = [(p.name, node_selector(p)) for p in NodePool.objects.filter(backend_id=backend_id)]
        found = {}
        for node, node_labels in labels.items():
            for name, selector in selectors:
                if all((node_labels or {}).get(key) == value for key, value in selector.items()):
                    found[node] = name
                    break
        return found
