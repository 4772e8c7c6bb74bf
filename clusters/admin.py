"""Admin for the node inventory and the cluster side of the backend page.

* Nodes: a read-only list with filters (backend, GPU product, schedulable) whose query count does not
  grow with rows. The pools app registers a subclass of `NodeAdmin` in its place that adds what joins
  nodes to pools (membership filters and columns, the platform verdicts): clusters knows no pools.
* `BackendInventoryMixin` (used by the backend's config admin): sync status, the node count and link,
  and the "test connection" / "sync inventory now" actions.
"""

from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import Count, Q
from django.http import HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.utils import dateformat, timezone
from django.utils.html import format_html, format_html_join
from unfold.admin import ModelAdmin
from unfold.decorators import action, display

from access.admin.site import PolicyAdminMixin
from clusters import inventory
from clusters.kube.errors import KubeError
from clusters.models import CAPACITY_COLUMNS, Backend, Node
from clusters.units import used_of_allocatable
from portal.admin_base import ReadOnlyAdminMixin, confirmation_page, pretty_json
from portal.templatetags.admin_words import ago

RESOURCES = ("nvidia.com/gpu", "cpu", "memory", "ephemeral-storage")
SHORT = {"nvidia.com/gpu": "GPU", "cpu": "CPU", "memory": "Memory", "ephemeral-storage": "Storage"}


def node_used(node: Node, name: str) -> str:
    """`used / allocatable` of one resource of a node, in readable units."""
    column = CAPACITY_COLUMNS[name]
    return used_of_allocatable(name, getattr(node, f"{column}_used"), getattr(node, f"{column}_allocatable"))


class ReadOnlyPolicyAdmin(ReadOnlyAdminMixin, PolicyAdminMixin, ModelAdmin):
    """Seen by whoever may read `policy_resource` (access.policy); written only by services."""


class SchedulableFilter(admin.SimpleListFilter):
    title, parameter_name = "schedulable", "schedulable"

    def lookups(self, request, model_admin):
        return [("yes", "Ready and not cordoned"), ("no", "Not ready or cordoned")]

    def queryset(self, request, queryset):
        ok = Q(ready=True, unschedulable=False)
        return {"yes": queryset.filter(ok), "no": queryset.exclude(ok)}.get(self.value(), queryset)


@admin.register(Node)
class NodeAdmin(ReadOnlyPolicyAdmin):
    policy_resource = "config/backend"
    list_display = ["name", "backend", "gpu_product", "schedulable_badge", "gpus", "cpus", "memory", "last_seen_ago"]
    list_filter = ["backend", "gpu_product", SchedulableFilter]
    search_fields = ["name", "gpu_product"]
    list_select_related = ["backend"]
    list_per_page = 100
    fieldsets = [
        (
            None,
            {
                "fields": [
                    "name",
                    "backend",
                    "gpu_product",
                    "ready",
                    "unschedulable",
                    "first_seen",
                    "last_seen",
                    "resource_version",
                ]
            },
        ),
        (
            "Resources",
            {"fields": ["resource_table", "requested_workload", "requested_other", "workload_pods", "other_pods"]},
        ),
        (
            "As reported",
            {"fields": ["labels_json", "taints_json", "conditions_json", "allocatable_json", "capacity_json"]},
        ),
    ]

    def get_readonly_fields(self, request, obj=None):
        return [field for fieldset in self.fieldsets for field in fieldset[1]["fields"]]

    @display(description="Last seen", ordering="last_seen")
    def last_seen_ago(self, obj):
        """ "3 minutes ago" on one line (a full date took four lines of the list at 1440 px), the time on hover."""
        exact = dateformat.format(timezone.localtime(obj.last_seen), "Y-m-d H:i:s e")
        return format_html('<span class="whitespace-nowrap" title="{}">{}</span>', exact, ago(obj.last_seen))

    @display(description="Schedulable", label={"yes": "success", "cordoned": "warning", "not ready": "danger"})
    def schedulable_badge(self, obj):
        return "not ready" if not obj.ready else "cordoned" if obj.unschedulable else "yes"

    @display(description="GPU used / alloc", ordering="gpu_allocatable")
    def gpus(self, obj):
        return node_used(obj, "nvidia.com/gpu")

    @display(description="CPU used / alloc", ordering="cpu_allocatable")
    def cpus(self, obj):
        return node_used(obj, "cpu")

    @display(description="Memory used / alloc", ordering="memory_allocatable")
    def memory(self, obj):
        return node_used(obj, "memory")

    @display(description="Used / allocatable")
    def resource_table(self, obj):
        return format_html_join(", ", "{}: {}", ((SHORT[name], node_used(obj, name)) for name in RESOURCES))

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


