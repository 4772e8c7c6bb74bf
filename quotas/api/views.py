"""Quota REST API (docs/quotas.md, "Doors"). Views only translate HTTP; `quotas.services.node_pool_quotas` decides.

    GET        /api/quotas/node_pools                                node pools: capacity, deserved sums, flags
    GET        /api/quotas/node_pools/{name}                         one: its quota tree, per project and resource
                                                                    deserved/limit/weight/allocated/fair share/borrowed
    PUT|PATCH  /api/quotas/node_pools/{name}/projects/{project}      set a project's quota (one NODE_POOL revision)
    PUT|PATCH  /api/quotas/node_pools/{name}/departments/{dept}      set a department's quota

Reading: `pool:List` (what researchers hold: they may see every node pool's totals, as `osmo pool list` shows
quotas); of the teams, their own projects and departments only, unless they may read every team's
(`teams.quota_visibility`, docs/access.md "Quota visibility"). Writing: `config:Update` on `config/node_pool`,
as `quotas.set_quota` enforces. PATCH changes what the body names; PUT sets the team's quota whole (what the
body leaves out: deserved 0, no limit, weight 1).
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.generics import GenericAPIView
from rest_framework.permissions import SAFE_METHODS
from rest_framework.response import Response
from rest_framework.views import APIView

from access import actions
from access.api.permissions import PolicyPermission
from configs.errors import ConfigNotFound
from configs.models import ConfigType
from configs.revisions import Actor
from portal.api import ErrorSerializer, checked_count, list_param
from quotas.api import serializers as s
from quotas.filters import NodePoolFilter
from quotas.services import node_pool_quotas
from teams.quota_visibility import quota_view

ERRORS = {400: ErrorSerializer, 401: ErrorSerializer, 403: ErrorSerializer, 404: ErrorSerializer}
NAME = OpenApiParameter("name", str, OpenApiParameter.PATH, description="The node pool.")
TEAM_KINDS = {"projects": "project", "departments": "department"}
TEAM_PATH = [
    NAME,
    OpenApiParameter("team_kind", str, OpenApiParameter.PATH, enum=sorted(TEAM_KINDS)),
    OpenApiParameter("team", str, OpenApiParameter.PATH, description="The project or department."),
]


class QuotaPermission(PolicyPermission):
    def target(self, request, view):
        if request.method in SAFE_METHODS:
            return actions.POOL_LIST, ""
        return actions.CONFIG_UPDATE, actions.config(ConfigType.NODE_POOL)


# Generic: get_queryset, and DRF's filter backend with NodePoolFilter. Not ListAPIView: the answer is an object
# holding the rows the service builds (two queries), not a serializer's bare list. (A docstring here would
# become the operation's description in the schema.)
class NodePoolListView(GenericAPIView):
    permission_classes = [QuotaPermission]
    filterset_class = NodePoolFilter  # ?node_pools=a&node_pools=b

    def get_queryset(self):
        return node_pool_quotas.all_node_pools()

    @extend_schema(
        operation_id="quota_node_pool_list",
        summary="Node pools: capacity, the departments' deserved sums, managed and over-committed flags",
        parameters=[list_param("node_pools", "Only these (repeat the parameter).")],
        responses={200: s.NodePoolListSerializer, **ERRORS},
    )
    def get(self, request):
        checked_count([name for name in request.query_params.getlist("node_pools") if name], "node_pools")  # ≤ 1,000
        rows = node_pool_quotas.node_pool_rows(self.filter_queryset(self.get_queryset()))
        return Response({"node_pools": rows})


class NodePoolView(APIView):
    permission_classes = [QuotaPermission]

    @extend_schema(
        operation_id="quota_node_pool_retrieve",
        summary="One node pool: its quota tree, and per project and resource the live figures",
        description=(
            "The node pool's totals, and the teams the caller may see: their own projects and departments, "
            "or every team for a caller with config:Read on config/node_pool (or when QUOTA_TEAMS_VISIBLE is on)."
        ),
        parameters=[NAME],
        responses={200: s.NodePoolDetailSerializer, **ERRORS},
    )
    def get(self, request, name):
        return Response(node_pool_quotas.node_pool_detail(name, quota_view(request)))


class TeamQuotaView(APIView):
    permission_classes = [QuotaPermission]

    def _write(self, request, name, team_kind, team, *, replace: bool):
        kind = TEAM_KINDS.get(team_kind)
        if kind is None:
            raise ConfigNotFound("no API resource here: use projects or departments", field="path", value=team_kind)
        result = node_pool_quotas.set_team_quota(
            request, name, kind, team, request.data, replace=replace, actor=Actor.for_request(request, "api")
        )
        return Response(
            {
                "node_pool": name,
                "team_kind": kind,
                "team": team,
                "quotas": node_pool_quotas.team_quotas(name, kind, team),
                "changed": result.changed,
                "revision": result.revision,
            }
        )

    @extend_schema(
        operation_id="quota_team_replace",
        summary="Set a project's or department's quota whole (left out: deserved 0, no limit, weight 1, lend true)",
        parameters=TEAM_PATH,
        request=s.QuotaWriteSerializer,
        responses={200: s.QuotaWrittenSerializer, **ERRORS},
    )
    def put(self, request, name, team_kind, team):
        return self._write(request, name, team_kind, team, replace=True)

    @extend_schema(
        operation_id="quota_team_update",
        summary="Change some of a project's or department's quota (what is left out is kept)",
        parameters=TEAM_PATH,
        request=s.QuotaWriteSerializer,
        responses={200: s.QuotaWrittenSerializer, **ERRORS},
    )
    def patch(self, request, name, team_kind, team):
        return self._write(request, name, team_kind, team, replace=False)
