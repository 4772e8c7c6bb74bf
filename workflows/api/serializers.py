"""Request and response shapes of the workflow API (OSMO's paths; see docs/workflows-api.md)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from portal.api import MAX_INT, MAX_LIST_ITEMS, MAX_PAGE, STRING_LIST, BoundedInt, counted
from teams.quota_visibility import EVERYTHING, preemption_as_seen, request_quota_view
from workflows import admission_gate
from workflows.api import osmo
from workflows.models import Priority, TaskStatus, WorkflowStatus

# Named in SPECTACULAR_SETTINGS["ENUM_NAME_OVERRIDES"]: two `status` fields, two schema enums.
TASK_STATUSES = TaskStatus.values
# Both vocabularies: the portal's (QUEUED) and what OSMO's client reads (PENDING for it).
OSMO_STATUSES = list(
    dict.fromkeys(
        osmo.workflow_status(status, for_osmo=client) for client in (False, True) for status in WorkflowStatus.values
    )
)


@extend_schema_field(STRING_LIST)
class NamesField(serializers.Field):
    """Repeated query parameters (`users=a&users=b`) or OSMO's comma-separated form (`users=a,b`)."""

    def get_value(self, dictionary):
        if hasattr(dictionary, "getlist"):
            values = dictionary.getlist(self.field_name)
            return values if values else serializers.empty
        return super().get_value(dictionary)

    def to_internal_value(self, data):
        items = data if isinstance(data, list) else [data]
        if not all(isinstance(item, str) and "\x00" not in item for item in items):
            raise serializers.ValidationError("must be a list of names or a comma-separated string")
        return counted([part.strip() for item in items for part in item.split(",") if part.strip()])

    def to_representation(self, value):
        return value


@extend_schema_field(STRING_LIST)
class RepeatedField(NamesField):
    """Repeated query parameters taken whole (`env_vars=A=1,2&env_vars=B=3`): values may hold commas."""

    def to_internal_value(self, data):
        items = data if isinstance(data, list) else [data]
        if not all(isinstance(item, str) and "\x00" not in item for item in items):
            raise serializers.ValidationError("must be a list of text values")
        return counted(items)


# What OsmoTimeField answers, declared as it is (not `date-time`, whose RFC 3339 form needs an offset).
OSMO_TIME_SCHEMA = {
    "type": "string",
    "pattern": r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?$",
    "description": "UTC, ISO 8601 without an offset (OSMO's form: `2025-05-01T12:34:56.123456`).",
    "example": "2025-05-01T12:34:56.123456",
}


@extend_schema_field(OSMO_TIME_SCHEMA)
class OsmoTimeField(serializers.DateTimeField):
    """OSMO's time format: naive UTC ISO 8601, which its CLI parses (workflows/api/osmo.py)."""

    def to_representation(self, value):
        return osmo.osmo_time(value)


class OsmoStatusField(serializers.ChoiceField):
    """A workflow status (the portal's CANCELLED is OSMO's FAILED_CANCELED); QUEUED is OSMO's PENDING only to
    OSMO's own client (`osmo.speaks_osmo`): the portal's API, pages and CLI say QUEUED."""

    def to_representation(self, value):
        return osmo.workflow_status(value, for_osmo=osmo.speaks_osmo(self.context.get("request")))


class SubmitQuerySerializer(serializers.Serializer):
    dry_run = serializers.BooleanField(
        default=False,
        help_text=("Resolve every task and return the pods (with provenance and placement); store nothing."),
    )
    validation_only = serializers.BooleanField(default=False, help_text="Validate only; store nothing.")
    priority = serializers.CharField(default=Priority.NORMAL, help_text="HIGH, NORMAL or LOW.")
    project = serializers.CharField(
        default="",
        allow_blank=True,
        max_length=128,
        help_text=(
            "The project to charge (docs/teams.md). Empty: your only project; none if you belong to none; "
            "400 project_required, listing them, if you belong to several."
        ),
    )
    env_vars = RepeatedField(required=False, help_text="KEY=VALUE, added to every task's environment (OSMO).")
    label = RepeatedField(required=False, help_text="KEY=VALUE, over the spec's labels (OSMO).")
    workflow_id = serializers.CharField(
        required=False, max_length=80, help_text="Submit again the spec of this workflow (no body then)."
    )


