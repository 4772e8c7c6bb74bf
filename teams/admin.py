"""Admin for departments and projects. Created through `teams.services` (validation, the project's role and
its revision, audit); once created they are read-only here, but for a project's priority, which its
department's admins and team admins change here (through `teams.services.update_project`, audited: the
project's history). Rights: `config:Read` / `config:Update` on
`config/team` (access.policy), like every config page; a department's admins (object right, appointed on
the department's page by a team admin) see that department and its projects and add projects to it."""

from __future__ import annotations

from django import forms
from django.contrib import admin
from django.db.models import Count
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from unfold.decorators import display
from unfold.widgets import UnfoldAdminPasswordWidget

from access.admin.object_rights import ObjectRightsAdminMixin
from access.admin.site import PolicyAdminMixin
from configs.revisions import Actor
from portal import webhooks
from portal.admin_base import ServiceBackedAdmin
from teams import services
from teams.models import Department, Project


class _CreateOnly(PolicyAdminMixin, ServiceBackedAdmin):
    policy_resource = services.RESOURCE

    def has_change_permission(self, request, obj=None):
        return obj is None and super().has_change_permission(request, obj)

    def has_delete_permission(self, request, obj=None):
        return False

    def save_related(self, request, form, formsets, change):
        """Nothing: the service wrote the object whole."""


@admin.register(Department)
class DepartmentAdmin(ObjectRightsAdminMixin, _CreateOnly):
    list_display = ["name", "description", "project_count"]
    search_fields = ["name", "description"]
    fields = ["name", "description"]

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(_projects=Count("projects"))

    def get_fields(self, request, obj=None):
        return self.fields if obj is None else [*self.fields, "project_links"]

    def get_readonly_fields(self, request, obj=None):
        return [] if obj is None else [*self.fields, "project_links", *super().get_readonly_fields(request, obj)]

    def save_model(self, request, obj, form, change):
        saved = services.create_department(
            obj.name, Actor.for_request(request, "admin"), description=obj.description, who=request
        )
        obj.pk = saved.pk

    @display(description="Projects", ordering="_projects")
    def project_count(self, obj):
        return obj._projects

    @display(description="Projects")
    def project_links(self, obj):
        return (
            format_html_join(
                ", ",
                '<a class="underline" href="{}">{}</a>',
                (
                    (reverse("admin:teams_project_change", args=[p.pk]), p.name)
                    for p in obj.projects.order_by("name").only("pk", "name")
                ),
            )
            or "-"
        )


class ProjectForm(forms.ModelForm):
    idp_groups = forms.CharField(
        required=False,
        label="IdP groups",
        help_text=(
            "IdP group or role names that grant the project's role at sign-in (comma-separated), added to the "
            "role's external names. The role osmo-<project> is created when missing."
        ),
    )

    # write-only (portal.webhooks): never rendered back; left empty, the stored one stays
    slack_webhook = forms.CharField(
        required=False,
        strip=True,
        max_length=2000,
        label="Slack webhook",
        widget=UnfoldAdminPasswordWidget(render_value=False),
    )
    clear_slack_webhook = forms.BooleanField(required=False, label="Remove the stored Slack webhook")

    class Meta:
        model = Project
        fields = ["name", "department", "description"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if "slack_webhook" in self.fields:
            self.initial["slack_webhook"] = ""  # never sent to the browser
            stored = webhooks.redacted(self.instance.slack_webhook) if self.instance.pk else ""
            self.fields["slack_webhook"].help_text = (
                f"Stored ({stored}); leave empty to keep it, or paste a new one. " if stored else "Not set. "
            ) + "Where the Slack notifications of members who set no webhook of their own go."

    def webhook_change(self) -> str | None:
        """The webhook to store: None (unchanged), "" (removed) or the new URL."""
        if self.cleaned_data.get("clear_slack_webhook"):
            return ""
        return self.cleaned_data.get("slack_webhook") or None

    def groups(self) -> list[str]:
        return [name.strip() for name in (self.cleaned_data.get("idp_groups") or "").split(",") if name.strip()]


@admin.register(Project)
class ProjectAdmin(_CreateOnly):
    form = ProjectForm
    list_display = ["name", "department", "priority", "role_link", "idp_group_list", "member_count", "description"]
    list_filter = ["department"]
    search_fields = ["name", "description", "role__name"]
    list_select_related = ["department", "role"]
    readonly_fields = ["name", "department", "description", "role_link", "idp_group_list", "members"]
    editable_fields = ["priority", "slack_webhook", "clear_slack_webhook"]

    def has_change_permission(self, request, obj=None):
        if obj is None:
            return super().has_change_permission(request, obj)
        return services.may_change_project(request, obj)

    def get_queryset(self, request):
        queryset = super().get_queryset(request).annotate(_members=Count("role__group__user", distinct=True))
        return queryset.order_by("name")  # a GROUP BY drops the model's ordering; the filters' search pages it

    def get_fields(self, request, obj=None):
        if obj is None:
            return ["name", "department", "description", "idp_groups"]
        return [*self.readonly_fields, *self.editable_fields]

    def has_add_permission(self, request, *args):
        """A team admin, or an admin of some department (the form then offers only theirs)."""
        decision = services.may_create_projects(request)
        if not decision.allowed:  # remembered for the audit event if the page ends up refused
            request._access_last_denial = (services.UPDATE, services.RESOURCE, decision.because)
        return decision.allowed

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        if db_field.name == "department":
            kwargs["queryset"] = services.departments_open_to_projects(request)
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def get_readonly_fields(self, request, obj=None):
        return [] if obj is None else self.readonly_fields

    def save_model(self, request, obj, form, change):
        if change:
            services.update_project(
                obj.name,
                Actor.for_request(request, "admin"),
                priority=form.cleaned_data["priority"],
                slack_webhook=form.webhook_change(),
                who=request,
            )
            return
        created = services.create_project(
            obj.name,
            obj.department.name,
            Actor.for_request(request, "admin"),
            description=obj.description,
            idp_groups=form.groups(),
            who=request,
        )
        obj.pk, obj.role_id = created.project.pk, created.project.role_id
        if created.role_created:
            self.message_user(request, f"Role {created.project.role.name} created (workflow:* on pool/{obj.name}*).")

    @display(description="Role", ordering="role__name")
    def role_link(self, obj):
        return format_html(
            '<a class="underline" href="{}">{}</a>',
            reverse("admin:access_role_change", args=[obj.role_id]),
            obj.role.name,
        )

    @display(description="IdP groups")
    def idp_group_list(self, obj):
        return ", ".join(obj.idp_groups)

    @display(description="Members", ordering="_members")
    def member_count(self, obj):
        return obj._members

    @display(description="Members")
    def members(self, obj):
        return ", ".join(services.members_of(obj)) or "-"
