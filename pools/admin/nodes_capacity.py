"""Admin for what joins the node inventory (`clusters.admin`) to pools: membership and capacity.

* Nodes: `clusters.admin.NodeAdmin` registered again with pool, platform and type filters and columns
  (query count still constant in rows); the node page says which platforms it serves and why not others.
* Pool capacity: the pools as capacity figures (each node once), with per-platform figures on its page.
* `BackendForm` (used by BackendAdmin): the connection form with write-only secrets, validated as the
  BACKEND document is.
* `PlatformNodesMixin` (used by PlatformAdmin): "which nodes, and why not the others".
"""

from __future__ import annotations

from django import forms
from django.contrib import admin
from django.db.models import Prefetch, Subquery
from django.urls import reverse
from django.utils.html import escape, format_html, format_html_join
from unfold.decorators import display
from unfold.widgets import UnfoldAdminPasswordWidget

from clusters.admin import RESOURCES, SHORT, ReadOnlyPolicyAdmin, SchedulableFilter
from clusters.admin import NodeAdmin as ClusterNodeAdmin
from clusters.config_types import BACKEND, BACKEND_SECRETS
from clusters.models import Backend, Node
from clusters.units import used_of_allocatable
from configs.errors import ConfigError
from configs.kinds import secret_marker
from pools.models import NodeMembership, Platform, Pool, PoolCapacity, ResourceType
from pools.services import capacity, machine_pool_capacity, membership, membership_reads, spot_capacity
from portal.widgets import CodeBoundField, CodeEditor, at_line

MAX_EXPLAINED = 300  # non-member rows shown on a platform page


# ------------------------------------------------------------------------------------------ nodes


class _IdFilter(admin.SimpleListFilter):
    """Filter nodes through the membership table with a subquery (no join: counts stay right)."""

    field: str

    def queryset(self, request, queryset):
        if self.value():
            members = NodeMembership.objects.filter(**{self.field: self.value()}).values("node_id")
            return queryset.filter(pk__in=Subquery(members))
        return queryset


class PoolFilter(_IdFilter):
    title, parameter_name, field = "pool", "pool", "pool_id"

    def lookups(self, request, model_admin):
        return list(Pool.objects.order_by("name").values_list("pk", "name"))


class PlatformFilter(_IdFilter):
    title, parameter_name, field = "platform", "platform", "platform_id"

    def lookups(self, request, model_admin):
        return [(p.pk, str(p)) for p in Platform.objects.select_related("pool").only("name", "pool__name")]


class ResourceTypeFilter(admin.SimpleListFilter):
    title, parameter_name = "type", "type"

    def lookups(self, request, model_admin):
        return ResourceType.choices

    def queryset(self, request, queryset):
        return membership_reads.filter_resource_type(queryset, self.value()) if self.value() else queryset


def _used(figures, name: str) -> str:
    return used_of_allocatable(name, figures.used[name], figures.allocatable[name])


admin.site.unregister(Node)  # clusters' NodeAdmin, replaced by the one that knows pools


@admin.register(Node)
class NodeAdmin(ClusterNodeAdmin):
    # Fits 1440 px: the backend is a filter and on the node's page, the type follows from its pools
    list_display = [
        "name",
        "gpu_product",
        "schedulable_badge",
        "gpus",
        "cpus",
        "memory",
        "pool_list",
        "last_seen_ago",
    ]
    list_filter = ["backend", PoolFilter, PlatformFilter, "gpu_product", SchedulableFilter, ResourceTypeFilter]
    fieldsets = [
        ClusterNodeAdmin.fieldsets[0],
        ("Pools and platforms", {"fields": ["type_badge", "platform_verdicts"]}),
        *ClusterNodeAdmin.fieldsets[1:],
    ]

    def get_queryset(self, request):
        members = NodeMembership.objects.select_related("pool", "platform").order_by("pool__name", "platform__name")
        return membership_reads.with_pool_count(super().get_queryset(request)).prefetch_related(
            Prefetch("memberships", queryset=members)
        )

    @display(
        description="Type",
        ordering="pool_count",
        label={ResourceType.SHARED: "info", ResourceType.RESERVED: "success", ResourceType.UNUSED: "warning"},
    )
    def type_badge(self, obj):
        return membership_reads.resource_type(obj.pool_count)

    @display(description="Pools / platforms")
    def pool_list(self, obj):
        return ", ".join(f"{m.pool.name}/{m.platform.name}" for m in obj.memberships.all()) or "-"

    @display(description="Every platform of this backend")
    def platform_verdicts(self, obj):
        rows = membership.explain_node(obj)
        if not rows:
            return "No platform uses this node's backend."
        return format_html(
            '<table class="text-sm">{}</table>',
            format_html_join(
                "",
                '<tr><td class="pr-4 align-top">{}</td><td class="pr-4 align-top">{}</td><td>{}</td></tr>',
                (
                    (row["platform"], "member" if row["fits"] else "not a member", "; ".join(row["reasons"]) or "-")
                    for row in rows
                ),
            ),
        )