class SubmitBodySerializer(serializers.Serializer):
    file = serializers.CharField(
        help_text=(
            "The workflow spec (OSMO v2) as YAML or JSON text. The body may also be the spec document itself "
            "(JSON), raw YAML (Content-Type: application/yaml or text/plain), or a multipart upload named file."
        )
    )
    set_variables = serializers.ListField(
        child=serializers.CharField(),
        required=False,
        max_length=MAX_LIST_ITEMS,
        help_text="NAME=VALUE for the template (int, float or text).",
    )
    set_string_variables = serializers.ListField(
        child=serializers.CharField(),
        required=False,
        max_length=MAX_LIST_ITEMS,
        help_text="NAME=VALUE for the template, always text.",
    )
    uploaded_templated_spec = serializers.CharField(
        required=False, allow_null=True, help_text="OSMO's copy of the template before rendering: accepted, not kept."
    )


class TemplateValuesSerializer(serializers.Serializer):
    """The template values of OSMO's TemplateSpec body (`file` is read by the view's spec_of)."""

    set_variables = serializers.ListField(
        child=serializers.CharField(max_length=10_000), default=list, max_length=MAX_LIST_ITEMS
    )
    set_string_variables = serializers.ListField(
        child=serializers.CharField(max_length=10_000, allow_blank=True), default=list, max_length=MAX_LIST_ITEMS
    )


class SubmittedTaskSerializer(serializers.Serializer):
    name = serializers.CharField()
    platform = serializers.CharField()
    pod_name = serializers.CharField(required=False)
    ok = serializers.BooleanField(required=False, help_text="Dry run / validation: the task resolved cleanly.")
    pod = serializers.JSONField(required=False, help_text="Dry run: the pod that would be created.")
    provenance = serializers.JSONField(required=False, help_text="Dry run: which template or variable set what.")
    variables = serializers.JSONField(required=False)
    validation = serializers.JSONField(required=False)
    placement = serializers.JSONField(required=False, help_text="Dry run: nodes that fit now, and why others not.")
    warnings = serializers.ListField(child=serializers.CharField(), required=False)


class SubmitResultSerializer(serializers.Serializer):
    name = serializers.CharField(help_text="The workflow id (a dry run: the spec's workflow name).")
    workflow_id = serializers.CharField(allow_null=True, help_text="null when nothing was stored.")
    overview = serializers.CharField(allow_null=True, help_text="The workflow's page (null when nothing was stored).")
    spec = serializers.CharField(allow_null=True, help_text="Dry run: the spec as submitted, templates rendered.")
    logs = serializers.CharField(allow_null=True, help_text="validation_only: 'Workflow validation succeeded.'")
    dashboard_url = serializers.CharField(allow_null=True, help_text="Always null (OSMO's cluster dashboard).")
    status = serializers.CharField(
        help_text="PENDING, QUEUED (waiting for quota admission; OSMO's client reads PENDING), or DRY_RUN / VALID "
        "when nothing was stored."
    )
    pool = serializers.CharField()
    project = serializers.CharField(allow_null=True, help_text="The project charged (null: none).")
    tasks = SubmittedTaskSerializer(many=True)
    warnings = serializers.ListField(child=serializers.CharField())


class PriorityOrderQuery:
    """The `priority` and `order` filters the workflow and task lists share (OSMO's spellings, any case)."""

    def validate_priority(self, value):
        unknown = [p for p in value if p.upper() not in Priority.values]
        if unknown:
            raise serializers.ValidationError(f"unknown priority {unknown[0]!r}; expected one of HIGH, NORMAL, LOW")
        return [p.upper() for p in value]

    def validate_order(self, value):
        if value.lower() not in ("asc", "desc"):
            raise serializers.ValidationError("must be asc or desc")
        return value.lower()


