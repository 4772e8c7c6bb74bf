"""Admin for the node inventory and capacity, and the cluster parts of the backend and platform pages.

* Nodes: a read-only list with filters (backend, pool, platform, GPU product, schedulable, type) whose
  query count does not grow with rows; the node page says which platforms it serves and why not others.
* Pool capacity: the pools as capacity figures (each node once), with per-platform figures on its page.
* `BackendInventoryMixin` (used by BackendAdmin): connection form with write-only secrets, sync status,
  and the "test connection" / "sync inventory now" actions.
* `PlatformNodesMixin` (used by PlatformAdmin): "which nodes, and why not the others".
"""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.db.models import Count, Prefetch, Q, Subquery
from django.http import HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.utils.html import escape, format_html, format_html_join
from unfold.admin import ModelAdmin
from unfold.decorators import action, display
from unfold.widgets import UnfoldAdminPasswordWidget, UnfoldAdminTextareaWidget

from access.admin.site import PolicyAdminMixin
from configs.errors import ConfigError
from configs.kinds import secret_marker
from pools.config_types import BACKEND, SECRET_FIELDS
from pools.kube.errors import KubeError
from pools.models import Backend, Node, NodeMembership, Platform, Pool, PoolCapacity, ResourceType
from pools.services import capacity, inventory, membership
from portal.admin_base import confirmation_page, pretty_json

RESOURCES = ("nvidia.com/gpu", "cpu", "memory", "ephemeral-storage")
SHORT = {"nvidia.com/gpu": "GPU", "cpu": "CPU", "memory": "Memory", "ephemeral-storage": "Storage"}
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


class SchedulableFilter(admin.SimpleListFilter):
    title, parameter_name = "schedulable", "schedulable"

    def lookups(self, request, model_admin):
        return [("yes", "Ready and not cordoned"), ("no", "Not ready or cordoned")]

    def queryset(self, request, queryset):
        ok = Q(ready=True, unschedulable=False)
        return {"yes": queryset.filter(ok), "no": queryset.exclude(ok)}.get(self.value(), queryset)


class ResourceTypeFilter(admin.SimpleListFilter):
    title, parameter_name = "type", "type"

    def lookups(self, request, model_admin):
        return ResourceType.choices

    def queryset(self, request, queryset):
        return membership.filter_resource_type(queryset, self.value()) if self.value() else queryset


def _used(node_or_figures, name: str) -> str:
    if isinstance(node_or_figures, Node):
        column = {"nvidia.com/gpu": "gpu", "ephemeral-storage": "storage"}.get(name, name)
        used, allocatable = getattr(node_or_figures, f"{column}_used"), getattr(node_or_figures, f"{column}_allocatable")
        return f"{capacity.show(name, used)} / {capacity.show(name, allocatable)}"
    return f"{capacity.show(name, node_or_figures.used[name])} / {capacity.show(name, node_or_figures.allocatable[name])}"


class ReadOnlyPolicyAdmin(PolicyAdminMixin, ModelAdmin):
    """Seen by whoever may read `policy_resource` (access.policy); written only by services."""

    def has_add_permission(self, request, *args):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(Node)
class NodeAdmin(ReadOnlyPolicyAdmin):
    policy_resource = "config/backend"
    list_display = ["name", "backend", "gpu_product", "type_badge", "schedulable_badge", "gpus", "cpus", "memory",
                    "pool_list", "last_seen"]
    list_filter = ["backend", PoolFilter, PlatformFilter, "gpu_product", SchedulableFilter, ResourceTypeFilter]
    search_fields = ["name", "gpu_product"]
    list_select_related = ["backend"]
    list_per_page = 100
    fieldsets = [
        (None, {"fields": ["name", "backend", "gpu_product", "ready", "unschedulable", "first_seen", "last_seen",
                           "resource_version"]}),
        ("Pools and platforms", {"fields": ["platform_verdicts"]}),
        ("Resources", {"fields": ["resource_table", "requested_workload", "requested_other", "workload_pods",
                                  "other_pods"]}),
        ("As reported", {"fields": ["labels_json", "taints_json", "conditions_json", "allocatable_json",
                                    "capacity_json"]}),
    ]

    def get_queryset(self, request):
        members = NodeMembership.objects.select_related("pool", "platform").order_by("pool__name", "platform__name")
        return membership.with_pool_count(super().get_queryset(request)).prefetch_related(
            Prefetch("memberships", queryset=members))

    def get_readonly_fields(self, request, obj=None):
        return [field for fieldset in self.fieldsets for field in fieldset[1]["fields"]]

    @display(description="Type", ordering="pool_count",
             label={ResourceType.SHARED: "info", ResourceType.RESERVED: "success", ResourceType.UNUSED: "warning"})
    def type_badge(self, obj):
        return membership.resource_type(obj.pool_count)

    @display(description="Schedulable", label={"yes": "success", "cordoned": "warning", "not ready": "danger"})
    def schedulable_badge(self, obj):
        return "not ready" if not obj.ready else "cordoned" if obj.unschedulable else "yes"

    @display(description="GPU used / alloc", ordering="gpu_allocatable")
    def gpus(self, obj):
        return _used(obj, "nvidia.com/gpu")

    @display(description="CPU used / alloc", ordering="cpu_allocatable")
    def cpus(self, obj):
        return _used(obj, "cpu")

    @display(description="Memory used / alloc", ordering="memory_allocatable")
    def memory(self, obj):
        return _used(obj, "memory")

    @display(description="Pools / platforms")
    def pool_list(self, obj):
        return ", ".join(f"{m.pool.name}/{m.platform.name}" for m in obj.memberships.all()) or "-"

    @display(description="Every platform of this backend")
    def platform_verdicts(self, obj):
        rows = membership.explain_node(obj)
        if not rows:
            return "No platform uses this node's backend."
        return format_html('<table class="text-sm">{}</table>', format_html_join(
            "", '<tr><td class="pr-4 align-top">{}</td><td class="pr-4 align-top">{}</td><td>{}</td></tr>',
            ((row["platform"], "member" if row["fits"] else "not a member", "; ".join(row["reasons"]) or "-")
             for row in rows)))

    @display(description="Used / allocatable")
    def resource_table(self, obj):
        return format_html_join(", ", "{}: {}", ((SHORT[name], _used(obj, name)) for name in RESOURCES))

    @display(description="Labels")
    def labels_json(self, obj):
        return pretty_json(obj.labels)

    @display(description="Taints")
    def taints_json(self, obj):
        return pretty_json(obj.taints)

    @display(description="Conditions")
    def conditions_json(self, obj):
        return pretty_json(obj.conditions)

    @display(description="Allocatable")
    def allocatable_json(self, obj):
        return pretty_json(obj.allocatable)

    @display(description="Capacity")
    def capacity_json(self, obj):
        return pretty_json(obj.capacity)


