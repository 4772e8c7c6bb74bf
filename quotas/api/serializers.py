"""Response and request shapes of the quota API (docs/quotas.md, "Doors"), for the schema. Shapes only:
`quotas.services` validates (field/value/reason errors)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from portal.api import MAX_INT, BoundedInt
from portal.numbers import MAX_LIST_ITEMS
from quotas.units import MAX_AMOUNT

LEND = "false = never lend: its unused deserved is kept idle for it, never another team's over-quota share."
AMOUNT = "An integer in scheduler units (GPUs, CPU millicores, memory bytes) or a Kubernetes quantity ('500m', '64Gi')."


class ResourcesSerializer(serializers.Serializer):
    gpu = serializers.IntegerField()
    cpu = serializers.IntegerField(help_text="millicores")
    memory = serializers.IntegerField(help_text="bytes")


class QuotaSerializer(serializers.Serializer):
    deserved = serializers.IntegerField(help_text="guaranteed")
    limit = serializers.IntegerField(allow_null=True, help_text="hard cap (≥ deserved); null = none")
    weight = serializers.IntegerField(help_text="share of the over-quota surplus")
    lend = serializers.BooleanField(help_text=LEND)


class TeamQuotasSerializer(serializers.Serializer):
    gpu = QuotaSerializer()
    cpu = QuotaSerializer()
    memory = QuotaSerializer()


class NodePoolSerializer(serializers.Serializer):
    name = serializers.CharField()
    backend = serializers.CharField()
    selector = serializers.JSONField(help_text="As the NODE_POOL document: {}, {label: {key, value}} or {platform}.")
    selector_text = serializers.CharField()
    over_quota = serializers.BooleanField()
    description = serializers.CharField(allow_blank=True)
    managed = serializers.BooleanField(help_text="Some quota guarantees or caps something: admission runs.")
    nodes = serializers.IntegerField(help_text="Member nodes (each node is in exactly one node pool).")
    empty = serializers.BooleanField(help_text="No node: its quotas guarantee nothing until one joins.")
    capacity = ResourcesSerializer(help_text="Allocatable of the Ready, schedulable member nodes.")
    deserved = ResourcesSerializer(help_text="Sum of the departments' deserved quotas.")
    overcommitted = serializers.BooleanField(help_text="Deserved exceeds capacity for some resource.")
    overcommitted_resources = serializers.ListField(child=serializers.CharField())


class NodePoolListSerializer(serializers.Serializer):
    node_pools = NodePoolSerializer(many=True)


class DepartmentQuotaSerializer(serializers.Serializer):
    name = serializers.CharField()
    quotas = TeamQuotasSerializer()
    projects = serializers.ListField(child=serializers.CharField())


class ProjectRowSerializer(serializers.Serializer):
    project = serializers.CharField()
    department = serializers.CharField(allow_null=True)
    resource = serializers.CharField()
    deserved = serializers.IntegerField()
    limit = serializers.IntegerField(allow_null=True)
    weight = serializers.IntegerField()
    lend = serializers.BooleanField(help_text=LEND)
    priority = serializers.IntegerField()
    allocated = serializers.IntegerField(help_text="In use by its admitted, unfinished workflows.")
    queued = serializers.IntegerField(help_text="Asked for by its queued workflows.")
    fair_share = serializers.FloatField()
    borrowed = serializers.IntegerField(help_text="In use above deserved.")


class UsageWeightSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=["department", "project"])
    name = serializers.CharField()
    department = serializers.CharField(allow_null=True, help_text="A project's department; null for a department.")
    weight = serializers.IntegerField(help_text="Its over-quota weight.")
    usage = serializers.FloatField(help_text="Its usage over the window, a share of what the node pool could give.")
    weight_before = serializers.FloatField(help_text="wn: its weight over its siblings' (same department, priority).")
    weight_after = serializers.FloatField(help_text="max(0, wn + k·(wn − usage)).")


class TimeBasedFairShareSerializer(serializers.Serializer):
    window_days = serializers.IntegerField()
    counted_days = serializers.IntegerField(
        help_text="The days usage is counted over: window_days, or what the raw usage record keeps"
        " (USAGE_RAW_RETENTION_DAYS) if that is shorter."
    )
    half_life_hours = serializers.IntegerField(allow_null=True, help_text="null: no decay")
    k = serializers.FloatField()
    text = serializers.CharField()
    weights = serializers.DictField(
        child=UsageWeightSerializer(many=True), help_text="Per resource (gpu, cpu, memory), the teams shown."
    )


class NodePoolDetailSerializer(NodePoolSerializer):
    departments = DepartmentQuotaSerializer(many=True)
    projects = ProjectRowSerializer(many=True, help_text="Per project and resource.")
    time_based_fair_share = TimeBasedFairShareSerializer(
        allow_null=True, help_text="null: past usage does not count here (NODE_POOL time_based_fair_share)."
    )


# An amount as the schema declares it: scheduler units within the quota columns' bound, or a quantity's text
# (quotas.units.amount checks both; a quantity above 2^62 units is refused there, naming the field).
@extend_schema_field({"oneOf": [{"type": "integer", "minimum": 0, "maximum": MAX_AMOUNT}, {"type": "string"}]})
class AmountField(serializers.JSONField):
    pass


class QuotaInputSerializer(serializers.Serializer):
    deserved = AmountField(required=False, help_text=AMOUNT)
    limit = AmountField(required=False, allow_null=True, help_text=f"{AMOUNT} null = no limit.")
    weight = BoundedInt(required=False, min_value=0, max_value=MAX_INT)
    lend = serializers.BooleanField(required=False, help_text=LEND)


class QuotaWriteSerializer(serializers.Serializer):
    gpu = QuotaInputSerializer(required=False)
    cpu = QuotaInputSerializer(required=False)
    memory = QuotaInputSerializer(required=False)
    description = serializers.CharField(required=False, allow_blank=True, help_text="The revision's description.")


class QuotaWrittenSerializer(serializers.Serializer):
    node_pool = serializers.CharField()
    team_kind = serializers.ChoiceField(choices=["department", "project"])
    team = serializers.CharField()
    quotas = TeamQuotasSerializer()
    changed = serializers.BooleanField()
    revision = serializers.IntegerField(allow_null=True, help_text="The NODE_POOL revision written (null: unchanged).")


# -- what-if (quotas.services.what_if) ------------------------------------------------------------------------------
CHANGE = (
    "One change: 'PROJECT NODE_POOL gpu=N [limit-gpu=N|none] [weight-gpu=N]', 'PROJECT priority=N', "
    "'department DEPT NODE_POOL gpu=N …' or 'capacity NODE_POOL gpu=+N|-N|N' (docs/quotas.md, \"What-if\")."
)


WORKLOAD_JOB = (
    "{project, node_pool, gpus (1-100000), submit_offset_s (0 to the period's seconds - 1), duration_s (1-2678400),"
    " priority (HIGH|NORMAL|LOW, optional), id (optional, at most 100 characters)}"
)


class WhatIfRequestSerializer(serializers.Serializer):
    start = serializers.DateTimeField(
        required=False, allow_null=True, help_text="The period's start (default: `end` − 7 days)."
    )
    end = serializers.DateTimeField(
        required=False, allow_null=True, help_text="Its end, excluded (default: now); at most 31 days after start."
    )
    changes = serializers.ListField(
        child=serializers.CharField(max_length=500, help_text=CHANGE),
        max_length=MAX_LIST_ITEMS,
        required=False,
        default=list,
    )
    workload = serializers.ListField(
        child=serializers.DictField(help_text=WORKLOAD_JOB),
        max_length=MAX_LIST_ITEMS,
        required=False,
        allow_null=True,
        default=None,
        help_text="A synthetic workload replayed in place of the recorded one (default period: the next 7 days "
        "from now, under today's quotas); each job checked by the service, naming `workload[i].key`.",
    )


class ReplayFiguresSerializer(serializers.Serializer):
    jobs = serializers.IntegerField()
    started = serializers.IntegerField()
    never_started = serializers.IntegerField()
    wait_p50_s = serializers.IntegerField(allow_null=True, help_text="seconds, submission → first start")
    wait_p95_s = serializers.IntegerField(allow_null=True)
    gpu_hours = serializers.FloatField()
    gpu_hours_lost = serializers.FloatField()
    preemptions = serializers.IntegerField()
    idle_guarantee_gpu_hours = serializers.FloatField(help_text="deserved GPU-hours not used, over the period")
    cost = serializers.FloatField(help_text="GPU-hours × the node pool's recorded price of a GPU-hour")


class ActualFiguresSerializer(serializers.Serializer):
    jobs = serializers.IntegerField()
    started = serializers.IntegerField()
    wait_p50_s = serializers.IntegerField(allow_null=True, help_text="seconds, submission → admission")
    wait_p95_s = serializers.IntegerField(allow_null=True)
    gpu_hours = serializers.FloatField()
    preemptions = serializers.IntegerField()
    idle_guarantee_gpu_hours = serializers.FloatField(allow_null=True, help_text="null: the record does not say")
    cost = serializers.FloatField()


class WhatIfProjectSerializer(serializers.Serializer):
    project = serializers.CharField()
    department = serializers.CharField(allow_blank=True)
    actual = ActualFiguresSerializer()
    baseline = ReplayFiguresSerializer(help_text="the period replayed under today's quotas")
    proposed = ReplayFiguresSerializer(help_text="… and under the changes")


class RightNowSerializer(serializers.Serializer):
    node_pool = serializers.CharField()
    admits = serializers.ListField(child=serializers.CharField(), help_text="queued workflows it would admit")
    no_longer_admits = serializers.ListField(child=serializers.CharField())
    preempts = serializers.ListField(child=serializers.CharField(), help_text="running workflows it would stop")
    above_deserved = serializers.ListField(
        child=serializers.CharField(), help_text="running within a guarantee the change takes away"
    )


class WhatIfSerializer(serializers.Serializer):
    start = serializers.CharField()
    end = serializers.CharField()
    workload = serializers.ChoiceField(["recorded", "synthetic"], help_text="what was replayed")
    changes = serializers.ListField(child=serializers.CharField())
    workflows = serializers.IntegerField(help_text="workflows (or a synthetic workload's jobs) replayed")
    left_out = serializers.IntegerField(help_text="workflows with a part in a node pool that no longer exists")
    prices = serializers.DictField(child=serializers.FloatField(), help_text="node pool → price of a GPU-hour")
    projects = WhatIfProjectSerializer(many=True)
    right_now = RightNowSerializer(many=True)
