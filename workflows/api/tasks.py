"""`GET /api/task` (`osmo task list`): tasks across workflows in OSMO's shapes (NVIDIA/OSMO
src/service/core/workflow/objects.py `ListTaskResponse`, `ListTaskSummaryResponse`,
`ListTaskAggregatedResponse`). Thin: `workflows.task_list` selects; who sees what is `access.policy`'s."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from portal.api import MAX_INT, MAX_PAGE, BoundedInt
from workflows import task_list
from workflows.api import osmo
from workflows.api.serializers import NamesField, OsmoTimeField, PriorityOrderQuery
from workflows.api.views import ERRORS, SignedIn


class TaskListQuerySerializer(PriorityOrderQuery, serializers.Serializer):
    workflow_id = serializers.CharField(
        required=False, allow_blank=True, max_length=253, help_text="Part of the workflow id."
    )
    statuses = NamesField(
        required=False, help_text="OSMO's task statuses (PROCESSING, SCHEDULING, INITIALIZING, …) or the portal's."
    )
    users = NamesField(required=False, help_text="Submitters (default: you, unless all_users).")
    all_users = serializers.BooleanField(default=False, help_text="Everyone's tasks that you may list.")
    pools = NamesField(required=False)
    all_pools = serializers.BooleanField(default=False, help_text="OSMO's CLI sends it without --pool: no filter.")
    nodes = NamesField(required=False, help_text="Nodes the tasks ran on.")
    priority = NamesField(required=False, help_text="HIGH, NORMAL, LOW.")
    started_after = serializers.DateTimeField(required=False, help_text="Naive times are UTC.")
    started_before = serializers.DateTimeField(required=False)
    offset = BoundedInt(min_value=0, max_value=MAX_INT, default=0)
    limit = BoundedInt(min_value=1, max_value=MAX_PAGE, default=20)
    order = serializers.CharField(default="asc", help_text="asc (latest last) or desc; any case (OSMO sends ASC).")
    summary = serializers.BooleanField(default=False, help_text="Resources summed per user, pool and priority.")
    aggregate_by_workflow = serializers.BooleanField(default=False, help_text="Summed per workflow too.")

    def validate_statuses(self, value):
        unknown = [status for status in value if status.upper() not in task_list.KNOWN_STATUSES]
        if unknown:
            known = ", ".join(sorted(task_list.KNOWN_STATUSES))
            raise serializers.ValidationError(f"unknown status {unknown[0]!r}; expected one of {known}")
        return value


class TaskEntrySerializer(serializers.Serializer):
    """OSMO's `ListTaskEntry`; durations in seconds, times naive UTC, resources as the pod requests them."""

    user = serializers.CharField(source="workflow.submitted_by.username")
    workflow_id = serializers.CharField(source="workflow.workflow_id")
    workflow_uuid = serializers.SerializerMethodField()
    task_name = serializers.CharField(source="name")
    retry_id = serializers.IntegerField()
    pool = serializers.CharField(source="workflow.pool.name")
    node = serializers.SerializerMethodField()
    start_time = OsmoTimeField(source="started_at", allow_null=True)
    end_time = OsmoTimeField(source="finished_at", allow_null=True)
    duration = serializers.SerializerMethodField(help_text="Seconds from start to end (or now); null if not started.")
    status = serializers.SerializerMethodField()
    overview = serializers.SerializerMethodField()
    logs = serializers.SerializerMethodField()
    error_logs = serializers.SerializerMethodField()
    grafana_url = serializers.SerializerMethodField()
    dashboard_url = serializers.SerializerMethodField()
    storage = serializers.FloatField(source="resources.storage", help_text="GiB")
    cpu = serializers.FloatField(source="resources.cpu", help_text="cores")
    memory = serializers.FloatField(source="resources.memory", help_text="GiB")
    gpu = serializers.FloatField(source="resources.gpu")
    priority = serializers.CharField(source="workflow.priority")

    def to_representation(self, instance):
        instance.resources = task_list.Resources.of(instance.pod)
        data = super().to_representation(instance)
        data.update(instance.resources.as_dict())  # whole numbers stay ints
        return data

    def get_workflow_uuid(self, task) -> str:
        return task.workflow.uuid.hex

    def get_node(self, task) -> str | None:
        return task.node or None

    def get_duration(self, task) -> float | None:
        return osmo.seconds_between(task.started_at, task.finished_at)

    def get_status(self, task) -> str:
        return osmo.task_status(task)

    def get_overview(self, task) -> str:
        return osmo.overview_url(self.context.get("request"), task.workflow.workflow_id)

    def get_logs(self, task) -> str:
        return osmo.task_logs_url(self.context.get("request"), task.workflow.workflow_id, task.name)

    def get_error_logs(self, task) -> str | None:
        return None

    def get_grafana_url(self, task) -> str | None:
        return None

    def get_dashboard_url(self, task) -> str | None:
        return None


class TaskSummarySerializer(serializers.Serializer):
    """OSMO's `ListTaskSummaryEntry` (`ListTaskAggregatedEntry`: with `workflow_id`)."""

    user = serializers.CharField()
    pool = serializers.CharField()
    priority = serializers.CharField()
    storage = serializers.FloatField(help_text="GiB")
    cpu = serializers.FloatField(help_text="cores")
    memory = serializers.FloatField(help_text="GiB")
    gpu = serializers.FloatField()
    workflow_id = serializers.CharField(required=False, help_text="With aggregate_by_workflow.")


class TaskListSerializer(serializers.Serializer):
    """`{tasks}`, or `{summaries}` with `summary` or `aggregate_by_workflow`."""

    tasks = TaskEntrySerializer(many=True, required=False)
    summaries = TaskSummarySerializer(many=True, required=False)


class TaskListView(APIView):
    permission_classes = [SignedIn]

    @extend_schema(
        operation_id="task_list",
        summary="List tasks across workflows (osmo task list)",
        parameters=[TaskListQuerySerializer],
        responses={200: TaskListSerializer, **ERRORS},
        description=(
            "`{tasks: [...]}`; with `summary` `{summaries: [{user, pool, priority, storage, cpu, memory, gpu}]}`, "
            "with `aggregate_by_workflow` the same per workflow too. Default: your own tasks; `users`/`all_users` "
            "widen it to other users' tasks in pools where you hold `workflow:List`."
        ),
    )
    def get(self, request):
        serializer = TaskListQuerySerializer(data=request.query_params, context={"request": request})
        serializer.is_valid(raise_exception=True)
        options = dict(serializer.validated_data)
        summary, by_workflow = options.pop("summary"), options.pop("aggregate_by_workflow")
        options.pop("all_pools")
        query = task_list.TaskQuery(**options)
        if summary or by_workflow:
            # OSMO answers the summary when both are asked
            rows = task_list.summaries(request, query, by_workflow=by_workflow and not summary)
            return Response({"summaries": rows})
        tasks = task_list.list_tasks(request, query)
        return Response({"tasks": TaskEntrySerializer(tasks, many=True, context={"request": request}).data})
