"""A task's container log over the REST API (docs/workflows-api.md, "Logs").

    GET /api/workflow/{id}/logs                 OSMO's path: plain text, every task (or `task_name`'s),
                                                the last `last_n_lines` lines of each
    GET /api/workflow/{id}/task/{task}/logs     JSON: the last `tail` lines, or those after `since` (a cursor)

Who may read a workflow may read its logs (`workflows.logs`); anyone else gets its 404. A log that cannot be
read (no pod yet, the pod gone, the cluster unreachable) is a 200 with a `notice`, as on the page.
"""

from __future__ import annotations

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from portal.api import MAX_INT, IntParam
from workflows import logs, queries
from workflows.api.views import ERRORS, WORKFLOW_ID, SignedIn

TAIL = IntParam("tail", 1, logs.MAX_LINES, logs.DEFAULT_TAIL, "last lines")
LAST_N_LINES = IntParam("last_n_lines", 1, logs.MAX_LINES, logs.DEFAULT_TAIL, "last lines of each task")
RETRY_ID = IntParam("retry_id", 0, MAX_INT, None, "the attempt; only the current one's pod (and log) exists")

TASK_LOG = inline_serializer(
    "TaskLog",
    {
        "workflow_id": serializers.CharField(),
        "task": serializers.CharField(),
        "pod": serializers.CharField(),
        "container": serializers.CharField(),
        "finished": serializers.BooleanField(help_text="the task ended: no more lines will come"),
        "state": serializers.ChoiceField(["live", "no_pod", "not_started", "gone", "unreachable"]),
        "notice": serializers.CharField(help_text="why there are no lines, when the log cannot be read"),
        "cursor": serializers.CharField(help_text="pass back as `since` for the lines after these"),
        "lines": inline_serializer(
            "LogLine", {"at": serializers.CharField(), "text": serializers.CharField()}, many=True
        ),
    },
)


class TaskLogView(APIView):
    permission_classes = [SignedIn]

    @extend_schema(
        operation_id="workflow_task_log",
        summary="One task's container log",
        parameters=[
            WORKFLOW_ID,
            OpenApiParameter("task_name", str, OpenApiParameter.PATH, description="A task of the workflow"),
            TAIL.parameter(),
            OpenApiParameter("since", str, description="the `cursor` of an earlier answer: only newer lines"),
        ],
        responses={200: TASK_LOG, **ERRORS},
    )
    def get(self, request, workflow_id, task_name):
        params = request.query_params
        log = logs.task_log(
            workflow_id,
            task_name,
            request,
            tail=TAIL.read(request),
            since=logs.parse_since(params.get("since")),
        )
        return Response(log.as_dict())


class WorkflowLogsView(APIView):
    """OSMO's `osmo workflow logs`: plain text, `[task] line`, a notice line where a log cannot be read."""

    permission_classes = [SignedIn]

    @extend_schema(
        operation_id="workflow_logs",
        summary="The workflow's container logs as text (OSMO's path)",
        parameters=[
            WORKFLOW_ID,
            OpenApiParameter("task_name", str, description="only this task"),
            LAST_N_LINES.parameter(),
            RETRY_ID.parameter(),
        ],
        responses={(200, "text/plain"): OpenApiTypes.STR, **ERRORS},
    )
    def get(self, request, workflow_id):
        tail = LAST_N_LINES.read(request)
        workflow = queries.visible_workflow(request, workflow_id)
        wanted = request.query_params.get("task_name")
        retry = RETRY_ID.read(request)
        attempts = dict(queries.tasks_of(workflow).values_list("name", "retry_id"))
        names = [wanted] if wanted else list(attempts)
        out = []
        for name in names:
            if retry is not None and name in attempts and retry != attempts[name]:
                out.append(
                    f"[{name}] (retry {retry} is not the current attempt ({attempts[name]}): its pod was replaced)"
                )
                continue
            log = logs.task_log(workflow_id, name, request, tail=tail)
            out += [f"[{name}] {line.text}" for line in log.lines]
            if log.notice:
                out.append(f"[{name}] ({log.notice})")
        return HttpResponse("".join(f"{line}\n" for line in out), content_type="text/plain; charset=utf-8")
