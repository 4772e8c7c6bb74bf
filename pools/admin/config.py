"""Admin for backends, pod templates, resource validations, pools and platforms.

Saves go through `configs.store.apply` like the CLI's and the API's (configs.admin.SchemaAdminMixin turns
the form and its inlines into the OSMO document); see `portal.admin_base.ServiceBackedAdmin` for how a
refused save is shown.
"""

from __future__ import annotations

import functools

from django.contrib import admin, messages
from django.db.models import Count
from django.http import HttpResponseRedirect
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import mark_safe
from unfold.admin import StackedInline
from unfold.decorators import display
from unfold.utils import display_for_label

from access import actions
from access.admin.object_rights import ObjectRightsAdminMixin
from access.admin.site import PolicyAdminMixin, PoolAccessLinkMixin
from clusters.admin import BackendInventoryMixin
from clusters.models import Backend
from configs import store
from configs.admin import FormWordsMixin, SchemaAdminMixin
from configs.errors import ConfigInUse
from configs.models import ConfigType
from configs.revisions import Actor
from pools.admin.forms import PlatformForm, PlatformRowForm, PodTemplateForm, PoolForm, ResourceValidationForm
from pools.admin.node_match import PlatformNodeMatchMixin, PoolNodeMatchMixin
from pools.admin.nodes_capacity import BackendForm, PlatformNodesMixin
from pools.admin.preview import PoolPreviewMixin
from pools.config_types import PLATFORM
from pools.models import Platform, PodTemplate, Pool, ResourceValidation
from pools.services.node_match import NoMatchingNode, confirm_matches, no_match_warning, unmatched_platforms
from portal.admin_base import (
    RowCheckboxMixin,
    ServiceBackedAdmin,
    pending_error,
    pretty_json,
    revisions_link,
    saved_object_link,
)
from portal.errors import DomainError


class ConfigAdmin(RowCheckboxMixin, PolicyAdminMixin, SchemaAdminMixin, ServiceBackedAdmin):
    """Common behaviour: names are fixed once created, saves record revisions, deletes check referrers.
    Permissions: access.policy, config:Read / config:Update on config/<type>."""

    config_type: str

    def get_policy_resource(self, request, obj=None) -> str:
        return actions.config(self.config_type)

    def get_readonly_fields(self, request, obj=None):
        fields = [*super().get_readonly_fields(request, obj), "history"]
        return [*fields, "name"] if obj else fields

    def delete_model(self, request, obj):
        store.delete(self.config_type, obj.name, Actor.for_request(request, "admin"))

    def delete_queryset(self, request, queryset):
        for obj in queryset:
            self.delete_model(request, obj)

    def delete_view(self, request, object_id, extra_context=None):
        obj = self.get_object(request, object_id)
        referrers = store.referrers(self.config_type, obj) if obj else []
        if referrers:
            self.message_user(
                request,
                str(
                    ConfigInUse(
                        f"cannot be deleted: still referenced by {', '.join(referrers)}", field="name", value=obj.name
                    )
                ),
                messages.ERROR,
            )
            return self.response_post_save_change(request, obj)
        try:
            return super().delete_view(request, object_id, extra_context)
        except DomainError as error:  # referenced since the check: the service refused
            self.message_user(request, f"Not deleted: {error}", messages.ERROR)
            return self.response_post_save_change(request, obj)

    @display(description="History")
    def history(self, obj):
        return revisions_link(self.config_type, obj)


@admin.register(Backend)
class BackendAdmin(BackendInventoryMixin, ConfigAdmin):  # sync status, test/sync actions (clusters.admin)
    form = BackendForm  # connection settings with write-only secrets
    config_type = ConfigType.BACKEND
    list_display = ["name", "description", "namespace", "connection", "sync_badge", "node_count", "pool_count"]
    list_filter = ["sync_status", "connection"]
    search_fields = ["name", "description"]

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(_pools=Count("pools", distinct=True))

    @display(description="Pools", ordering="_pools")
    def pool_count(self, obj):
        return obj._pools


@admin.register(PodTemplate)
class PodTemplateAdmin(ConfigAdmin):
    config_type = ConfigType.POD_TEMPLATE
    form = PodTemplateForm
    list_display = ["name", "top_level_fields", "used_by", "updated_at"]
    search_fields = ["name"]
    fields = ["name", "body", "history"]

    def get_queryset(self, request):
        return (
            super()
            .get_queryset(request)
            .annotate(_pools=Count("pool_refs", distinct=True), _platforms=Count("platform_refs", distinct=True))
        )

    @display(description="Sets")
    def top_level_fields(self, obj):
        spec = obj.body.get("spec", {}) if isinstance(obj.body, dict) else {}
        return ", ".join(sorted(spec)) or "-"

    @display(description="Used by")
    def used_by(self, obj):
        return f"{obj._pools} pools, {obj._platforms} platforms"


