"""`GET/POST /api/profile/settings` (OSMO's path; `osmo profile list|set`). Thin: `pools.services.profiles`."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from access import actions
from access.api.permissions import PolicyPermission
from pools.api.views import ERRORS
from pools.services import profiles


class ProfileSettingsView(APIView):
    """`profile:Read` to read, `profile:Update` to change (both in the built-in `osmo-default` role, which
    anonymous callers hold too: a profile needs a user, so they are refused first)."""

    permission_classes = [IsAuthenticated, PolicyPermission]

    def get_policy_action(self, request) -> str:
        return actions.PROFILE_READ if request.method in ("GET", "HEAD", "OPTIONS") else actions.PROFILE_UPDATE

    @extend_schema(
        responses={200: OpenApiTypes.OBJECT, **ERRORS},
        summary="Your profile (default pool, notification switches), the pools you may use, your roles",
    )
    def get(self, request):
        return Response(profiles.settings_answer(request))

    @extend_schema(
        request=OpenApiTypes.OBJECT,
        responses={200: OpenApiTypes.OBJECT, **ERRORS},
        summary="Change profile fields (`pool`, `email_notification`, `slack_notification`); null = unchanged",
    )
    def post(self, request):
        profiles.update(request, request.data)
        return Response(profiles.settings_answer(request))