class BackendInventoryMixin:
    """Sync status and cluster actions for the backend's admin (its connection form is the config admin's)."""

    actions = ["test_connection", "sync_inventory"]
    actions_detail = ["test_connection_detail", "sync_inventory_detail"]

    class Media:  # the list's sync and test actions say "Syncing…" / "Testing…" while they run
        js = ["portal/busy.js"]

    STATUS_FIELDS = [
        "sync_badge",
        "online",
        "last_sync_at",
        "last_error",
        "last_error_at",
        "server_version",
        "nodes_link",
    ]
    fieldsets = [
        (
            None,
            {
                "fields": [
                    "name",
                    "description",
                    "namespace",
                    "scheduler_name",
                    "control_image",
                    "quota_scheduler",
                    "dashboard_url",
                    "grafana_url",
                    "history",
                ]
            },
        ),
        (
            "Connection",
            {
                "fields": [
                    "connection",
                    "api_url",
                    "token",
                    "ca_cert",
                    "verify_tls",
                    "kubeconfig",
                    "kube_context",
                    "clear_secrets",
                ]
            },
        ),
        (
            "Machine pools",
            {
                "fields": [
                    "machine_provider",
                    "ocm_url",
                    "ocm_cluster_id",
                    "ocm_token",
                    "rosa_topology",
                    "aws_region",
                    "karpenter_node_class",
                ]
            },
        ),
        ("Inventory", {"fields": STATUS_FIELDS}),
    ]

    def get_fieldsets(self, request, obj=None):
        if obj is None:
            fieldsets = [
                (None, {"fields": [f for f in self.fieldsets[0][1]["fields"] if f != "history"]}),
                self.fieldsets[1],
                self.fieldsets[2],
            ]
        else:
            fieldsets = self.fieldsets
        return self.with_change_description(request, obj, fieldsets)  # configs.admin.ChangeDescriptionMixin

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
        url = reverse("admin:clusters_node_changelist")
        return format_html(
            '<a class="underline" href="{}?backend__id__exact={}">{} nodes</a>', url, obj.pk, obj.nodes.count()
        )

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
            request,
            object_id,
            self._test,
            heading="Test the connection to {name}?",
            confirm_label="Test connection",
            explanation="This contacts the cluster, checks the permissions the portal needs (creating and deleting "
            "a probe pod) and records the server version.",
            busy_label="Testing…",
        )

    @action(description="Sync inventory now", url_path="sync-inventory", permissions=["change"])
    def sync_inventory_detail(self, request, object_id):
        """GET: a confirmation page; only its POST re-reads the cluster's nodes and pods."""
        return self._confirmed(
            request,
            object_id,
            self._sync,
            heading="Sync the inventory of {name} now?",
            confirm_label="Sync inventory",
            explanation="This lists the cluster's nodes and pods and rewrites the node inventory, pool membership "
            "and capacity from them.",
            busy_label="Syncing…",
        )

    def _confirmed(
        self, request, object_id, act, *, heading: str, confirm_label: str, explanation: str, busy_label: str
    ):
        """State changes never happen on GET: a GET shows what the POST would do."""
        backend = get_object_or_404(Backend, pk=object_id)
        change_url = reverse("admin:clusters_backend_change", args=[object_id])
        if request.method != "POST":
            return confirmation_page(
                self,
                request,
                heading=heading.format(name=backend.name),
                explanation=explanation,
                confirm_label=confirm_label,
                cancel_url=change_url,
                busy_label=busy_label,
            )
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
            self.message_user(
                request, f"{backend.name}: sync failed, inventory left as it was: {error}", messages.ERROR
            )
            return
        self.message_user(
            request,
            f"{backend.name}: {result.nodes} nodes ({result.created} new, {result.updated} "
            f"changed, {result.deleted} gone), {result.pods} pods",
            messages.SUCCESS,
        )
