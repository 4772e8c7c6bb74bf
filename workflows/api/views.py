"""Workflow REST API on OSMO's paths. Views only translate HTTP; services decide (docs/workflows-api.md).

    POST /api/pool/{pool}/workflow          submit (dry_run, validation_only, priority, project)
    GET  /api/workflow                      list (default: your own)
    GET  /api/workflow/{id}                 one workflow with its tasks
    GET  /api/workflow/{id}/spec            the spec as submitted
    GET  /api/workflow/{id}/events          what happened to its tasks
    GET  /api/workflow/{id}/logs            container logs as text (workflows/api/logs.py)
    GET  /api/workflow/{id}/task/{t}/logs   one task's log as JSON, to tail and follow
    POST /api/workflow/{id}/cancel          cancel (message, force)

Authentication is the project's default (portal tokens, OIDC bearer tokens, sessions). Authorization is
`access.policy` only: submission needs `workflow:Create` on `pool/<pool>` (the permission class and the
service both ask); reading, listing and cancelling are decided per workflow (`workflows.queries`,
`workflows.lifecycle.cancel`). Every error is the JSON envelope `{code, field, value, reason}`.
"""

from __future__ import annotations

import functools

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.core.files.uploadedfile import UploadedFile
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import exceptions
from rest_framework.permissions import BasePermission
from rest_framework.response import Response
from rest_framework.views import APIView

from access import actions, policy
from access.api.permissions import PolicyPermission
from portal.api import APIRefusal, ErrorSerializer
from portal.logs import request_id
from portal.parsers import FormParser, JSONParser, MultiPartParser, TextParser
from portal.safe_yaml import Limits, SafeYAMLError, spec_limits
from workflows import queries
from workflows.api import osmo
from workflows.api import serializers as s
from workflows.errors import InvalidSpec, PoolNotFound
from workflows.lifecycle.cancel import cancel
from workflows.services import CREATE, SubmitRequest, submit, unknown_pool_for
from workflows.spec import SpecError, spec_path

ERRORS = {400: ErrorSerializer, 401: ErrorSerializer, 403: ErrorSerializer, 404: ErrorSerializer}
WORKFLOW_ID = OpenApiParameter("workflow_id", str, OpenApiParameter.PATH, description="e.g. train-resnet-7")
POOL = OpenApiParameter("pool", str, OpenApiParameter.PATH, description="The pool to run in.")
EXAMPLE_SPEC = """version: 2
workflow:
  name: hello
  resources: {default: {cpu: 1, memory: 1Gi}}
  tasks:
  - {name: say, image: busybox, command: [echo, hello]}
"""


class SignedIn(BasePermission):
    """Only *who* is asking; what they may see or do is decided per workflow by `access.policy`."""

    def has_permission(self, request, view):
        if request.user is not None and request.user.is_authenticated:
            return True
        raise exceptions.NotAuthenticated()


class SpecJSONParser(JSONParser):
    """A JSON body within the spec limits (WORKFLOW_SPEC_*): `{"file": "<text>"}` or the document itself,
    which then counts against WORKFLOW_SPEC_MAX_BYTES (text in `file` is measured when it is parsed)."""

    def limits(self) -> Limits:
        return spec_limits()

    def refused(self, error: SafeYAMLError) -> Exception:
        return InvalidSpec(error.reason, field=spec_path(error.field), value=error.value)

    def check_size(self, document: object, size: int) -> None:
        limit = settings.WORKFLOW_SPEC_MAX_BYTES
        if not (isinstance(document, dict) and "file" in document) and size > limit:
            raise InvalidSpec(f"the spec is larger than {limit} bytes", value=size)


class YAMLParser(TextParser):
    media_type = "application/yaml"
    what = "the spec"

    def size_limit(self) -> int:
        return settings.WORKFLOW_SPEC_MAX_BYTES

    def too_large(self, limit: int) -> Exception:
        return InvalidSpec(f"the spec is larger than {limit} bytes", value=f"{limit + 1} or more")


class LegacyYAMLParser(YAMLParser):
    media_type = "application/x-yaml"


class PlainTextParser(YAMLParser):
    media_type = "text/*"


def spec_of(request) -> tuple[str | dict, str]:
    """(the spec as text or document, a name for error messages) from any accepted body shape."""
    try:
        data = request.data
    except RecursionError:
        raise exceptions.ParseError("the JSON body is nested too deeply") from None
    except RequestDataTooBig:
        raise exceptions.ParseError(
            f"the request body is larger than {settings.DATA_UPLOAD_MAX_MEMORY_SIZE} bytes"
        ) from None
    if isinstance(data, str):
        return data, "request body"
    if hasattr(data, "keys"):
        if "file" in data:
            value = data.get("file")
            if isinstance(value, UploadedFile):
                return _read_upload(value), value.name or "file"
            if isinstance(value, (str, dict)):
                return value, "file"
            raise InvalidSpec(
                "must be the workflow spec as YAML or JSON text", field="file", value=type(value).__name__
            )
        if hasattr(data, "getlist"):  # a form without `file`
            raise InvalidSpec("send the workflow spec in the form field file", field="file")
        if data:
            return dict(data), "request body"
    raise InvalidSpec(
        'send the workflow spec: {"file": "<YAML or JSON text>"}, the spec document itself, '
        "or YAML text with Content-Type application/yaml",
        field="file",
        value=None if not isinstance(data, (list, int, float, bool)) else type(data).__name__,
    )