# ------------------------------------------------------------------------------------------ pool capacity


@admin.register(PoolCapacity)
class PoolCapacityAdmin(ReadOnlyPolicyAdmin):
    policy_resource = "config/pool"
    # Fits 1440 px: the backend (a filter) and storage are on the pool's page
    list_display = ["name", "node_count", "gpus", "free_gpus", "cpus", "memory", "at_maximum"]
    list_filter = ["backend"]
    search_fields = ["name"]
    list_select_related = ["backend"]
    fields = ["name", "backend", "platform_capacity", "machine_pools", "spot_advice", "nodes_link"]
    readonly_fields = fields

    def get_changelist_instance(self, request):
        changelist = super().get_changelist_instance(request)
        pools = list(changelist.result_list)  # evaluated once; the same objects are rendered
        totals = capacity.pool_totals([pool.pk for pool in pools])
        grown = machine_pool_capacity.growth([pool.pk for pool in pools], {pool.backend_id for pool in pools})
        for pool in pools:
            pool.figures = totals[pool.pk]
            pool.growth = grown[pool.pk]
        return changelist

    @display(description="Machine pools: now / at maximum")
    def at_maximum(self, obj):
        return obj.growth.total.summary or "-"

    @display(description="Machine pools (now and at maximum, hourly cost, spot or on-demand)")
    def machine_pools(self, obj):
        grown = machine_pool_capacity.growth([obj.pk], {obj.backend_id})[obj.pk]
        if not grown.total.machine_pools:
            return "No machine pool serves this pool's platforms."
        rows = [(platform, m.text) for platform, served in grown.platforms.items() for m in served.machine_pools]
        body = format_html_join("", "<tr><td class='pr-4'>{}</td><td>{}</td></tr>", rows)
        return format_html(
            '<p>{}</p><table class="text-sm"><tr><th class="pr-4 text-left">Platform</th>'
            '<th class="text-left">Machine pool</th></tr>{}</table>',
            grown.total.summary,
            body,
        )

    @display(description="Spot advice")
    def spot_advice(self, obj):
        """The pool's platforms that keep state on spot capacity (pools.services.spot_capacity), flagged."""
        flagged = spot_capacity.stateful_on_spot(obj.platforms.select_related("pool"))
        if not flagged:
            return "No platform of this pool keeps state (persistentVolumeClaim volumes) on spot capacity."
        return format_html_join("", "<p class='text-red-600'>⚠ {}</p>", ((text,) for text in flagged.values()))

    @display(description="Nodes")
    def node_count(self, obj):
        return obj.figures.nodes

    @display(description="GPU used / alloc")
    def gpus(self, obj):
        return _used(obj.figures, "nvidia.com/gpu")

    @display(description="Free GPU")
    def free_gpus(self, obj):
        return obj.figures.free["nvidia.com/gpu"]

    @display(description="CPU used / alloc")
    def cpus(self, obj):
        return _used(obj.figures, "cpu")

    @display(description="Memory used / alloc")
    def memory(self, obj):
        return _used(obj.figures, "memory")

    @display(description="Storage used / alloc")
    def storage(self, obj):
        return _used(obj.figures, "ephemeral-storage")

    @display(description="Capacity by platform (each node once in the pool row)")
    def platform_capacity(self, obj):
        entry = capacity.capacity([obj.name]).pools[obj.name]
        rows = [(f"{obj.name} (pool)", entry["figures"])] + list(entry["platforms"].items())
        header = format_html_join(
            "",
            "<th class='pr-4 text-left'>{}</th>",
            ((h,) for h in ("", "Nodes", *(SHORT[n] for n in RESOURCES), "Free GPU")),
        )
        body = format_html_join(
            "",
            "<tr><td class='pr-4'>{}</td><td class='pr-4'>{}</td>{}<td>{}</td></tr>",
            (
                (
                    name,
                    figures.nodes,
                    format_html_join("", "<td class='pr-4'>{}</td>", ((_used(figures, n),) for n in RESOURCES)),
                    figures.free["nvidia.com/gpu"],
                )
                for name, figures in rows
            ),
        )
        return format_html('<table class="text-sm"><tr>{}</tr>{}</table>', header, body)

    @display(description="Nodes")
    def nodes_link(self, obj):
        url = reverse("admin:clusters_node_changelist")
        return format_html('<a class="underline" href="{}?pool={}">Nodes of {}</a>', url, obj.pk, obj.name)