@admin.register(ResourceValidation)
class ResourceValidationAdmin(ConfigAdmin):
    config_type = ConfigType.RESOURCE_VALIDATION
    form = ResourceValidationForm
    list_display = ["name", "rule_summary", "updated_at"]
    search_fields = ["name"]
    fields = ["name", "rules", "history"]

    @display(description="Rules")
    def rule_summary(self, obj):
        return "; ".join(f"{r.get('left_operand')} {r.get('operator')} {r.get('right_operand')}" for r in obj.rules[:4])


class PoolConfigInline(PolicyAdminMixin):
    """Inlines of pool and platform pages: the same policy as the pool itself."""

    policy_resource = "config/pool"


class PlatformInline(FormWordsMixin, PoolConfigInline, StackedInline):
    model = Platform
    form = PlatformRowForm
    words_schema = PLATFORM
    extra = 0
    show_change_link = True
    fields = ["name", *PLATFORM.form_fields()]


class ConfirmNoMatchMixin:
    """A save that leaves a platform matching no node of its backend (new, or matching some before) is refused
    once with a "Save anyway" box; ticked, the save goes through and the pool shows a warning."""

    def get_fieldsets(self, request, obj=None):
        fieldsets = super().get_fieldsets(request, obj)
        if not asks_to_confirm(request):
            return fieldsets
        first = fieldsets[0][1]["fields"]
        at = first.index("node_match") + 1 if "node_match" in first else len(first)
        return [(fieldsets[0][0], {**fieldsets[0][1], "fields": [*first[:at], "save_anyway", *first[at:]]})] + list(
            fieldsets[1:]
        )

    def save_related(self, request, form, formsets, change):
        pool_id, only = self.confirming(form)
        before = set(unmatched_platforms([pool_id]).get(pool_id, [])) if pool_id else set()
        super().save_related(request, form, formsets, change)
        if not form.cleaned_data.get("save_anyway"):
            confirm_matches(pool_id or form.instance.pk, before, only)

    def confirming(self, form) -> tuple[int | None, str | None]:
        """(the pool's id, None while it is new; the one platform to check, None for all of the pool's)."""
        return form.instance.pk, None


def asks_to_confirm(request) -> bool:
    return request.method == "POST" and (
        isinstance(pending_error(request), NoMatchingNode) or "save_anyway" in request.POST
    )


@admin.register(Pool)
class PoolAdmin(
    ConfirmNoMatchMixin,
    ObjectRightsAdminMixin,
    PoolAccessLinkMixin,
    PoolPreviewMixin,
    PoolNodeMatchMixin,
    ConfigAdmin,
):
    config_type = ConfigType.POOL
    form = PoolForm

    class Media:
        js = ("portal/pool-form.js",)  # the live node match and the default platform's choices

    list_display = ["name", "backend", "status_badge", "platform_list", "warning_list", "description"]
    list_filter = ["backend", "enable_maintenance"]
    search_fields = ["name", "description", "platforms__name"]
    list_select_related = ["backend"]
    inlines = [PlatformInline]
    fieldsets = [
        (
            None,
            {
                "fields": [
                    "name",
                    "description",
                    "backend",
                    "warnings",
                    "common_pod_template",
                    "common_resource_validations",
                    "node_match",
                    "default_platform",
                    "enable_maintenance",
                    "history",
                    "preview",
                ]
            },
        ),
        (
            "Variables and timeouts",
            {
                "fields": [
                    "common_default_variables",
                    "default_exec_timeout",
                    "max_exec_timeout",
                    "default_queue_timeout",
                    "max_queue_timeout",
                    "default_exit_actions",
                    "download_type",
                ]
            },
        ),
        ("GPU quota", {"fields": ["gpu_guarantee", "gpu_maximum", "gpu_weight", "topology_keys"]}),
    ]

    def get_changelist_instance(self, request):
        changelist = super().get_changelist_instance(request)
        pools = list(changelist.result_list)  # evaluated once; the same objects are rendered
        names: dict[int, list[str]] = {}
        rows = Platform.objects.filter(pool_id__in=[pool.pk for pool in pools]).values_list("pool_id", "name")
        for pool_id, name in rows:  # the names only: a platform's compiled config is large JSON
            names.setdefault(pool_id, []).append(name)
        unmatched = unmatched_platforms([pool.pk for pool in pools])
        for pool in pools:
            pool.platform_names = names.get(pool.pk, [])
            pool.unmatched = unmatched.get(pool.pk, [])
        return changelist

    def get_readonly_fields(self, request, obj=None):
        return [*super().get_readonly_fields(request, obj), "preview", "warnings", "node_match"]

    @display(description="Preview")
    def preview(self, obj):
        return saved_object_link(obj, "admin:pools_pool_preview", "Preview the Pod a task would get")

    @display(description="Warnings")
    def warnings(self, obj):
        names = unmatched_platforms([obj.pk]).get(obj.pk, []) if obj and obj.pk else []
        return warning_text(no_match_warning(names))

    @display(description="Warnings")
    def warning_list(self, obj):
        return warning_text(no_match_warning(obj.unmatched)) if obj.unmatched else ""

    @display(description="Status")
    def status_badge(self, obj):
        return status_label(obj.status)

    @display(description="Platforms")
    def platform_list(self, obj):
        names = getattr(obj, "platform_names", None)  # set for the list's rows by get_changelist_instance
        return ", ".join(sorted(names if names is not None else (p.name for p in obj.platforms.all()))) or "-"

    def get_fieldsets(self, request, obj=None):
        fieldsets = super().get_fieldsets(request, obj)
        if obj is None:
            first = [f for f in fieldsets[0][1]["fields"] if f not in ("history", "preview", "warnings")]
            return [(None, {"fields": first}), *fieldsets[1:]]
        return fieldsets


