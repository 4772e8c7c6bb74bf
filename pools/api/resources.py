"""`GET /api/resources?pools=a,b&platforms=x`: nodes and capacity (OSMO's path, with the per-node fields
`osmo resource list` reads: `pools.services.osmo_resources`). Thin: capacity service."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from access import actions
from configs.errors import ConfigError
from pools.api import params
from pools.api.views import PoolListView
from pools.errors import NodeNotFound
from pools.services import capacity, osmo_resources
from portal.api import ErrorSerializer

LIST_HELP = "Comma-separated, or repeated (?{0}=a&{0}=b). Empty: all."


KNOWN_PARAMS = {"pools", "platforms", "all_pools", "nodes", "format"}


def _check_params(request) -> None:
    unknown = sorted(set(request.query_params) - KNOWN_PARAMS)
    if unknown:
        raise ConfigError(
            f"unknown query parameter; expected {', '.join(sorted(KNOWN_PARAMS - {'format'}))}",
            field=unknown[0],
            value=request.query_params.get(unknown[0]),
        )


class ResourceListView(APIView):
    # The same permission classes as the pool list; the action is OSMO's for this path.
    permission_classes = PoolListView.permission_classes
    policy_action = actions.RESOURCES_READ

    @extend_schema(
        parameters=[
            OpenApiParameter("pools", str, description=LIST_HELP.format("pools")),
            OpenApiParameter("platforms", str, description=LIST_HELP.format("platforms")),
            OpenApiParameter("all_pools", bool, description="Every pool, whatever `pools` says (OSMO's `--all`)."),
            OpenApiParameter("nodes", bool, description="Include per-node rows (default true)."),
        ],
        responses={200: OpenApiTypes.OBJECT, 400: ErrorSerializer, 404: ErrorSerializer},
        summary="Nodes of pools with allocatable, used and free resources; totals count each node once",
    )
    def get(self, request):
        _check_params(request)
        pools = [] if params.flag(request, "all_pools") else params.names(request, "pools")
        report = capacity.capacity(pools, params.names(request, "platforms"))
        return Response(osmo_resources.answer(report, with_nodes=params.flag(request, "nodes", default=True)))


class ResourceView(APIView):
    """`GET /api/resources/{name}` (`osmo resource info NODE`): the node with every pool/platform it serves."""

    permission_classes = PoolListView.permission_classes
    policy_action = actions.RESOURCES_READ

    @extend_schema(
        operation_id="resource_retrieve",
        responses={200: OpenApiTypes.OBJECT, 404: ErrorSerializer},
        summary="One node: allocatable, used and free resources, labels, conditions, its platforms' task settings",
    )
    def get(self, request, name):
        report = capacity.node_capacity(name)
        if not report.nodes:
            raise NodeNotFound(f"no node named {name!r}", field="name", value=name)
        return Response(osmo_resources.answer(report))
