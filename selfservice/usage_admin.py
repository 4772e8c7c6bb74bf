"""The admin's usage page (selfservice.usage_page; docs/usage.md, "The usage page") in the console: listed in the
sidebar as Usage › Usage and cost (the rollups it reads, `UsageRollup`; their rows are never listed or edited), at
`/admin/usage/usagerollup/`, with `?csv=<chart>` for each chart's CSV. Viewing needs what the quota pages need:
config:Read (or config:Update) on `config/node_pool` (PolicyAdminMixin), as it shows every team's figures."""

from __future__ import annotations

from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.http import HttpResponse
from django.template.response import TemplateResponse
from django.utils.http import urlencode
from unfold.admin import ModelAdmin

from access import actions
from access.admin.site import PolicyAdminMixin
from configs.models import ConfigType
from portal.admin_base import ReadOnlyAdminMixin
from selfservice import usage_page
from usage.models import UsageRollup
from usage.services.consumption import as_csv


@admin.register(UsageRollup)
class UsagePageAdmin(PolicyAdminMixin, ReadOnlyAdminMixin, ModelAdmin):
    policy_resource = actions.config(ConfigType.NODE_POOL)

    def changelist_view(self, request, extra_context=None):
        if not self.has_view_permission(request):
            raise PermissionDenied
        win, error = usage_page.window(request.GET)
        chart = request.GET.get("csv")
        if chart in usage_page.CHARTS:
            return _csv(chart, win)
        links = {key: f"?{urlencode({'range': key})}" for key in usage_page.RANGES}
        kept = {"range": win.key}
        if win.key == "custom":
            kept.update({"from": request.GET["from"], "to": request.GET["to"]})
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": "Usage",
            "win": win,
            "error": error,
            "ranges": links,
            "custom_from": request.GET.get("from", f"{win.start:%Y-%m-%d}"),
            "custom_to": request.GET.get("to", f"{win.end:%Y-%m-%d}"),
            "csv": {chart: f"?{urlencode({**kept, 'csv': chart})}" for chart in usage_page.CHARTS},
            **usage_page.page(win),
        }
        return TemplateResponse(request, "admin/usage/page.html", context)


def _csv(chart: str, win) -> HttpResponse:
    columns, rows = usage_page.csv_of(chart, win)
    answer = HttpResponse(as_csv(columns, rows), content_type="text/csv; charset=utf-8")
    name = f"usage-{chart}-{win.start:%Y%m%dT%H}-{win.end:%Y%m%dT%H}.csv"
    answer["Content-Disposition"] = f'attachment; filename="{name}"'
    return answer
