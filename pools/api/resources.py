"""`GET /api/resources?pools=a,b&platforms=x`: nodes and capacity (OSMO's path). Thin: capacity service."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from access import actions
from configs.errors import ConfigError
from pools.api.views import PoolListView
from pools.services import capacity
from portal.api import ErrorSerializer

LIST_HELP = "Comma-separated, or repeated (?{0}=a&{0}=b). Empty: all."


KNOWN_PARAMS = {"pools", "platforms", "nodes", "format"}


def _names(request, key: str) -> list[str]:
    """The names given in `?key=`; an empty one (`?pools=`, `?pools=a,,b`) is refused naming the value, so a
    typo never silently widens the answer to every pool."""
    names = []
    for value in request.query_params.getlist(key):
        parts = [name.strip() for name in value.split(",")]
        if not all(parts):
            raise ConfigError(
                f"an empty {key[:-1]} name; give {key} as name[,name...], or leave {key} out for all",
                field=key,
                value=value,
            )
        names.extend(parts)
    return names


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
            OpenApiParameter("nodes", bool, description="Include per-node rows (default true)."),
        ],
        responses={200: OpenApiTypes.OBJECT, 400: ErrorSerializer, 404: ErrorSerializer},
        summary="Nodes of pools with allocatable, used and free resources; totals count each node once",
    )
    def get(self, request):
        _check_params(request)
        report = capacity.capacity(_names(request, "pools"), _names(request, "platforms"))
        with_nodes = request.query_params.get("nodes", "true").lower() not in ("0", "false", "no")
        return Response(report.as_dict(with_nodes=with_nodes))