# ------------------------------------------------------------------------------------------ pool capacity


@admin.register(PoolCapacity)
class PoolCapacityAdmin(ReadOnlyPolicyAdmin):
    policy_resource = "config/pool"
    list_display = ["name", "backend", "node_count", "gpus", "free_gpus", "cpus", "memory", "storage"]
    list_filter = ["backend"]
    search_fields = ["name"]
    list_select_related = ["backend"]
    fields = ["name", "backend", "platform_capacity", "nodes_link"]
    readonly_fields = fields

    def get_changelist_instance(self, request):
        changelist = super().get_changelist_instance(request)
        pools = list(changelist.result_list)  # evaluated once; the same objects are rendered
        totals = capacity.pool_totals([pool.pk for pool in pools])
        for pool in pools:
            pool.figures = totals[pool.pk]
        return changelist

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
        header = format_html_join("", "<th class='pr-4 text-left'>{}</th>",
                                  ((h,) for h in ("", "Nodes", *(SHORT[n] for n in RESOURCES), "Free GPU")))
        body = format_html_join("", "<tr><td class='pr-4'>{}</td><td class='pr-4'>{}</td>{}<td>{}</td></tr>", (
            (name, figures.nodes,
             format_html_join("", "<td class='pr-4'>{}</td>", ((_used(figures, n),) for n in RESOURCES)),
             figures.free["nvidia.com/gpu"]) for name, figures in rows))
        return format_html('<table class="text-sm"><tr>{}</tr>{}</table>', header, body)

    @display(description="Nodes")
    def nodes_link(self, obj):
        url = reverse("admin:pools_node_changelist")
        return format_html('<a class="underline" href="{}?pool={}">Nodes of {}</a>', url, obj.pk, obj.name)


# ------------------------------------------------------------------------------------------ backends


class BackendForm(forms.ModelForm):
    """Secrets are write-only: the stored value is never rendered; leaving the field empty keeps it."""

    token = forms.CharField(required=False, strip=True, widget=UnfoldAdminPasswordWidget(render_value=False))
    kubeconfig = forms.CharField(required=False, widget=UnfoldAdminTextareaWidget(attrs={"rows": 6}))
    clear_secrets = forms.BooleanField(required=False, label="Remove the stored token and kubeconfig")

    class Meta:
        model = Backend
        fields = ["name", *BACKEND.form_fields()]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for key in SECRET_FIELDS:
            if key not in self.fields:
                continue
            self.initial[key] = ""  # never sent to the browser
            stored = getattr(self.instance, key, "")
            self.fields[key].help_text = escape(f"Stored ({secret_marker(stored)}); leave empty to keep it, or "
                                                "paste a new value." if stored else "Not set.")

    def clean(self):
        cleaned = super().clean()
        for key in SECRET_FIELDS:
            if key in self.fields and not cleaned.get(key):
                cleaned[key] = "" if cleaned.get("clear_secrets") else getattr(self.instance, key, "")
        body = {key: cleaned[key] for key in ("namespace", "connection", "api_url", "token", "ca_cert",
                                              "verify_tls", "kubeconfig", "kube_context") if key in cleaned}
        try:
            BACKEND.parse(cleaned.get("name") or self.instance.name or "backend", body)
        except ConfigError as error:
            field = error.field if error.field in self.fields else None
            self.add_error(field, error.reason if field else str(error))
        return cleaned