class ListQuerySerializer(PriorityOrderQuery, serializers.Serializer):
    users = NamesField(required=False, help_text="Submitters (default: you, unless all_users).")
    all_users = serializers.BooleanField(default=False, help_text="Everyone's workflows that you may list.")
    pools = NamesField(required=False)
    statuses = NamesField(required=False, help_text=", ".join(WorkflowStatus.values))
    name = serializers.CharField(required=False, allow_blank=True, help_text="Part of the workflow name.")
    priority = NamesField(required=False, help_text="HIGH, NORMAL, LOW.")
    submitted_after = serializers.DateTimeField(required=False, help_text="Naive times are UTC.")
    submitted_before = serializers.DateTimeField(required=False)
    offset = BoundedInt(min_value=0, max_value=MAX_INT, default=0)
    limit = BoundedInt(min_value=1, max_value=MAX_PAGE, default=20)
    order = serializers.CharField(default="desc", help_text="desc (newest first) or asc; any case (OSMO sends DESC).")
    all_pools = serializers.BooleanField(default=False, help_text="OSMO's CLI sends it without --pool: no filter.")
    tags = NamesField(required=False, help_text="OSMO's workflow tags: the portal keeps none; a tag matches nothing.")
    app = serializers.CharField(required=False, help_text="OSMO's apps: the portal has none; an app matches nothing.")
    label = RepeatedField(required=False, help_text="`key=value` (that value) or `key` (has the label); all hold.")
    no_label = RepeatedField(required=False, help_text="`key` (no such label) or `key=value` (not that value).")

    def validate_statuses(self, value):
        known = set(WorkflowStatus.values) | set(osmo.OSMO_WORKFLOW_STATUSES)
        unknown = [status for status in value if status.upper() not in known]
        if unknown:
            raise serializers.ValidationError(
                f"unknown status {unknown[0]!r}; expected one of {', '.join(sorted(known))}"
            )
        return osmo.stored_statuses(value, for_osmo=osmo.speaks_osmo(self.context.get("request")))

    def validate_label(self, value):
        return _selectors(value)

    def validate_no_label(self, value):
        return _selectors(value)

    def validate(self, attrs):
        attrs.pop("all_pools", None)
        return attrs


def _selectors(value: list[str]) -> list[str]:
    """OSMO's label selectors (`key=value` or `key`): a key is required, and is a label key (spec_fields)."""
    for text in value:
        key = text.partition("=")[0]
        if not key or len(text) > 1024:
            raise serializers.ValidationError(f"{text[:80]!r} is not a label selector; expected key=value or key")
    return value


class WorkflowSummarySerializer(serializers.Serializer):
    """OSMO's list entry (`user`, `name`, `submit_time`, `status`, `priority`, `labels`, `overview`, …) with the
    portal's fields. Times are OSMO's (naive UTC); statuses OSMO's names."""

    name = serializers.CharField(source="workflow_id")
    workflow_id = serializers.CharField()
    uuid = serializers.UUIDField()
    workflow_uuid = serializers.SerializerMethodField(help_text="OSMO's spelling: hex, no dashes.")
    pool = serializers.CharField(source="pool.name")
    project = serializers.CharField(
        source="project.name", allow_null=True, default=None, help_text="The project it is charged to (null: none)."
    )
    user = serializers.CharField(source="submitted_by.username", help_text="OSMO's name for the submitter.")
    submitted_by = serializers.CharField(source="submitted_by.username")
    priority = serializers.ChoiceField(choices=Priority.values)
    status = OsmoStatusField(choices=OSMO_STATUSES)
    labels = serializers.JSONField()
    task_count = serializers.IntegerField(required=False)
    submit_time = OsmoTimeField(source="created_at")
    start_time = OsmoTimeField(source="started_at", allow_null=True)
    end_time = OsmoTimeField(source="finished_at", allow_null=True)
    queued_time = serializers.SerializerMethodField(help_text="Seconds from submission to start (or now).")
    duration = serializers.SerializerMethodField(help_text="Seconds from start to end (or now); null if not started.")
    overview = serializers.SerializerMethodField(help_text="The workflow's page.")
    queue = serializers.SerializerMethodField(
        help_text="While QUEUED (waiting for quota admission; PENDING to OSMO's client): why it waits — `reason` "
        "(a sentence), "
        "`code`, the numbers (`demand`, `allocated`, `deserved`, `fair_share`, `limit`, `free`, `borrowable`), "
        "its `position` in the node pool's queue. In one workflow's detail, also while PENDING or WAITING on a "
        "backend whose own scheduler (KAI, Kueue) admits it: that scheduler's status message on its project's "
        "queue (`reason` 'scheduler (KAI): …', `scheduler`, `scheduler_queue`). Null otherwise."
    )
    preemption = serializers.SerializerMethodField(
        help_text="When it was preempted (reclaimed): why, for which workflow (`by`) and the numbers. Null otherwise. "
        "The workflow and project it was reclaimed for are left out for a caller who may not see that project's "
        "quota (docs/access.md, Quota visibility)."
    )
    dashboard_url = serializers.CharField(read_only=True, default=None, allow_null=True, help_text="Always null.")
    grafana_url = serializers.CharField(read_only=True, default=None, allow_null=True, help_text="Always null.")

    def get_workflow_uuid(self, workflow) -> str:
        return workflow.uuid.hex

    def get_queued_time(self, workflow) -> float:
        return osmo.seconds_between(workflow.created_at, workflow.started_at)

    def get_duration(self, workflow) -> float | None:
        return osmo.seconds_between(workflow.started_at, workflow.finished_at)

    def get_overview(self, workflow) -> str:
        return osmo.overview_url(self.context.get("request"), workflow.workflow_id)

    @extend_schema_field({"type": "object", "nullable": True})
    def get_queue(self, workflow) -> dict | None:
        return queue_of(workflow)

    @extend_schema_field({"type": "object", "nullable": True})
    def get_preemption(self, workflow) -> dict | None:
        if not workflow.preemption:
            return None
        request = self.context.get("request")
        return preemption_as_seen(workflow.preemption, request_quota_view(request) if request else EVERYTHING)