def _read_upload(upload: UploadedFile) -> str:
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE or 2_621_440
    if upload.size is not None and upload.size > limit:
        raise InvalidSpec(f"the spec is larger than {limit} bytes", field="file", value=upload.size)
    try:
        return upload.read().decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidSpec("the spec is not UTF-8 text", field="file") from None


def _query(serializer_class, request) -> dict:
    if not request.query_params:  # the usual submission: the defaults, without building a serializer
        return dict(_defaults(serializer_class))
    serializer = serializer_class(data=request.query_params, context={"request": request})
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


@functools.cache
def _defaults(serializer_class) -> dict:
    """What an empty query validates to (constant defaults): a serializer per request costs ~0.3 ms of CPU."""
    serializer = serializer_class(data={})
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


class SubmitPermission(PolicyPermission):
    """`workflow:Create` on `pool/<pool>`; an unknown pool is a 404 for whoever may submit somewhere (who
    may submit nowhere gets the policy's 403 and learns nothing about which pools exist)."""

    def has_permission(self, request, view):
        pool = view.kwargs.get("pool", "")
        if not policy.decide(request, *self.target(request, view)).allowed and unknown_pool_for(request, pool):
            raise APIRefusal(PoolNotFound(f"no pool named {pool!r}", field="pool", value=pool))
        return super().has_permission(request, view)


def _submit_key(request) -> str:
    """`<user id>:<request id>` (X-Request-ID, or the one portal.logs made): the submission's idempotency key."""
    rid = request_id.get()
    return f"{request.user.pk}:{rid}" if rid and request.user.is_authenticated else ""


class SubmitView(APIView):
    permission_classes = [SubmitPermission]
    retry_lost_connection = True  # keyed by the request id: a second run answers the stored workflow
    parser_classes = [SpecJSONParser, YAMLParser, LegacyYAMLParser, PlainTextParser, MultiPartParser, FormParser]
    policy_action = CREATE

    def get_policy_resource(self, request) -> str:
        return actions.pool(self.kwargs.get("pool", ""))

    @extend_schema(
        operation_id="workflow_submit",
        summary="Submit a workflow to a pool",
        parameters=[POOL, s.SubmitQuerySerializer],
        request={
            "application/json": s.SubmitBodySerializer,
            "application/yaml": OpenApiTypes.STR,
            "text/plain": OpenApiTypes.STR,
            "multipart/form-data": s.SubmitBodySerializer,
        },
        responses={
            200: s.SubmitResultSerializer,
            **ERRORS,
            409: OpenApiResponse(ErrorSerializer, description="pool_in_maintenance"),
        },
        examples=[OpenApiExample("spec as text", value={"file": EXAMPLE_SPEC}, request_only=True)],
        description=(
            "Needs `workflow:Create` on `pool/<pool>`. 400 `invalid_spec` (the document: path, value, "
            "reason), `invalid` (the engine refused an input), `workflow_invalid` (a task cannot run on "
            "its platform; every problem in `problems`); 404 `pool_not_found`; 403 `forbidden`; "
            "409 `pool_in_maintenance`. The project charged: `project`, else your only project "
            "(400 `project_required` with `choices` when you belong to several; docs/teams.md)."
        ),
    )
    def post(self, request, pool):
        options = _query(s.SubmitQuerySerializer, request)
        spec, source, values = _submitted(request, options.get("workflow_id"))
        try:
            result = submit(
                SubmitRequest(
                    pool=pool,
                    spec=spec,
                    who=request,
                    priority=options["priority"],
                    project=options["project"],
                    dry_run=options["dry_run"],
                    validation_only=options["validation_only"],
                    source=source,
                    set_variables=values["set_variables"],
                    set_string_variables=values["set_string_variables"],
                    env_vars=options.get("env_vars", []),
                    labels=options.get("label", []),
                    key=_submit_key(request),
                )
            )
        except SpecError as error:
            raise InvalidSpec(error.reason, field=error.field, value=error.value) from None
        except RecursionError:
            raise InvalidSpec("the spec is nested too deeply") from None
        answer = result.as_dict()
        answer["status"] = osmo.workflow_status(answer["status"], for_osmo=osmo.speaks_osmo(request))
        answer["overview"] = osmo.overview_url(request, result.workflow_id) if result.workflow_id else None
        return Response(answer)


