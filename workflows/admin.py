"""Read-only admin for workflows: list with filters (status, pool and project by a search box, priority, when), a
page per workflow with its tasks and its timeline (every task event, with the time since the one before). Nothing
is edited here: workflows change through submission, the cluster and cancel; the page's Cancel, Task logs and Live
page buttons (and the list's row actions) are workflows.admin_pages.

Who sees what is `access.policy`: the pages need `workflow:Read` on some pool, and the list only shows
workflows of pools where the admin holds `workflow:Read` (and their own): `policy.restrict`.
"""

from __future__ import annotations

from django.contrib import admin
from django.utils.html import format_html, format_html_join
from unfold.admin import ModelAdmin, TabularInline
from unfold.contrib.filters.admin import AutocompleteSelectFilter

from access import actions, policy
from portal.admin_base import ReadOnlyAdminMixin, pretty_json
from portal.admin_paging import LargeTablePaginator
from workflows import queries
from workflows.admin_pages import WorkflowPagesMixin, live_page_url
from workflows.models import Task, Workflow

READ = actions.WORKFLOW_READ


class TaskInline(ReadOnlyAdminMixin, TabularInline):
    model = Task
    extra = 0
    can_delete = False
    show_change_link = False
    # what an operator scans at 1440 px without a word broken in two (the pod's name is on the Task logs page)
    fields = ("name", "status", "platform", "node", "retry_id", "exit_code", "error", "started_at", "finished_at")
    readonly_fields = fields

    def has_view_permission(self, request, obj=None):
        return policy.decide(request, READ, actions.ANY_POOL).allowed


@admin.register(Workflow)
class WorkflowAdmin(WorkflowPagesMixin, ReadOnlyAdminMixin, ModelAdmin):
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
    # When: a date filter, not Django's date hierarchy, whose years are a scan of every row (docs/scale.md).
    # Pool and project: a search box each (the pools' and projects' own admin search), not a link per pool and
    # project on every page: a fleet's 100 pools and 500 projects were a third of the list's time (docs/scale.md)
    list_filter = (
        "status",
        ("pool", AutocompleteSelectFilter),
        ("project", AutocompleteSelectFilter),
        "priority",
        ("created_at", admin.DateFieldListFilter),
    )
    list_filter_submit = True  # the search filters' choice is applied by the panel's "Apply Filters" (Unfold's form)
    search_fields = ("workflow_id", "name", "submitted_by__username")
    list_select_related = ("pool", "submitted_by", "project")
    # A million rows in a year: an estimated count, and deep pages by their ids first (portal.admin_paging)
    paginator = LargeTablePaginator
    show_full_result_count = False
    inlines = [TaskInline]
    readonly_fields = (
        "workflow_id",
        "live_link",
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
                    "live_link",
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
        ("Timeline", {"fields": ("events",)}),
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

    @admin.display(description="live page")
    def live_link(self, obj):
        url = live_page_url(obj)
        return format_html('<a class="underline" href="{}">{}</a> (what its submitter sees)', url, url)

    @admin.display(description="every task event, oldest first")
    def events(self, obj):
        """Every task event in time order, each with the time since the one before (a table whose event names
        never break; a block per event on a phone: static/portal/admin.css)."""
        rows, before = [], None
        for event in queries.events_of(obj):
            after = f"+{_seconds(event.at - before)}" if before else ""
            rows.append((event.at.strftime("%Y-%m-%d %H:%M:%S"), after, event.task.name, event.kind, event.message))
            before = event.at
        if not rows:
            return "-"
        body = format_html_join(
            "",
            "<tr><td class='wf-nowrap'>{}</td><td class='wf-nowrap'>{}</td><td class='wf-nowrap'>{}</td>"
            "<td class='wf-nowrap wf-kind'>{}</td><td>{}</td></tr>",
            rows,
        )
        return format_html(
            "<div class='wf-events'><table><tr><th>time (UTC)</th><th>after</th><th>task</th><th>event</th>"
            "<th>message</th></tr>{}</table></div>",
            body,
        )


def _seconds(delta) -> str:
    seconds = delta.total_seconds()
    if seconds < 60:
        return f"{seconds:.1f}s" if seconds < 10 else f"{seconds:.0f}s"
    minutes, rest = divmod(int(seconds), 60)
    return f"{minutes}m {rest:02d}s" if minutes < 60 else f"{minutes // 60}h {minutes % 60:02d}m"