def queue_of(workflow, *, ask_scheduler: bool = False) -> dict | None:
    """Why a QUEUED workflow waits, as the last admission pass wrote it (docs/admission.md). With
    `ask_scheduler` (one workflow's detail, never a list: it may read the cluster), a PENDING or WAITING
    workflow whose backend's scheduler (KAI, Kueue) admits it: what that scheduler says (the admission gate's
    `scheduler_says`; docs/quota-schedulers.md)."""
    if ask_scheduler and workflow.status in (WorkflowStatus.PENDING, WorkflowStatus.WAITING):
        gate = admission_gate.current()
        said = gate.scheduler_says(workflow) if gate is not None and hasattr(gate, "scheduler_says") else None
        if said:
            return {"status": workflow.status, "node_pool": workflow.node_pool, **said}
    if workflow.status != WorkflowStatus.QUEUED:
        return None
    reason = dict(workflow.queue_reason or {})
    text = reason.pop("text", "") or "waiting for its node pool's next admission pass"
    return {"status": WorkflowStatus.QUEUED.value, "node_pool": workflow.node_pool, "reason": text, **reason}


class WorkflowListSerializer(serializers.Serializer):
    workflows = WorkflowSummarySerializer(many=True)
    more_entries = serializers.BooleanField()
    offset = serializers.IntegerField()
    limit = serializers.IntegerField()


class TaskSerializer(serializers.Serializer):
    name = serializers.CharField()
    group = serializers.CharField(source="group_name")
    lead = serializers.BooleanField()
    platform = serializers.CharField()
    status = serializers.ChoiceField(choices=TASK_STATUSES)
    retry_id = serializers.IntegerField()
    pod_name = serializers.CharField()
    namespace = serializers.CharField()
    node = serializers.CharField(allow_blank=True)
    exit_code = serializers.IntegerField(allow_null=True)
    exit_reason = serializers.CharField(allow_blank=True, help_text="The container's: Completed, Error, OOMKilled, …")
    exit_message = serializers.CharField(allow_blank=True)
    interruptions = serializers.JSONField(
        help_text=(
            "Spot interruptions of its attempts, oldest first: {node, at, attempt, pod, action, next_attempt} "
            "(next_attempt: the attempt it was rescheduled as; null when it ended)."
        )
    )
    error = serializers.CharField(allow_blank=True, help_text="Why it failed, or why it is not running yet.")
    status_message = serializers.SerializerMethodField(
        help_text="While its pod waits for a node (unschedulable now): 'Waiting for machine pool gpu-t4-spot to add "
        "a node (0 → 1 of max 4)' when a machine pool of its platform could add a node that takes it, else "
        "'Not schedulable yet: ' and the scheduler's reason. Empty otherwise."
    )
    exit_actions = serializers.JSONField()
    submit_time = OsmoTimeField(source="created_at")
    pod_created_time = OsmoTimeField(source="pod_created_at", allow_null=True)
    start_time = OsmoTimeField(source="started_at", allow_null=True)
    end_time = OsmoTimeField(source="finished_at", allow_null=True)
    # OSMO's fields of the task, with the values groups[].tasks[] gives them (osmo._task), so a client reads a
    # task's node or failure from either list; only `status` keeps the portal's names here.
    node_name = serializers.SerializerMethodField(help_text="OSMO's name of `node`; null until it has one.")
    failure_message = serializers.SerializerMethodField(help_text="OSMO's name of `error`; null when empty.")
    processing_start_time = OsmoTimeField(source="created_at", help_text="OSMO's name of `submit_time`.")
    scheduling_start_time = OsmoTimeField(
        source="pod_created_at", allow_null=True, help_text="OSMO's name of `pod_created_time`."
    )
    dashboard_url = serializers.CharField(read_only=True, default=None, allow_null=True, help_text="Always null.")

    def get_status_message(self, task) -> str:
        waiting = getattr(task, "waiting", None)  # laid on by workflows.queries.with_tasks
        return waiting.text if waiting else ""

    def get_node_name(self, task) -> str | None:
        return task.node or None

    def get_failure_message(self, task) -> str | None:
        return task.error or None