# ------------------------------------------------------------------------------------------ backend form


class BackendForm(forms.ModelForm):
    """Secrets are write-only: the stored value is never rendered; leaving the field empty keeps it."""

    token = forms.CharField(required=False, strip=True, widget=UnfoldAdminPasswordWidget(render_value=False))
    kubeconfig = forms.CharField(
        required=False, widget=CodeEditor("yaml", attrs={"rows": 8}), bound_field_class=CodeBoundField
    )
    ocm_token = forms.CharField(
        required=False, strip=True, label="OCM token", widget=UnfoldAdminPasswordWidget(render_value=False)
    )
    clear_secrets = forms.BooleanField(required=False, label="Remove the stored token, kubeconfig and OCM token")

    class Meta:
        model = Backend
        fields = ["name", *BACKEND.form_fields()]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if "rosa_topology" in self.fields:  # as in the document: left out, it is the default (hcp)
            self.fields["rosa_topology"].required = False
        for key in BACKEND_SECRETS:
            if key not in self.fields:
                continue
            self.initial[key] = ""  # never sent to the browser
            stored = getattr(self.instance, key, "")
            self.fields[key].help_text = escape(
                f"Stored ({secret_marker(stored)}); leave empty to keep it, or paste a new value."
                if stored
                else "Not set."
            )

    def clean(self):
        cleaned = super().clean()
        for key in BACKEND_SECRETS:
            if key in self.fields and not cleaned.get(key):
                cleaned[key] = "" if cleaned.get("clear_secrets") else getattr(self.instance, key, "")
        body = {key: cleaned[key] for key in BACKEND.form_fields() if key in cleaned}  # early field errors
        try:
            BACKEND.parse(cleaned.get("name") or self.instance.name or "backend", body)
        except ConfigError as error:
            field = error.field if error.field in self.fields else None
            self.add_error(field, at_line(self, field, error.reason, error) if field else str(error))
        return cleaned


# ------------------------------------------------------------------------------------------ platforms


def _would_be(rows: list[dict]) -> str:
    """Scale from zero: the node each machine pool with no node yet would add, member or not."""
    if not rows:
        return ""
    table = format_html_join(
        "",
        "<tr><td class='pr-4 align-top'>{}</td><td>{}</td></tr>",
        ((row["node"], "member" if row["fits"] else "; ".join(row["reasons"])) for row in rows),
    )
    return format_html(
        '<p class="mt-2"><b>Would-be nodes (machine pools with no node yet):</b></p><table class="text-sm">{}</table>',
        table,
    )


class PlatformNodesMixin:
    """The `member_nodes` read-only field of PlatformAdmin: members, and for the others the reasons."""

    @display(description="Nodes: which, and why not the others")
    def member_nodes(self, obj):
        if obj is None or obj.pk is None:
            return "-"
        result = membership.explain_platform(obj)
        if result["error"]:
            return result["error"]
        members = ", ".join(result["members"]) or "none"
        others = result["others"][:MAX_EXPLAINED]
        more = len(result["others"]) - len(others)
        table = format_html_join(
            "",
            "<tr><td class='pr-4 align-top'>{}</td><td>{}</td></tr>",
            ((row["node"], "; ".join(row["reasons"])) for row in others),
        )
        return format_html(
            '<p><b>{} member node(s):</b> {}</p><p class="mt-2"><b>Not members ({}):</b></p>'
            '<table class="text-sm">{}</table>{}'
            '<p class="mt-2 text-xs">Resources are not part of membership. '
            "Not evaluated: {}.</p>",
            len(result["members"]),
            members,
            len(result["others"]),
            table,
            format_html("<p>… and {} more</p>", more) if more > 0 else "",
            ", ".join(result["not_evaluated"]),
        ) + _would_be(result["would_be"])