STATUS_LABELS = {"ONLINE": "success", "MAINTENANCE": "warning", "OFFLINE": "danger"}


@functools.cache
def status_label(status: str) -> str:
    """unfold's label for a pool status (what `@display(label=STATUS_LABELS)` renders), rendered once per
    status rather than once per row: a pool has one of three."""
    return mark_safe(display_for_label(status, "-", STATUS_LABELS))  # noqa: S308 (unfold's own markup)


@admin.register(Platform)
class PlatformAdmin(
    ConfirmNoMatchMixin,
    PlatformNodesMixin,
    PlatformNodeMatchMixin,
    RowCheckboxMixin,
    PolicyAdminMixin,
    SchemaAdminMixin,
    ServiceBackedAdmin,
):
    """A platform is part of its pool's document: saving one writes the pool (one POOL revision)."""

    policy_resource = "config/pool"
    config_type, form_schema = ConfigType.POOL, PLATFORM
    form = PlatformForm

    class Media:
        js = ("portal/pool-form.js",)  # the live node match

    list_display = ["name", "pool", "description", "host_network_allowed", "privileged_allowed"]
    list_filter = ["pool", "privileged_allowed", "host_network_allowed"]
    search_fields = ["name", "pool__name", "description"]
    list_select_related = ["pool"]
    fieldsets = [
        (
            None,
            {
                "fields": [
                    "pool",
                    "name",
                    "description",
                    "override_pod_template",
                    "resource_validations",
                    "node_match",
                    "host_network_allowed",
                    "privileged_allowed",
                    "default_variables",
                    "allowed_mounts",
                    "preview",
                ]
            },
        ),
        ("Resolved configuration and nodes", {"fields": ["resolved", "member_nodes"]}),
    ]
    computed = ["preview", "resolved", "member_nodes", "node_match"]

    def get_readonly_fields(self, request, obj=None):
        return ["pool", "name", *self.computed] if obj else self.computed

    def get_fieldsets(self, request, obj=None):
        fieldsets = super().get_fieldsets(request, obj)
        if obj:
            return fieldsets
        # nothing resolved before the first save; the change description stays (before: [:1] dropped it too)
        return [fieldset for fieldset in fieldsets if fieldset[0] != self.fieldsets[1][0]]

    def confirming(self, form):
        pool = form.instance.pool if form.instance.pk else form.cleaned_data["pool"]
        return pool.pk, form.instance.name if form.instance.pk else form.cleaned_data["name"]

    @display(description="Preview")
    def preview(self, obj):
        if obj is None or obj.pk is None:
            return "-"
        url = reverse("admin:pools_pool_preview", args=[obj.pool_id])
        return format_html(
            '<a class="underline" href="{}?platform={}">Preview a task on {}</a>', url, obj.name, obj.name
        )

    def config_name(self, form) -> str:
        return (form.instance.pool if form.instance.pk else form.cleaned_data["pool"]).name

    def config_description(self, form) -> str:
        return f"platform {form.instance.name if form.instance.pk else form.cleaned_data['name']}"

    def config_body(self, form, formsets, change):
        """The pool's document with this platform as the form and its inlines say."""
        body = store.show(ConfigType.POOL, self.config_name(form))
        name = form.instance.name if change else form.cleaned_data["name"]
        current = body["platforms"].get(name) if change else None
        body["platforms"][name] = PLATFORM.body_from_form(form.cleaned_data, current)
        return body

    def saved_pk(self, form) -> int:
        name = form.instance.name if form.instance.pk else form.cleaned_data["name"]
        return Platform.objects.values_list("pk", flat=True).get(pool__name=self.config_name(form), name=name)

    def delete_model(self, request, obj):
        body = store.show(ConfigType.POOL, obj.pool.name)
        body["platforms"].pop(obj.name, None)
        store.apply(
            ConfigType.POOL,
            obj.pool.name,
            body,
            Actor.for_request(request, "admin"),
            description=f"deleted platform {obj.name}",
        )

    def delete_view(self, request, object_id, extra_context=None):
        try:
            return super().delete_view(request, object_id, extra_context)
        except DomainError as error:  # e.g. deleting the pool's default platform; the transaction rolled back
            self.message_user(request, f"Not deleted: {error}", messages.ERROR)
            return HttpResponseRedirect(reverse("admin:pools_platform_change", args=[object_id]))

    @display(description="Resolved configuration")
    def resolved(self, obj):
        return pretty_json(obj.compiled) if obj and obj.compiled else "Computed when the pool is saved."


def warning_text(text: str) -> str:
    return format_html('<span class="pool-warning">⚠ {}</span>', text) if text else "-"