class BackendInventoryMixin:
    """Connection form, sync status and cluster actions for BackendAdmin (see pools.admin.config)."""

    form = BackendForm
    actions = ["test_connection", "sync_inventory"]
    actions_detail = ["test_connection_detail", "sync_inventory_detail"]
    STATUS_FIELDS = ["sync_badge", "online", "last_sync_at", "last_error", "last_error_at", "server_version",
                     "nodes_link"]
    fieldsets = [
        (None, {"fields": ["name", "description", "namespace", "scheduler_name", "dashboard_url", "grafana_url",
                           "history"]}),
        ("Connection", {"fields": ["connection", "api_url", "token", "ca_cert", "verify_tls", "kubeconfig",
                                   "kube_context", "clear_secrets"]}),
        ("Inventory", {"fields": STATUS_FIELDS}),
    ]

    def get_fieldsets(self, request, obj=None):
        if obj is None:
            return [(None, {"fields": [f for f in self.fieldsets[0][1]["fields"] if f != "history"]}),
                    self.fieldsets[1]]
        return self.fieldsets

    def get_readonly_fields(self, request, obj=None):
        return [*super().get_readonly_fields(request, obj), *self.STATUS_FIELDS]

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(_nodes=Count("nodes", distinct=True))

    @display(description="Sync", label={"ok": "success", "degraded": "danger", "never": "warning"})
    def sync_badge(self, obj):
        return obj.sync_status

    @display(description="Nodes", ordering="_nodes")
    def node_count(self, obj):
        return obj._nodes

    @display(description="Nodes")
    def nodes_link(self, obj):
        if obj is None or obj.pk is None:
            return "-"
        url = reverse("admin:pools_node_changelist")
        return format_html('<a class="underline" href="{}?backend__id__exact={}">{} nodes</a>', url, obj.pk,
                           obj.nodes.count())

    @admin.action(description="Test connection (version and permissions)", permissions=["change"])
    def test_connection(self, request, queryset):
        for backend in queryset:
            self._test(request, backend)

    @admin.action(description="Sync inventory now", permissions=["change"])
    def sync_inventory(self, request, queryset):
        for backend in queryset:
            self._sync(request, backend)

    @action(description="Test connection", url_path="test-connection", permissions=["change"])
    def test_connection_detail(self, request, object_id):
        """GET: a confirmation page (the test records the cluster's version); only its POST acts."""
        return self._confirmed(
            request, object_id, self._test, heading="Test the connection to {name}?", confirm_label="Test connection",
            explanation="This contacts the cluster, checks the permissions the portal needs (creating and deleting "
                        "a probe pod) and records the server version.")

    @action(description="Sync inventory now", url_path="sync-inventory", permissions=["change"])
    def sync_inventory_detail(self, request, object_id):
        """GET: a confirmation page; only its POST re-reads the cluster's nodes and pods."""
        return self._confirmed(
            request, object_id, self._sync, heading="Sync the inventory of {name} now?", confirm_label="Sync inventory",
            explanation="This lists the cluster's nodes and pods and rewrites the node inventory, pool membership "
                        "and capacity from them.")

    def _confirmed(self, request, object_id, act, *, heading: str, confirm_label: str, explanation: str):
        """State changes never happen on GET: a GET shows what the POST would do."""
        backend = get_object_or_404(Backend, pk=object_id)
        change_url = reverse("admin:pools_backend_change", args=[object_id])
        if request.method != "POST":
            return confirmation_page(self, request, heading=heading.format(name=backend.name),
                                     explanation=explanation, confirm_label=confirm_label, cancel_url=change_url)
        act(request, backend)
        return HttpResponseRedirect(change_url)

    def _test(self, request, backend):
        try:
            report = inventory.check_connection(backend)
        except KubeError as error:
            self.message_user(request, f"{backend.name}: {error}", messages.ERROR)
            return
        level = messages.SUCCESS if report.ok else messages.WARNING
        self.message_user(request, format_html("<br>".join(["{}"] * len(report.lines())), *report.lines()), level)

    def _sync(self, request, backend):
        try:
            result = inventory.sync_backend(backend.pk)
        except KubeError as error:
            self.message_user(request, f"{backend.name}: sync failed, inventory left as it was: {error}",
                              messages.ERROR)
            return
        self.message_user(request, f"{backend.name}: {result.nodes} nodes ({result.created} new, {result.updated} "
                                   f"changed, {result.deleted} gone), {result.pods} pods", messages.SUCCESS)


# ------------------------------------------------------------------------------------------ platforms


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
        table = format_html_join("", "<tr><td class='pr-4 align-top'>{}</td><td>{}</td></tr>",
                                 ((row["node"], "; ".join(row["reasons"])) for row in others))
        return format_html(
            '<p><b>{} member node(s):</b> {}</p><p class="mt-2"><b>Not members ({}):</b></p>'
            '<table class="text-sm">{}</table>{}<p class="mt-2 text-xs">Resources are not part of membership. '
            "Not evaluated: {}.</p>",
            len(result["members"]), members, len(result["others"]), table,
            format_html("<p>… and {} more</p>", more) if more > 0 else "", ", ".join(result["not_evaluated"]))
