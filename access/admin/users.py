"""Users (with their roles and tokens), API tokens, the audit trail and failed sign-ins in the admin.

Django's Group admin is removed: a role *is* its group, managed on the Role pages. The user page edits
roles through `access.services.roles` (audited, tokens follow); superuser / staff flags are not shown
because they grant nothing here: `osmo-admin` does.
"""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin as BaseUserAdmin
from django.contrib.auth.models import Group
from django.db.models import Prefetch
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html
from unfold.admin import ModelAdmin
from unfold.decorators import action, display
from unfold.forms import AdminPasswordChangeForm, UserChangeForm, UserCreationForm

from access.admin.site import PolicyAdminMixin
from access.models import APIToken, AuditEvent, LoginAttempt, Role
from access.policy import DEFAULT_ROLE
from access.services import roles, tokens
from configs.revisions import Actor
from portal.admin_base import ReadOnlyAdminMixin

User = get_user_model()

for model in (User, Group):
    if admin.site.is_registered(model):
        admin.site.unregister(model)


class UserRolesForm(UserChangeForm):
    roles = forms.ModelMultipleChoiceField(
        queryset=Role.objects.exclude(name=DEFAULT_ROLE).order_by("name"),
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text=f"Everyone also holds {DEFAULT_ROLE}. Roles with sync mode 'force' follow the IdP at sign-in.",
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.pk:
            self.initial["roles"] = list(Role.objects.filter(group__user=self.instance.pk))


@admin.register(User)
class UserAdmin(PolicyAdminMixin, BaseUserAdmin, ModelAdmin):
    policy_resource = "config/user"
    form = UserRolesForm
    add_form = UserCreationForm
    change_password_form = AdminPasswordChangeForm
    list_display = ["username", "email", "role_list", "is_active", "last_login"]
    list_filter = ["is_active", ("groups", admin.RelatedOnlyFieldListFilter)]
    search_fields = ["username", "email", "first_name", "last_name"]
    readonly_fields = ["last_login", "date_joined", "token_summary", "explain"]
    fieldsets = [
        (None, {"fields": ["username", "password"]}),
        ("Personal info", {"fields": ["first_name", "last_name", "email"]}),
        ("Access", {"fields": ["is_active", "roles", "token_summary", "explain"]}),
        ("Dates", {"fields": ["last_login", "date_joined"]}),
    ]

    def get_queryset(self, request):
        return (
            super()
            .get_queryset(request)
            .prefetch_related(Prefetch("groups", queryset=Group.objects.select_related("role").order_by("name")))
        )

    def save_related(self, request, form, formsets, change):
        super().save_related(request, form, formsets, change)
        if "roles" in form.cleaned_data:
            change = roles.set_user_roles(
                form.instance, [role.name for role in form.cleaned_data["roles"]], Actor.for_request(request, "admin")
            )
            if change.changed:
                self.message_user(
                    request,
                    f"Roles added: {', '.join(change.added) or '-'}; removed: {', '.join(change.removed) or '-'}",
                    messages.INFO,
                )

    @display(description="Roles")
    def role_list(self, obj):
        return ", ".join(group.name for group in obj.groups.all() if hasattr(group, "role")) or "-"

    @display(description="API tokens")
    def token_summary(self, obj):
        if obj is None or obj.pk is None:
            return "-"
        live = obj.api_tokens.filter(revoked_at__isnull=True, expires_at__gt=timezone.now()).count()
        return format_html(
            '<a class="underline" href="{}?user__id__exact={}">{} active</a>',
            reverse("admin:access_apitoken_changelist"),
            obj.pk,
            live,
        )

    @display(description="Pool access")
    def explain(self, obj):
        if obj is None or obj.pk is None:
            return "-"
        return format_html(
            '<a class="underline" href="{}?user={}">Why can / can\'t {} use a pool?</a>',
            reverse("admin:access_explain"),
            obj.username,
            obj.username,
        )


@admin.register(APIToken)
class APITokenAdmin(PolicyAdminMixin, ModelAdmin):
    policy_resource = "config/user"
    list_display = ["name", "user", "prefix", "role_list", "state", "expires_at", "last_used_at"]
    list_filter = ["user"]
    search_fields = ["name", "user__username", "prefix"]
    list_select_related = ["user"]
    fields = ["user", "name", "prefix", "role_list", "state", "created_at", "expires_at", "last_used_at", "revoked_at"]
    readonly_fields = fields
    actions = ["revoke"]

    def get_queryset(self, request):
        return super().get_queryset(request).prefetch_related("roles")

    def has_add_permission(self, request, *args):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    @display(description="Roles")
    def role_list(self, obj):
        return ", ".join(sorted(role.name for role in obj.roles.all())) or "-"

    @display(description="State", label={"active": "success", "expired": "warning", "revoked": "danger"})
    def state(self, obj):
        return tokens.status(obj)

    @action(description="Revoke selected tokens", permissions=["change"])
    def revoke(self, request, queryset):
        actor = Actor.for_request(request, "admin")
        for token in queryset.select_related("user"):
            tokens.revoke(token.user, token.name, actor)
        self.message_user(request, f"{queryset.count()} token(s) revoked", messages.SUCCESS)


@admin.register(AuditEvent)
class AuditEventAdmin(ReadOnlyAdminMixin, PolicyAdminMixin, ModelAdmin):
    policy_resource = "config/audit"
    list_display = ["at", "actor_name", "action", "target", "outcome_badge", "source", "remote_addr"]
    list_filter = ["action", "outcome", "source"]
    search_fields = ["actor_name", "action", "target"]
    date_hierarchy = "at"
    fields = ["at", "actor", "actor_name", "action", "target", "outcome", "source", "remote_addr", "detail"]
    readonly_fields = fields

    @display(description="Outcome", label={"ok": "success", "denied": "danger", "error": "warning"})
    def outcome_badge(self, obj):
        return obj.outcome


@admin.register(LoginAttempt)
class SignInFailureAdmin(PolicyAdminMixin, ModelAdmin):
    """Failed password sign-ins counted by django-axes (access/throttle.py). Deleting rows unlocks."""

    policy_resource = "config/user"
    list_display = ["username", "ip_address", "failures_since_start", "attempt_time", "path_info"]
    search_fields = ["username", "ip_address"]
    date_hierarchy = "attempt_time"
    fields = ["username", "ip_address", "user_agent", "failures_since_start", "attempt_time", "path_info"]
    readonly_fields = fields
    ordering = ["-attempt_time"]

    def has_add_permission(self, request, *args):
        return False

    def has_change_permission(self, request, obj=None):
        return False
