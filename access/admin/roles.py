"""Role admin: policies edited as YAML/JSON (6.0 path actions accepted and converted), saved through the
config service (validation, immutability, history, audit), plus the "why can / can't" explain page."""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import Count
from django.http import HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join
from unfold.decorators import display

from access import actions, policy
from access.admin.site import PolicyAdminMixin
from access.config_types import ROLE
from access.documents import BUILTIN_ROLES
from access.matching import check_action
from access.models import Role
from access.services import users
from configs import store
from configs.admin import ChangeDescriptionMixin, FormWordsMixin
from configs.errors import ConfigError
from configs.models import ConfigType
from configs.revisions import Actor
from portal.admin_base import DocumentField, ServiceBackedAdmin
from portal.errors import DomainError
from portal.widgets import at_line


class RoleForm(forms.ModelForm):
    policies = DocumentField(
        required=False,
        help_text=(
            "A list of policies: effect (Allow or Deny), actions (workflow:Create, workflow:*, config:Read, *:* …), "
            "resources (pool/team*, config/pool, * …; empty = global actions only). OSMO 6.0 path actions "
            "({base, path, method}) are converted."
        ),
    )
    external_roles = forms.CharField(
        required=False,
        help_text=(
            "IdP group or role names that grant this role at sign-in (comma-separated); the role's own name "
            "always does."
        ),
    )
    force = forms.BooleanField(required=False, help_text="Change an immutable role's policies anyway.")

    class Meta:
        model = Role
        fields = ["name", "description", "policies", "immutable", "sync_mode", "external_roles"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.pk:
            self.initial["external_roles"] = ", ".join(self.instance.external_roles)

    def clean_policies(self):
        return self.cleaned_data.get("policies") or []

    def clean(self):
        cleaned = super().clean()
        name = cleaned.get("name") or self.instance.name
        if name and not self.errors:
            try:
                self.document = ROLE.parse(name, self.body())
            except ConfigError as error:
                field = error.field.split("[")[0].split(".")[0]
                if field in self.fields:
                    self.add_error(field, at_line(self, field, str(error), error))  # a policy: at its line
                else:
                    self.add_error(None, str(error))
        return cleaned

    def body(self) -> dict:
        return ROLE.body_from_form(self.cleaned_data)


@admin.register(Role)
class RoleAdmin(ChangeDescriptionMixin, FormWordsMixin, PolicyAdminMixin, ServiceBackedAdmin):
    policy_resource = "config/role"
    words_schema = ROLE
    form = RoleForm
    list_display = ["name", "description", "policy_summary", "immutable", "sync_mode", "member_count"]
    list_filter = ["immutable", "sync_mode"]
    search_fields = ["name", "description", "external_roles"]
    readonly_fields = ["members", "history", "explain"]
    fieldsets = [
        (None, {"fields": ["name", "description", "policies", "immutable", "force"]}),
        ("Identity provider", {"fields": ["sync_mode", "external_roles"]}),
        ("Holders", {"fields": ["members", "history", "explain"]}),
    ]

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(_members=Count("group__user", distinct=True))

    def get_readonly_fields(self, request, obj=None):
        return [*self.readonly_fields, "name"] if obj else self.readonly_fields

    def get_fieldsets(self, request, obj=None):
        return self.with_change_description(request, obj, self.fieldsets[:2] if obj is None else self.fieldsets)

    def has_delete_permission(self, request, obj=None):
        return (obj is None or obj.name not in BUILTIN_ROLES) and super().has_delete_permission(request, obj)

    def save_model(self, request, obj, form, change):
        result = store.apply(
            ConfigType.ROLE,
            obj.name,
            form.body(),
            Actor.for_request(request, "admin"),
            description=self.revision_description(form),
        )
        for warning in result.warnings:
            self.message_user(request, warning, messages.WARNING)
        saved = Role.objects.get(name=obj.name)
        obj.pk, obj.group_id = saved.pk, saved.group_id

    def save_related(self, request, form, formsets, change):
        """Nothing: the role was written whole by the config service."""

    def delete_model(self, request, obj):
        store.delete(ConfigType.ROLE, obj.name, Actor.for_request(request, "admin"))

    def delete_queryset(self, request, queryset):
        for obj in queryset:
            self.delete_model(request, obj)

    def delete_view(self, request, object_id, extra_context=None):
        try:
            return super().delete_view(request, object_id, extra_context)
        except DomainError as error:
            self.message_user(request, f"Not deleted: {error}", messages.ERROR)
            return HttpResponseRedirect(reverse("admin:access_role_change", args=[object_id]))

    @display(description="Policies")
    def policy_summary(self, obj):
        parts = [
            f"{p.get('effect', 'Allow')} {', '.join(p.get('actions', []))} on "
            f"{', '.join(p.get('resources') or ['(global)'])}"
            for p in obj.policies[:3]
        ]
        return "; ".join(parts) + (" …" if len(obj.policies) > 3 else "") if parts else "-"

    @display(description="Members", ordering="_members")
    def member_count(self, obj):
        return obj._members

    @display(description="Members")
    def members(self, obj):
        holders = obj.group.user_set.order_by("username").only("pk", "username")[:200]
        return (
            format_html_join(
                ", ",
                '<a class="underline" href="{}">{}</a>',
                ((reverse("admin:auth_user_change", args=[user.pk]), user.username) for user in holders),
            )
            or "-"
        )

    @display(description="History")
    def history(self, obj):
        return format_html(
            '<a class="underline" href="{}?config_type__exact=ROLE&name={}">Revisions of {}</a>',
            reverse("admin:configs_revision_changelist"),
            obj.name,
            obj.name,
        )

    @display(description="Access")
    def explain(self, obj):
        return format_html(
            '<a class="underline" href="{}">Why can / can\'t a user use a pool?</a>', reverse("admin:access_explain")
        )

    # --- the explain page ----------------------------------------------------------------------------

    def get_urls(self):
        view = self.admin_site.admin_view(self.explain_view)
        return [path("explain/", view, name="access_explain"), *super().get_urls()]

    def explain_view(self, request):
        """Why can / can't USER use POOL (or do ACTION on it)? Same answer as `manage.py access explain`."""
        if not (
            self.has_view_permission(request) and policy.decide(request, actions.CONFIG_READ, actions.config("user"))
        ):
            raise PermissionDenied
        username, pool = request.GET.get("user", "").strip(), request.GET.get("pool", "").strip()
        action = request.GET.get("action", "").strip() or policy.POOL_ACTION
        result, error = None, ""
        if not check_action(action):
            error = f"{action!r} is not an action such as workflow:Create"
        elif username and pool:
            try:
                result = policy.explain(users.get(username), action, actions.pool(pool))
            except DomainError as problem:
                error = str(problem)
        context = {
            **self.admin_site.each_context(request),
            "title": "Why can / can't a user use a pool?",
            "opts": self.model._meta,
            "username": username,
            "pool": pool,
            "action": action,
            "result": result,
            "error": error,
            "pools": policy.resource_names("pool"),
        }
        return TemplateResponse(request, "admin/access/explain.html", context)
