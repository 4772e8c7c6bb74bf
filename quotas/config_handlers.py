"""The handler of the NODE_POOL config type (quotas.config_types): the checks that need the database and
the row writes are quotas.services.writer's; after a write, which node pool each node is in is recomputed
for the backends written. A backend's Default node pool is refused deletion (it goes with its backend).
Registered by `QuotasConfig.ready()`."""

from __future__ import annotations

from django.db.models import Prefetch

from configs.registry import SchemaHandler
from quotas.config_types import NODE_POOL
from quotas.models import NodePool, Quota
from quotas.services import writer


class NodePoolHandler(SchemaHandler):
    schema, model = NODE_POOL, NodePool

    def queryset(self):
        quotas = Quota.objects.select_related("department", "project")
        return NodePool.objects.select_related("backend").prefetch_related(Prefetch("quotas", queryset=quotas))

    def prepare(self, docs):
        return writer.References.load(docs)

    def save(self, doc, existing, prepared):
        return writer.save_node_pool(doc, existing, prepared)

    def referrers(self, obj):
        if obj.is_default:
            return [f"backend {obj.backend.name} (its Default node pool goes only with the backend)"]
        return []

    def after_save(self, objs, prepared):
        from quotas.services import delegation, membership  # the KAI/Kueue sync and its Kubernetes client: writes only

        membership.recompute_backends(obj.backend_id for obj in objs)
        for backend_id in sorted({obj.backend_id for obj in objs}):  # KAI/Kueue objects follow (after commit)
            delegation.schedule_sync(backend_id)
