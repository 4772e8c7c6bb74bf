"""Admin for node pools: the list (the grid overview) shows, per resource, the sum of the departments' deserved
quotas against the capacity of the node pool's usable nodes, flags a node pool whose guarantees exceed what its
nodes hold, says whether it is managed, and links each to its editable quota grid (quotas.admin_grid). One query
for the whole list (quotas.services.overview, and an EXISTS for managed). Node pools themselves are written
through the NODE_POOL config type (`config update NODE_POOL`, `/api/configs/node_pool/<name>`), quotas through
the grid, `quota set` or the API: every write is a revision. Rights: config:Read / config:Update on
`config/node_pool` (access.policy)."""

from __future__ import annotations

from django.contrib import admin
from django.db.models import Exists, OuterRef
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from unfold.decorators import display

from access import actions
from access.admin.site import PolicyAdminMixin
from configs import store
from configs.models import ConfigType
from portal.admin_base import ServiceBackedAdmin, pretty_json, revisions_link, saved_object_link
from quotas import units
from quotas.admin_grid import QuotaGridMixin
from quotas.models import NodePool, Quota
from quotas.services import fairshare_history, node_pool_quotas, node_pools, overview
from quotas.services.fairshare_view import fairshare_page
from quotas.services.usage_weights import Window


@admin.register(NodePool)
class NodePoolAdmin(QuotaGridMixin, PolicyAdminMixin, ServiceBackedAdmin):
    policy_resource = actions.config(ConfigType.NODE_POOL)
    list_display = [
        "name",
        "backend",
        "selector",
        "node_count",
        "gpu",
        "cpu",
        "memory",
        "commitment",
        "managed",
        "quota_grid",
        "fair_share",
    ]
    list_filter = ["backend", "selector_kind"]
    search_fields = ["name", "description"]
    fields = [
        "name",
        "backend",
        "selector",
        "over_quota",
        "admission_seconds",
        "min_runtime_seconds",
        "time_based_fair_share",
        "description",
        "quota_grid",
        "fair_share",
        "document",
        "history",
    ]
    readonly_fields = fields

    def get_urls(self):
        view = self.admin_site.admin_view(self.fairshare_view)
        return [path("<int:node_pool_id>/fairshare/", view, name="quotas_nodepool_fairshare"), *super().get_urls()]

    def fairshare_view(self, request, node_pool_id: int):
        """Per project: deserved, fair share, in use, borrowed (`?resource=gpu|cpu|memory`); who borrows from whom."""
        node_pool = get_object_or_404(NodePool.objects.select_related("backend"), pk=node_pool_id)
        if not self.has_view_permission(request, node_pool):
            return self.admin_site.login(request)
        page = fairshare_page(node_pool, request.GET.get("resource", "gpu"))
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "page": page,
            "history": fairshare_history.last_day(node_pool, [p.project for p in page.projects]),
            "title": f"Fair share in {node_pool.name}",
            "change_url": reverse("admin:quotas_nodepool_change", args=[node_pool.pk]),
            "list_url": reverse("admin:quotas_nodepool_changelist"),
        }
        return TemplateResponse(request, "admin/quotas/fairshare.html", context)

    def get_queryset(self, request):
        managed = Exists(Quota.objects.filter(node_pools.managed_filter(), node_pool=OuterRef("pk")))
        return overview.with_totals(super().get_queryset(request).select_related("backend")).annotate(
            is_managed=managed
        )

    def has_add_permission(self, request, *args):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    @display(description="Time-based fair share")
    def time_based_fair_share(self, obj):
        window = Window.of(obj)
        return window.text() if window else "off"

    @display(description="Selector")
    def selector(self, obj):
        return node_pool_quotas.selector_text(obj)

    @display(description="Managed", boolean=True)
    def managed(self, obj):
        return obj.is_managed

    @display(description="Quotas")
    def quota_grid(self, obj):
        return saved_object_link(obj, "admin:quotas_nodepool_quotas", "Edit the quota grid")

    @display(description="Nodes", ordering="node_count", label={"empty": "danger"})
    def node_count(self, obj):
        return ("empty", "0 (empty)") if not obj.node_count else obj.node_count

    def _totals(self, obj, resource: str) -> str:
        deserved, capacity = getattr(obj, f"deserved_{resource}"), getattr(obj, f"capacity_{resource}")
        return f"{units.show(resource, deserved)} / {units.show(resource, capacity)}"

    @display(description="GPU deserved / capacity")
    def gpu(self, obj):
        return self._totals(obj, "gpu")

    @display(description="CPU deserved / capacity")
    def cpu(self, obj):
        return self._totals(obj, "cpu")

    @display(description="Memory deserved / capacity")
    def memory(self, obj):
        return self._totals(obj, "memory")

    @display(description="Quotas", label={"fits": "success", "over-committed": "danger"})
    def commitment(self, obj):
        over = overview.overcommitted(obj)
        return ("over-committed", f"over-committed: {', '.join(over)}") if over else ("fits", "fits")

    @display(description="Fair share")
    def fair_share(self, obj):
        return saved_object_link(obj, "admin:quotas_nodepool_fairshare", "chart and loans")

    @display(description="NODE_POOL document")
    def document(self, obj):
        return pretty_json(store.show(ConfigType.NODE_POOL, obj.name)) if obj and obj.pk else "-"

    @display(description="History")
    def history(self, obj):
        return revisions_link(ConfigType.NODE_POOL, obj)
