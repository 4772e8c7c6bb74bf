"""Machine pools' status over REST (docs/machine-pools.md, "Status"): the figures the admin shows, for automation.

    GET /api/machine_pools[?backend=B][&state=S][&offset=N][&limit=N]   a page of machine pools with their status
    GET /api/machine_pools/{name}                                       one, with the platforms its nodes serve

Who may read: `config:Read` on `config/machine_pool`, as `GET /api/configs/machine_pool` and the admin's machine
pool pages (osmo-admin, or a role that grants it). The views only translate HTTP: the FilterSet
(`clusters.filters.MachinePoolFilter`, which `machinepool list` applies too) narrows, the service
(`pools.services.machine_pool_status`) pages and computes (`clusters.machinepools.figures`).
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.generics import GenericAPIView
from rest_framework.response import Response
from rest_framework.views import APIView

from access import actions
from clusters.filters import STATES, MachinePoolFilter
from clusters.models import MachinePool
from configs.models import ConfigType
from pools.services import machine_pool_status
from portal.api import MAX_INT, MAX_PAGE, ErrorSerializer, IntParam

ERRORS = {400: ErrorSerializer, 401: ErrorSerializer, 403: ErrorSerializer, 404: ErrorSerializer}
OFFSET = IntParam("offset", 0, MAX_INT, 0, "machine pools to skip (by name)")
LIMIT = IntParam("limit", 1, MAX_PAGE, 100, "machine pools of this page")
NAME = OpenApiParameter("name", str, OpenApiParameter.PATH, description="The machine pool.")
# The FilterSet's parameters, declared here: spectacular reads a FilterSet only on a list action
FILTERS = [
    OpenApiParameter("backend", str, description="Only this backend's machine pools (an unknown backend is a 400)."),
    OpenApiParameter("state", str, enum=STATES, description="Only machine pools in this state."),
]
READ = {"policy_action": actions.CONFIG_READ, "policy_resource": actions.config(ConfigType.MACHINE_POOL)}
MONEY = "USD per hour, a decimal string; null when no price is known"


class RangeSerializer(serializers.Serializer):
    now = serializers.IntegerField()
    max = serializers.IntegerField(help_text="at the machine pool's maximum (max replicas, or the fixed count)")


class ScalingSerializer(serializers.Serializer):
    min_replicas = serializers.IntegerField()
    max_replicas = serializers.IntegerField()


class NodesSerializer(serializers.Serializer):
    now = serializers.IntegerField(help_text="the inventory's nodes of the pool (the watcher's, what placement sees)")
    ready = serializers.IntegerField(help_text="of those, ready and schedulable")
    min = serializers.IntegerField(help_text="the fewest the pool keeps (min replicas, or the fixed count)")
    max = serializers.IntegerField(help_text="the most it grows to")
    provider_now = serializers.IntegerField(help_text="the provider's count at its last reconcile")
    provider_ready = serializers.IntegerField(help_text="ready nodes at the last reconcile")


class CapacitySerializer(serializers.Serializer):
    nodes = RangeSerializer()
    gpus = RangeSerializer()
    cpu_millicores = RangeSerializer(help_text="the instance type's vCPUs × 1000 per node")
    memory_bytes = RangeSerializer(help_text="the instance type's memory per node")


class HourlyCostSerializer(serializers.Serializer):
    capacity_type = serializers.ChoiceField(choices=["spot", "on-demand"])
    hourly_each = serializers.CharField(allow_null=True, help_text=f"one node: {MONEY}")
    source = serializers.CharField(help_text="where that price comes from (docs/machine-pools.md#spot-prices)")
    estimate = serializers.BooleanField()
    on_demand_each = serializers.CharField(allow_null=True, help_text=f"one node on demand: {MONEY}")
    now = serializers.CharField(allow_null=True, help_text=f"the nodes now: {MONEY}")
    at_max = serializers.CharField(allow_null=True, help_text=f"at the maximum: {MONEY}")
    on_demand_now = serializers.CharField(allow_null=True)
    on_demand_at_max = serializers.CharField(allow_null=True)
    saving_each = serializers.CharField(allow_null=True, help_text="spot: what a node saves against on demand")
    saving_percent = serializers.IntegerField(allow_null=True)
    line = serializers.CharField(help_text="the admin's line: now / at max, spot against on-demand")


class TaintSerializer(serializers.Serializer):
    key = serializers.CharField()
    value = serializers.CharField(allow_blank=True)
    effect = serializers.CharField()


class SchedulingSerializer(serializers.Serializer):
    node_selector = serializers.DictField(child=serializers.CharField(), help_text="a pod's nodeSelector")
    tolerations = serializers.ListField(child=serializers.DictField(), help_text="one per taint of the pool")
    node_labels = serializers.DictField(
        child=serializers.CharField(allow_blank=True), help_text="every label a node of the pool carries"
    )


class MachinePoolStatusSerializer(serializers.Serializer):
    name = serializers.CharField()
    backend = serializers.CharField()
    provider = serializers.CharField(allow_blank=True, help_text="rosa, karpenter, or empty (export only)")
    region = serializers.CharField(allow_blank=True, help_text="the backend's AWS region (empty: unknown)")
    description = serializers.CharField(allow_blank=True)
    state = serializers.ChoiceField(choices=MachinePool.State.values)
    provider_id = serializers.CharField(allow_blank=True, help_text="the pool's id at the provider")
    last_answer = serializers.CharField(allow_blank=True, help_text="the provider's last answer, in its words")
    last_answer_at = serializers.DateTimeField(allow_null=True)
    attempts = serializers.IntegerField(help_text="failed reconcile attempts in a row")
    instance_type = serializers.CharField()
    machine = serializers.CharField(help_text="the instance type as the catalog describes it")
    capacity_type = serializers.ChoiceField(choices=["spot", "on-demand"])
    spot = serializers.BooleanField()
    max_price = serializers.CharField(allow_null=True, help_text="spot only; null: capped at the on-demand price")
    disk_size = serializers.IntegerField(help_text="root volume, GiB")
    autoscaling = ScalingSerializer(allow_null=True)
    replicas = serializers.IntegerField(allow_null=True, help_text="a fixed count; null when autoscaling")
    nodes = NodesSerializer()
    capacity = CapacitySerializer(help_text="now and at the maximum")
    hourly_cost = HourlyCostSerializer()
    labels = serializers.DictField(child=serializers.CharField(allow_blank=True))
    taints = TaintSerializer(many=True)
    placement = serializers.DictField(
        help_text="zones, subnets, security groups, AWS tags (ROSA); requirements, limits, disruption (Karpenter)"
    )
    scheduling = SchedulingSerializer(help_text="what a workload needs to land on the pool's nodes")


class PlatformRefSerializer(serializers.Serializer):
    pool = serializers.CharField()
    platform = serializers.CharField()


class MachinePoolDetailSerializer(MachinePoolStatusSerializer):
    platforms = PlatformRefSerializer(many=True, help_text="the platforms whose pods the pool's nodes take")


class MachinePoolPageSerializer(serializers.Serializer):
    machine_pools = MachinePoolStatusSerializer(many=True)
    count = serializers.IntegerField(help_text="machine pools the filters match")
    offset = serializers.IntegerField()
    limit = serializers.IntegerField()
    more_entries = serializers.BooleanField()


# Generic: get_queryset, and DRF's filter backend with MachinePoolFilter (?backend=&state=). Not ListAPIView: the
# answer is a page object holding the rows the service builds. (A docstring here would become the operation's
# description in the schema.)
class MachinePoolListView(GenericAPIView):
    filterset_class = MachinePoolFilter
    policy_action, policy_resource = READ["policy_action"], READ["policy_resource"]

    def get_queryset(self):
        return machine_pool_status.all_machine_pools()

    @extend_schema(
        operation_id="machine_pool_list",
        summary="Machine pools with their status: state, nodes, scaling, capacity and hourly cost now and at max",
        description="Needs config:Read on config/machine_pool. Ordered by name; filter by backend and state.",
        parameters=[*FILTERS, OFFSET.parameter(), LIMIT.parameter()],
        responses={200: MachinePoolPageSerializer, **ERRORS},
    )
    def get(self, request):
        offset, limit = OFFSET.read(request), LIMIT.read(request)
        rows = self.filter_queryset(self.get_queryset())
        return Response(machine_pool_status.page(rows, offset, limit).as_dict())


class MachinePoolView(APIView):
    policy_action, policy_resource = READ["policy_action"], READ["policy_resource"]

    @extend_schema(
        operation_id="machine_pool_retrieve",
        summary="One machine pool's status, what a workload needs to land there, and the platforms it serves",
        description="Needs config:Read on config/machine_pool. An unknown name is a 404 naming the ones there are.",
        parameters=[NAME],
        responses={200: MachinePoolDetailSerializer, **ERRORS},
    )
    def get(self, request, name):
        return Response(machine_pool_status.detail(name))
