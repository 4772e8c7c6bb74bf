"""The node-pool labels the portal keeps on the nodes of every backend (docs/quotas.md, "Confinement").

* `pool-portal/node-pool: <node pool>` on each node of the Default or a platform node pool (none on a label
  node pool's nodes: their own label says it). Pods charged to such a node pool select it
  (`node_pools.node_selector`), so they run only where the node pool is; Kueue's flavors of platform node
  pools select the same label.
* On a backend delegated to KAI: `kai.scheduler/node-pool: <node pool>` (KAI's shard label; none on the
  Default's nodes).

`sync(backend)` patches, through `clusters.kube.nodes`, only the nodes the inventory shows wrong, and connects
to the cluster only when there is one: idempotent, and cheap when all is in step. The inventory brings the
new labels back in through its usual path (watch or resync); no node pool reads these keys (label node pools
may not select `pool-portal/` keys), so that change moves no node and queues no second patch.
`schedule(backend_id)` queues the task once per backend per transaction, after commit: membership writes call
it, and the periodic task puts back a label someone removed by hand.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from clusters.kube.connection import KubeClient, connect
from clusters.kube.errors import KubeError
from clusters.kube.nodes import patch_node_labels
from clusters.models import Backend, Node
from clusters.schedulers import kai
from clusters.schedulers.tree import object_name
from portal.oncommit import once_after_commit
from quotas.models import SelectorKind
from quotas.services.node_pools import NODE_POOL_LABEL

log = logging.getLogger(__name__)

Changes = dict[str, dict[str, str | None]]  # node name -> {label key: value, or None to remove}


def stale_labels(backend: Backend) -> Changes:
    """The labels each node of `backend` should have and the inventory shows otherwise (one query)."""
    rows = Node.objects.filter(backend=backend).values_list(
        "name", "labels", "node_pool_member__node_pool__name", "node_pool_member__node_pool__selector_kind"
    )
    stale: Changes = {}
    for node, labels, pool, kind in rows:
        if pool is None:  # not assigned yet: membership labels it once it is
            continue
        wanted = {NODE_POOL_LABEL: None if kind == SelectorKind.LABEL else object_name(pool)}
        if backend.quota_scheduler == "kai":
            wanted[kai.NODE_POOL_LABEL] = None if kind == SelectorKind.DEFAULT else object_name(pool)
        changes = {key: value for key, value in wanted.items() if (labels or {}).get(key) != value}
        if changes:
            stale[node] = changes
    return stale


def patch(kube: KubeClient, backend: Backend, stale: Changes | None = None) -> list[str]:
    """Patch the stale labels (`stale_labels` unless given) on the cluster; the nodes patched. A node gone since
    the inventory saw it is skipped; any other KubeError propagates."""
    patched = []
    for node, changes in sorted((stale if stale is not None else stale_labels(backend)).items()):
        try:
            patch_node_labels(kube, node, changes)
        except KubeError as error:
            if error.k8s_status != 404:
                raise
            continue
        patched.append(node)
    return patched


def sync(backend: Backend | int, *, connect_to: Callable[[Backend], KubeClient] = connect) -> list[str]:
    """Label what is stale on `backend`'s nodes; connects only when something is. Raises KubeError."""
    backend = backend if isinstance(backend, Backend) else Backend.objects.get(pk=backend)
    stale = stale_labels(backend)
    if not stale:
        return []
    with connect_to(backend) as kube:
        patched = patch(kube, backend, stale)
    log.info("backend %s: node-pool labels patched on %d node(s)", backend.name, len(patched))
    return patched


def _tasks():
    from quotas import tasks  # lazy: loads Celery and the broker client only when something is queued

    return tasks


def schedule(backend_id: int) -> bool:
    """Queue `quotas.tasks.label_nodes(backend_id)` after the current transaction commits, once per backend
    per transaction; a broker that is down never fails the writer. Returns whether it queued."""
    return once_after_commit("node_labels_of", backend_id, lambda: _tasks().label_nodes.delay(backend_id))