def _submitted(request, workflow_id: str | None) -> tuple[str | dict, str, dict]:
    """(the spec, a name for messages, OSMO's template values) from the body, or, with `workflow_id` (OSMO's
    `osmo workflow submit <workflow id>`), the stored spec of that workflow, which must be visible."""
    if workflow_id is not None:
        if _has_body(request):
            raise InvalidSpec("Either file contents or workflow ID can be provided, but not both.", field="workflow_id")
        workflow = queries.visible_workflow(request, workflow_id)
        return workflow.spec, f"{workflow.workflow_id} (stored spec)", {"set_variables": [], "set_string_variables": []}
    spec, source = spec_of(request)
    data = request.data if isinstance(request.data, dict) else {}
    values = s.TemplateValuesSerializer(
        data={k: data[k] for k in ("set_variables", "set_string_variables") if k in data}
    )
    values.is_valid(raise_exception=True)
    return spec, source, values.validated_data


def _has_body(request) -> bool:
    try:
        return bool(request.data)
    except exceptions.ParseError:
        return True


class WorkflowListView(APIView):
    permission_classes = [SignedIn]

    @extend_schema(
        operation_id="workflow_list",
        summary="List workflows",
        parameters=[s.ListQuerySerializer],
        responses={200: s.WorkflowListSerializer, **ERRORS},
        description=(
            "Default: your own workflows, newest first. `users`/`all_users` widen the list to "
            "other users' workflows in pools where you hold `workflow:List`."
        ),
    )
    def get(self, request):
        options = _query(s.ListQuerySerializer, request)
        page = queries.list_workflows(request, queries.WorkflowQuery(**options))
        return Response(s.WorkflowListSerializer(page, context={"request": request}).data)


class WorkflowView(APIView):
    permission_classes = [SignedIn]

    @extend_schema(
        operation_id="workflow_retrieve",
        summary="One workflow with its tasks",
        parameters=[WORKFLOW_ID],
        responses={200: s.WorkflowDetailSerializer, **ERRORS},
        description=(
            "Yours, or in a pool where you hold `workflow:Read`; any other is a 404 "
            "`workflow_not_found`, exactly as an unknown id."
        ),
    )
    def get(self, request, workflow_id):
        # OSMO's `verbose` (every retry of each task) changes nothing: a task keeps only its latest attempt.
        workflow = queries.visible_workflow(request, workflow_id)
        queries.with_tasks(workflow)
        return Response(s.WorkflowDetailSerializer(workflow, context={"request": request}).data)


class WorkflowSpecView(APIView):
    permission_classes = [SignedIn]

    @extend_schema(
        operation_id="workflow_spec",
        summary="The spec as submitted",
        parameters=[WORKFLOW_ID],
        responses={200: s.SpecSerializer, **ERRORS},
    )
    def get(self, request, workflow_id):
        workflow = queries.visible_workflow(request, workflow_id)
        return Response({"workflow_id": workflow.workflow_id, "spec": workflow.spec})


class WorkflowEventsView(APIView):
    permission_classes = [SignedIn]

    @extend_schema(
        operation_id="workflow_events",
        summary="What happened to the workflow's tasks",
        parameters=[WORKFLOW_ID],
        responses={200: s.EventListSerializer, **ERRORS},
        description=(
            "Oldest first. Kinds: SUBMITTED, CREATED, SCHEDULED, UNSCHEDULABLE, WAITING, RUNNING, "
            "EXITED, SPOT_INTERRUPTION, RESCHEDULED, QUEUE_TIMEOUT, EXEC_TIMEOUT, BACKEND_ERROR, POD_LOST, "
            "STOPPED, CANCELLED."
        ),
    )
    def get(self, request, workflow_id):
        workflow = queries.visible_workflow(request, workflow_id)
        events = queries.events_of(workflow)
        return Response({"workflow_id": workflow.workflow_id, "events": s.EventSerializer(events, many=True).data})


class WorkflowCancelView(APIView):
    permission_classes = [SignedIn]

    @extend_schema(
        operation_id="workflow_cancel",
        summary="Cancel a workflow",
        parameters=[WORKFLOW_ID],
        request=s.CancelSerializer,
        responses={
            200: s.WorkflowDetailSerializer,
            **ERRORS,
            409: OpenApiResponse(ErrorSerializer, description="workflow_finished"),
        },
        description=(
            "Its submitter, or `workflow:Cancel` on `pool/<pool>` (a workflow you may not see is a 404, "
            "as an unknown one). Unfinished tasks become "
            "CANCELLED and their pods are deleted. A finished workflow answers 409 "
            "`workflow_finished` unless `force`."
        ),
    )
    def post(self, request, workflow_id):
        body = request.data if hasattr(request.data, "keys") else {}
        data = s.CancelSerializer(data={**request.query_params.dict(), **body})
        data.is_valid(raise_exception=True)
        queries.visible_workflow(request, workflow_id)  # one you may not see is a 404, as an unknown one
        workflow = cancel(
            workflow_id, request, force=data.validated_data["force"], message=data.validated_data["message"]
        )
        queries.with_tasks(workflow)
        return Response(s.WorkflowDetailSerializer(workflow, context={"request": request}).data)
