"""`GET /api/pool_quota` (OSMO's path; what `osmo pool list` prints): GPU quota and capacity per pool.

Here, in the quotas app, because a pool charged to a managed node pool takes its quota from the team quotas
(`quotas.services.osmo_quota`; docs/differences-from-osmo.md); other pools keep OSMO's figures (the pool's
guarantee, and the GPUs of its running HIGH/NORMAL tasks: `workflows.pool_gpu_usage`). The answer's shape is
`pools.services.pool_quota`. Which pools: as `GET /api/pool` (`pools.api.views.listed_pools`).
"""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from pools.api.views import ERRORS, POOL_LIST_PARAMETERS, PoolListView, listed_pools
from pools.services.pool_quota import pool_quota
from quotas.services.osmo_quota import quota_figures
from workflows.pool_gpu_usage import running_gpus


class PoolQuotaView(APIView):
    permission_classes = PoolListView.permission_classes
    policy_action = PoolListView.policy_action

    @extend_schema(
        parameters=POOL_LIST_PARAMETERS,
        responses={200: OpenApiTypes.OBJECT, **ERRORS},
        summary="GPU quota (limit, used, free) and capacity per pool, pools sharing nodes grouped in node sets",
        description=(
            "A pool charged to a managed node pool answers from the team quotas: quota_limit is the deserved GPUs "
            "of the caller's projects there (of every project for a caller in none), quota_used what they hold."
        ),
    )
    def get(self, request):
        names = listed_pools(request)
        if names == []:
            return Response(pool_quota(names, {}))
        return Response(pool_quota(names, running_gpus(names), quota_figures(names, request)))
