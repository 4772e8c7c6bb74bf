"""POST /api/quotas/what-if (docs/quotas.md, "What-if"): replay a recorded period under proposed quota changes,
side by side with today's quotas and with what happened, and what the change does right now. Nothing is written.
The view only translates HTTP; `quotas.services.what_if` decides. Reading needs what the quota reads need
(`pool:List`); projects the caller may not see (teams.quota_visibility) are neither shown nor changeable."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from access import actions
from access.api.permissions import PolicyPermission
from portal.api import ErrorSerializer
from quotas.api import serializers as s
from quotas.services import what_if
from teams.quota_visibility import quota_view

ERRORS = {400: ErrorSerializer, 401: ErrorSerializer, 403: ErrorSerializer}


class WhatIfPermission(PolicyPermission):
    def target(self, request, view):
        return actions.POOL_LIST, ""  # reading quota figures, as GET /api/quotas/node_pools/{name}


class WhatIfView(APIView):
    permission_classes = [WhatIfPermission]

    @extend_schema(
        operation_id="quota_what_if",
        summary="Replay a recorded period (at most 31 days), or a synthetic workload (at most 1,000 jobs), under "
        "proposed quota changes (at most 1,000)",
        description=(
            "Per project: what actually happened, the period replayed under today's quotas (baseline) and under "
            "the changes (proposed): waits, GPU-hours, preemptions, idle guarantee, cost. Per node pool a change "
            "touches: what one admission pass would decide differently right now. Nothing is written."
        ),
        request=s.WhatIfRequestSerializer,
        responses={200: s.WhatIfSerializer, **ERRORS},
    )
    def post(self, request):
        given = s.WhatIfRequestSerializer(data=request.data)
        given.is_valid(raise_exception=True)
        workload = given.validated_data.get("workload")
        start, end = what_if.period(
            given.validated_data.get("start"), given.validated_data.get("end"), synthetic=workload is not None
        )
        answer = what_if.what_if(
            start, end, given.validated_data["changes"], view=quota_view(request), workload=workload
        )
        return Response(answer)
