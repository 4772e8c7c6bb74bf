"""Request and response shapes of the workflow API (OSMO's paths; see docs/workflows-api.md)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from portal.api import MAX_INT
from workflows.models import Priority, TaskStatus, WorkflowStatus

# Named in SPECTACULAR_SETTINGS["ENUM_NAME_OVERRIDES"]: two `status` fields, two schema enums.
WORKFLOW_STATUSES = WorkflowStatus.values
TASK_STATUSES = TaskStatus.values


@extend_schema_field({"type": "array", "items": {"type": "string"}})
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
        return [part.strip() for item in items for part in item.split(",") if part.strip()]

    def to_representation(self, value):
        return value


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


class SubmitBodySerializer(serializers.Serializer):
    file = serializers.CharField(
        help_text=(
            "The workflow spec (OSMO v2) as YAML or JSON text. The body may also be the spec document itself "
            "(JSON), raw YAML (Content-Type: application/yaml or text/plain), or a multipart upload named file."
        )
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
    name = serializers.CharField(allow_null=True, help_text="The workflow id (null for a dry run).")
    workflow_id = serializers.CharField(allow_null=True)
    status = serializers.CharField(help_text="PENDING, or DRY_RUN / VALID when nothing was stored.")
    pool = serializers.CharField()
    project = serializers.CharField(allow_null=True, help_text="The project charged (null: none).")
    tasks = SubmittedTaskSerializer(many=True)
    warnings = serializers.ListField(child=serializers.CharField())


class ListQuerySerializer(serializers.Serializer):
    users = NamesField(required=False, help_text="Submitters (default: you, unless all_users).")
    all_users = serializers.BooleanField(default=False, help_text="Everyone's workflows that you may list.")
    pools = NamesField(required=False)
    statuses = NamesField(required=False, help_text=", ".join(WorkflowStatus.values))
    name = serializers.CharField(required=False, allow_blank=True, help_text="Part of the workflow name.")
    submitted_after = serializers.DateTimeField(required=False)
    submitted_before = serializers.DateTimeField(required=False)
    offset = serializers.IntegerField(min_value=0, max_value=MAX_INT, default=0)
    limit = serializers.IntegerField(min_value=1, max_value=1000, default=20)
    order = serializers.ChoiceField(choices=["asc", "desc"], default="desc")

    def validate_statuses(self, value):
        unknown = [status for status in value if status.upper() not in WorkflowStatus.values]
        if unknown:
            raise serializers.ValidationError(
                f"unknown status {unknown[0]!r}; expected one of {', '.join(WorkflowStatus.values)}"
            )
        return value


class WorkflowSummarySerializer(serializers.Serializer):
    name = serializers.CharField(source="workflow_id")
    workflow_id = serializers.CharField()
    uuid = serializers.UUIDField()
    pool = serializers.CharField(source="pool.name")
    project = serializers.CharField(
        source="project.name", allow_null=True, default=None, help_text="The project it is charged to (null: none)."
    )
    submitted_by = serializers.CharField(source="submitted_by.username")
    priority = serializers.ChoiceField(choices=Priority.values)
    status = serializers.ChoiceField(choices=WORKFLOW_STATUSES)
    task_count = serializers.IntegerField(required=False)
    submit_time = serializers.DateTimeField(source="created_at")
    start_time = serializers.DateTimeField(source="started_at", allow_null=True)
    end_time = serializers.DateTimeField(source="finished_at", allow_null=True)


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
    error = serializers.CharField(allow_blank=True, help_text="Why it failed, or why it is not running yet.")
    exit_actions = serializers.JSONField()
    submit_time = serializers.DateTimeField(source="created_at")
    pod_created_time = serializers.DateTimeField(source="pod_created_at", allow_null=True)
    start_time = serializers.DateTimeField(source="started_at", allow_null=True)
    end_time = serializers.DateTimeField(source="finished_at", allow_null=True)


class WorkflowDetailSerializer(WorkflowSummarySerializer):
    labels = serializers.JSONField()
    exec_timeout_seconds = serializers.IntegerField(allow_null=True)
    queue_timeout_seconds = serializers.IntegerField(allow_null=True)
    warnings = serializers.ListField(child=serializers.CharField())
    error = serializers.CharField(allow_blank=True)
    tasks = TaskSerializer(many=True, source="task_rows")


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