class WorkflowDetailSerializer(WorkflowSummarySerializer):
    """OSMO's workflow query answer (`groups` of `tasks`, `submitted_by`, `overview`, `spec` and `events` links,
    timeouts in seconds) with the portal's (`tasks`, flat, with the portal's task statuses)."""

    exec_timeout_seconds = serializers.IntegerField(allow_null=True)
    queue_timeout_seconds = serializers.IntegerField(allow_null=True)
    exec_timeout = serializers.IntegerField(source="exec_timeout_seconds", allow_null=True, help_text="Seconds.")
    queue_timeout = serializers.IntegerField(source="queue_timeout_seconds", allow_null=True, help_text="Seconds.")
    warnings = serializers.ListField(child=serializers.CharField())
    error = serializers.CharField(allow_blank=True)
    failure_message = serializers.CharField(source="error", allow_blank=True)
    cancelled_by = serializers.CharField(allow_blank=True, help_text="Who cancelled it; empty when nobody did.")
    backend = serializers.CharField(source="pool.backend.name", default=None)
    spec = serializers.SerializerMethodField(help_text="Link to the spec as submitted.")
    events = serializers.SerializerMethodField(help_text="Link to the events.")
    cancelled_by = serializers.CharField(
        read_only=True, default=None, allow_null=True, help_text="Not kept: see the CANCELLED event."
    )
    tags = serializers.ListField(
        child=serializers.CharField(), read_only=True, default=list, help_text="Always empty: the portal has no tags."
    )
    groups = serializers.SerializerMethodField(help_text="OSMO's shape: the tasks by group, OSMO's statuses.")
    tasks = TaskSerializer(many=True, source="task_rows")

    def get_spec(self, workflow) -> str:
        return osmo.api_url(self.context.get("request"), workflow.workflow_id, "spec")

    @extend_schema_field({"type": "object", "nullable": True})
    def get_queue(self, workflow) -> dict | None:
        return queue_of(workflow, ask_scheduler=True)  # one workflow: its scheduler may be asked

    def get_events(self, workflow) -> str:
        return osmo.api_url(self.context.get("request"), workflow.workflow_id, "events")

    @extend_schema_field({"type": "array", "items": {"type": "object"}})
    def get_groups(self, workflow) -> list:
        return osmo.groups(workflow.task_rows)


class EventSerializer(serializers.Serializer):
    time = serializers.DateTimeField(source="at")
    task = serializers.CharField(source="task.name")
    kind = serializers.CharField()
    message = serializers.CharField(allow_blank=True)


class EventListSerializer(serializers.Serializer):
    workflow_id = serializers.CharField()
    events = EventSerializer(many=True)


class SpecSerializer(serializers.Serializer):
    workflow_id = serializers.CharField()
    spec = serializers.JSONField(help_text="The spec as submitted (parsed from YAML or JSON).")


class CancelSerializer(serializers.Serializer):
    message = serializers.CharField(required=False, allow_blank=True, default="", max_length=1000)
    force = serializers.BooleanField(
        default=False,
        help_text=("Also for a finished workflow: delete any pods it left behind (otherwise 409 workflow_finished)."),
    )
