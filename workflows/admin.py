"""Read-only admin for workflows: list with filters (status, pool), a page per workflow with its tasks and
events. Nothing is edited here: workflows change through submission, the cluster and cancel.

Who sees what is `access.policy`: the pages need `workflow:Read` on some pool, and the list only shows
workflows of pools where the admin holds `workflow:Read` (and their own): `policy.restrict`.
"""

from __future__ import annotations

from django.contrib import admin
from django.utils.html import format_html, format_html_join
from unfold.admin import ModelAdmin, TabularInline

from access import actions, policy
from portal.admin_base import ReadOnlyAdminMixin, pretty_json
from workflows.models import Task, TaskEvent, Workflow

READ = actions.WORKFLOW_READ


class TaskInline(ReadOnlyAdminMixin, TabularInline):
    model = Task
    extra = 0
    can_delete = False
    show_change_link = False
    fields = (
        "name",
        "group_name",
        "platform",
        "status",
        "retry_id",
        "pod_name",
        "node",
        "exit_code",
        "error",
        "pod_created_at",
        "started_at",
        "finished_at",
    )
    readonly_fields = fields

    def has_view_permission(self, request, obj=None):
        return policy.decide(request, READ, actions.ANY_POOL).allowed


@admin.register(Workflow)
class WorkflowAdmin(ReadOnlyAdminMixin, ModelAdmin):
    list_display = (
        "workflow_id",
        "pool",
        "project",
        "submitted_by",
        "status",
        "priority",
        "created_at",
        "started_at",
        "finished_at",
    )
    list_filter = ("status", "pool", "project", "priority")
    search_fields = ("workflow_id", "name", "submitted_by__username")
    list_select_related = ("pool", "submitted_by", "project")
    date_hierarchy = "created_at"
    inlines = [TaskInline]
    readonly_fields = (
        "workflow_id",
        "uuid",
        "name",
        "pool",
        "project",
        "submitted_by",
        "priority",
        "status",
        "labels_shown",
        "exec_timeout_seconds",
        "queue_timeout_seconds",
        "warnings_shown",
        "error",
        "created_at",
        "started_at",
        "finished_at",
        "events",
        "spec_shown",
    )
    fieldsets = (
        (
            None,
            {
                "fields": (
                    "workflow_id",
                    "uuid",
                    "name",
                    "pool",
                    "project",
                    "submitted_by",
                    "priority",
                    "status",
                    "error",
                )
            },
        ),
        (
            "Times",
            {"fields": ("created_at", "started_at", "finished_at", "queue_timeout_seconds", "exec_timeout_seconds")},
        ),
        ("Events", {"fields": ("events",)}),
        ("Spec", {"fields": ("labels_shown", "warnings_shown", "spec_shown"), "classes": ("collapse",)}),
    )

    def has_module_permission(self, request):
        return policy.decide(request, READ, actions.ANY_POOL).allowed

    def has_view_permission(self, request, obj=None):
        if obj is not None:
            return policy.decide(request, READ, obj=obj).allowed
        return policy.decide(request, READ, actions.ANY_POOL).allowed

    def get_queryset(self, request):
        return policy.restrict(super().get_queryset(request), request, READ)

    @admin.display(description="labels")
    def labels_shown(self, obj):
        return pretty_json(obj.labels)

    @admin.display(description="warnings")
    def warnings_shown(self, obj):
        return format_html_join("", "<div>{}</div>", ((w,) for w in obj.warnings)) or "-"

    @admin.display(description="spec as submitted")
    def spec_shown(self, obj):
        return pretty_json(obj.spec)

    @admin.display(description="events")
    def events(self, obj):
        rows = TaskEvent.objects.filter(task__workflow=obj).select_related("task").order_by("at", "id")
        body = format_html_join(
            "",
            "<tr><td class='pr-4 whitespace-nowrap'>{}</td><td class='pr-4'>{}</td>"
            "<td class='pr-4'>{}</td><td>{}</td></tr>",
            ((e.at.strftime("%Y-%m-%d %H:%M:%S"), e.task.name, e.kind, e.message) for e in rows),
        )
        return (
            format_html(
                "<table class='text-sm'><tr><th class='text-left'>time (UTC)</th><th class='text-left'>"
                "task</th><th class='text-left'>event</th><th class='text-left'>message</th></tr>{}"
                "</table>",
                body,
            )
            if body
            else "-"
        )
