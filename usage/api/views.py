"""`GET /api/usage/report`: the consumption report over REST (docs/usage.md, "Reports"). The view only translates
HTTP; `usage.services.consumption` reads the options and builds the rows.

Who may ask: `pool:List` (whoever may read quota figures at all, as `GET /api/quotas/node_pools`). What they
see: every team's rows for those who may read every team's quotas (`config:Read` on `config/node_pool`, or
QUOTA_TEAMS_VISIBLE); anyone else, the rows of their own projects only, whatever the grouping
(`teams.quota_visibility`, `consumption.restrict`). `format=csv` answers the same page as CSV.
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.renderers import BaseRenderer, BrowsableAPIRenderer, JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from access import actions
from portal.api import MAX_INT, MAX_LIST_ITEMS, MAX_PAGE, ErrorSerializer, IntParam, list_param
from teams.quota_visibility import request_quota_view
from usage.services import consumption
from usage.services.report import GRANULARITIES, GROUPS, ReportError

ERRORS = {400: ErrorSerializer, 401: ErrorSerializer, 403: ErrorSerializer}
FORMATS = ("json", "csv", "api")  # api: DRF's browsable page
OFFSET = IntParam("offset", 0, MAX_INT, 0, "rows to skip")
LIMIT = IntParam("limit", 1, MAX_PAGE, 100, "rows of this page")
PARAMETERS = [
    OpenApiParameter("from", str, description="A date (2026-11-01, midnight UTC) or ISO time; default 30 days ago."),
    OpenApiParameter("to", str, description="A date (that day included) or ISO time; default now."),
    OpenApiParameter(
        "by",
        {"type": "array", "items": {"type": "string", "enum": list(GROUPS)}, "maxItems": MAX_LIST_ITEMS},
        description="Group by (repeated or comma-separated); default project.",
    ),
    OpenApiParameter("granularity", str, enum=list(GRANULARITIES), description="total (default), day or hour."),
    *(list_param(consumption.api_label(name), f"Only these {name}s.") for name in consumption.FILTERS),
    OpenApiParameter("format", str, enum=["json", "csv"], description="json (default) or csv (the same page)."),
    OFFSET.parameter(),
    LIMIT.parameter(),
]


class CSVRenderer(BaseRenderer):
    media_type = "text/csv"
    format = "csv"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        return data.encode(self.charset) if isinstance(data, str) else b""


# A class statement cannot name fields `from` and `to`: the page's shape is built from a dict.
ReportPageSerializer = type(
    "ReportPageSerializer",
    (serializers.Serializer,),
    {
        "columns": serializers.ListField(child=serializers.CharField(), help_text="The rows' keys, in order."),
        "rows": serializers.ListField(
            child=serializers.DictField(),
            help_text="period (unless total), the group's columns, gpu_hours, cpu_hours, memory_gib_hours, "
            "cost_usd; grouped by project, department or node pool only, also deserved_gpu_hours and "
            "idle_guarantee_gpu_hours (null for a period without any deserved sample: unknown).",
        ),
        "count": serializers.IntegerField(help_text="Rows of the whole report."),
        "offset": serializers.IntegerField(),
        "limit": serializers.IntegerField(),
        "more_entries": serializers.BooleanField(),
        "from": serializers.DateTimeField(help_text="The period's start: a whole hour, UTC."),
        "to": serializers.DateTimeField(help_text="Its end (exclusive), at most the hour after now."),
        "by": serializers.ListField(child=serializers.CharField(), help_text="The grouping's columns."),
        "granularity": serializers.CharField(),
        "guarantee_known_from": serializers.DateTimeField(
            allow_null=True,
            help_text="The first hour of the period with deserved samples: the idle guarantee counts from then "
            "(hours without a sample are unknown, not idle). Null when none, or without guarantee columns.",
        ),
        "guarantee_unknown_hours": serializers.IntegerField(
            allow_null=True, help_text="Hours of the period so far without a deserved sample, not counted."
        ),
    },
)


class UsageReportView(APIView):
    policy_action = actions.POOL_LIST
    renderer_classes = [JSONRenderer, BrowsableAPIRenderer, CSVRenderer]

    def perform_content_negotiation(self, request, force=False):
        chosen = request.query_params.get("format")
        if chosen and chosen not in FORMATS and not force:
            raise ReportError("must be json or csv", field="format", value=chosen)
        return super().perform_content_negotiation(request, force)

    def handle_exception(self, exc):
        """An error is answered as JSON (its envelope), also when the page was asked as CSV."""
        if getattr(getattr(self.request, "accepted_renderer", None), "format", None) == "csv":
            self.request.accepted_renderer, self.request.accepted_media_type = JSONRenderer(), "application/json"
        return super().handle_exception(exc)

    @extend_schema(
        operation_id="usage_report",
        summary="GPU-, CPU-, memory-hours and cost per group over a period; idle guarantee per project/node pool",
        description=(
            "Needs pool:List. Callers who may read every team's quotas (config:Read on config/node_pool) see every "
            "row; others only their own projects' usage, whatever the grouping (docs/usage.md, Reports)."
        ),
        parameters=PARAMETERS,
        responses={
            200: OpenApiResponse(ReportPageSerializer, description="JSON; with format=csv, text/csv of the page."),
            **ERRORS,
        },
    )
    def get(self, request):
        params = request.query_params
        query = consumption.parse(
            start=params.get("from"),
            end=params.get("to"),
            by=params.getlist("by"),
            granularity=params.get("granularity"),
            filters={name: params.getlist(consumption.api_label(name)) for name in consumption.FILTERS},
            label=consumption.api_label,
        )
        offset, limit = OFFSET.read(request), LIMIT.read(request)
        report = consumption.report(query, request_quota_view(request))
        page = report.page(offset, limit)
        if request.accepted_renderer.format == "csv":
            answer = Response(consumption.as_csv(report.columns, page), content_type="text/csv; charset=utf-8")
            answer["Content-Disposition"] = 'attachment; filename="usage-report.csv"'
            return answer
        return Response(
            {
                "columns": report.columns,
                "rows": page,
                "count": len(report.rows),
                "offset": offset,
                "limit": limit,
                "more_entries": offset + len(page) < len(report.rows),
                "from": query.start,
                "to": query.end,
                "by": list(query.by),
                "granularity": query.granularity,
                **consumption.coverage_fields(report),
            }
        )
