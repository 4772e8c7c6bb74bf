"""Admin for node pools: the list (the grid overview) shows, per resource, the sum of the departments' deserved
quotas against the capacity of the node pool's usable nodes, flags a node pool whose guarantees exceed what its
nodes hold, and links each to its editable quota grid (quotas.admin_grid) and its fair share. One query for the
whole list (quotas.services.overview, and an EXISTS for managed). Node pools are added and changed here
(quotas.admin_form: selector rows, over-quota, time-based fair share, a preview of the nodes a selector takes)
and written like every config type, through `configs.store.apply` (pools.admin.config.ConfigAdmin): one NODE_POOL
revision per save, as `config update NODE_POOL` and `/api/configs/node_pool/<name>`; quotas through the grid,
`quota set` or the API. Rights: config:Read / config:Update on `config/node_pool` (access.policy)."""

from __future__ import annotations

from django.contrib import admin
from django.contrib.admin import helpers
from django.db.models import Exists, OuterRef
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html
from unfold.decorators import display

from configs import store
from configs.models import ConfigType
from pools.admin.config import ConfigAdmin
from portal.admin_base import pretty_json, saved_object_link
from quotas import units
from quotas.admin_form import PREVIEW_BUTTON, NodePoolForm, field_of
from quotas.admin_grid import QuotaGridMixin
from quotas.models import NodePool, Quota
from quotas.services import fairshare_history, node_pool_quotas, node_pools, overview
from quotas.services.fairshare_view import fairshare_page


@admin.register(NodePool)
class NodePoolAdmin(QuotaGridMixin, ConfigAdmin):
    config_type = ConfigType.NODE_POOL
    form = NodePoolForm
    # within 1440 px: the three resources' deserved / capacity share one column, a line each
    list_display = ["name", "backend", "selector", "node_count", "totals", "commitment", "links"]
    list_filter = ["backend", "selector_kind"]
    list_select_related = ["backend"]
    search_fields = ["name", "description"]
    fieldsets = [
        (None, {"fields": ["name", "backend", "description", "history"]}),
        ("Selector", {"fields": ["selector_kind", "label_key", "label_value", "platform", "nodes_preview"]}),
        (
            "Sharing",
            {
                "fields": [
                    "over_quota",
                    "time_based",
                    "fair_share_window_days",
                    "fair_share_half_life_hours",
                    "fair_share_k",
                ]
            },
        ),  # fmt: skip
        ("Admission and reclaim", {"fields": ["admission_seconds", "min_runtime_seconds"]}),
        ("Quotas", {"fields": ["managed", "quota_grid", "fair_share", "priorities"]}),
        ("NODE_POOL document", {"fields": ["document"], "classes": ["collapse"]}),
    ]
    computed = ["managed", "quota_grid", "fair_share", "priorities", "document"]

    def get_fieldsets(self, request, obj=None):
        fieldsets = super().get_fieldsets(request, obj)
        if obj is None:  # nothing saved yet: no history, quotas or document
            keep = [fs for fs in fieldsets if fs[0] not in ("Quotas", "NODE_POOL document")]
            return [(None, {"fields": ["name", "backend", "description"]}), *keep[1:]]
        return fieldsets

    def get_readonly_fields(self, request, obj=None):
        return [*super().get_readonly_fields(request, obj), *self.computed]

    def get_form(self, request, obj=None, change=False, **kwargs):
        """A refused save's error is shown at the form field its document path is about (quotas.admin_form)."""
        form_class = super().get_form(request, obj, change, **kwargs)
        return type(form_class.__name__, (form_class,), {"field_of": staticmethod(field_of)})

    def render_change_form(self, request, context, add=False, change=False, form_url="", obj=None):
        """The preview button's answer reads as a preview: the error that kept it from a save is taken off, so
        the page says "Please correct the errors below" only when a field is wrong (quotas.admin_form)."""
        form = context.get("adminform") and context["adminform"].form
        if form is not None and form.is_bound and PREVIEW_BUTTON in form.data:
            form.drop_preview_guard()
            formsets = [inline.formset for inline in context.get("inline_admin_formsets", ())]
            context["errors"] = helpers.AdminErrorList(form, formsets)
        return super().render_change_form(request, context, add, change, form_url, obj)

    def config_body(self, form, formsets, change):
        base = store.show(self.config_type, form.instance.name) if change else None
        return {**self.schema.body_from_form(form.cleaned_data, base), "selector": form.selector_body()}

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

    @display(description="Selector")
    def selector(self, obj):
        return node_pool_quotas.selector_text(obj)

    @display(description="Managed", boolean=True)
    def managed(self, obj):
        return obj.is_managed

    @display(description="Quota grid")
    def quota_grid(self, obj):
        return saved_object_link(obj, "admin:quotas_nodepool_quotas", "Edit the quota grid")

    @display(description="Priorities")
    def priorities(self, obj):
        """A project's priority holds in every node pool: it is edited on the project's page."""
        url = reverse("admin:teams_project_changelist")
        return format_html(
            '<a class="underline" href="{}">Projects\' priorities</a> (one per project, in every node pool; '
            "weights per node pool are in the quota grid)",
            url,
        )

    @display(description="Open")
    def links(self, obj):
        grid = reverse("admin:quotas_nodepool_quotas", args=[obj.pk])
        fair = reverse("admin:quotas_nodepool_fairshare", args=[obj.pk])
        return format_html('<a class="underline" href="{}">quota grid</a> · <a class="underline" href="{}">fair '
                           "share</a>", grid, fair)  # fmt: skip

    @display(description="Nodes", ordering="node_count", label={"empty": "danger"})
    def node_count(self, obj):
        return ("empty", "0 (empty)") if not obj.node_count else obj.node_count

    def _totals(self, obj, resource: str) -> str:
        deserved, capacity = getattr(obj, f"deserved_{resource}"), getattr(obj, f"capacity_{resource}")
        return f"{units.show(resource, deserved)} / {units.show(resource, capacity)}"

    @display(description="Deserved / capacity")
    def totals(self, obj):
        return format_html(  # one block: a phone's card line (a flex row) keeps the three lines under each other
            '<span class="block"><span class="whitespace-nowrap">GPU {}</span><br><span class="whitespace-nowrap">'
            'CPU {}</span><br><span class="whitespace-nowrap">Memory {}</span></span>',
            self._totals(obj, "gpu"),
            self._totals(obj, "cpu"),
            self._totals(obj, "memory"),
        )

    @display(description="Guarantees", label={"fits": "success", "over-committed": "danger"})
    def commitment(self, obj):
        over = overview.overcommitted(obj)
        return ("over-committed", f"over-committed: {', '.join(over)}") if over else ("fits", "fits")

    @display(description="Fair share")
    def fair_share(self, obj):
        return saved_object_link(obj, "admin:quotas_nodepool_fairshare", "chart and loans")

    @display(description="NODE_POOL document")
    def document(self, obj):
        return pretty_json(store.show(ConfigType.NODE_POOL, obj.name)) if obj and obj.pk else "-"
