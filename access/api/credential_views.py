"""A user's credentials over REST, on OSMO's paths (what `osmo credential set|list|delete` sends):

- `GET /api/credentials`: `{"credentials": [{cred_name, cred_type, profile, keys}]}`, never a value;
- `POST /api/credentials/NAME` with OSMO's `CredentialOptions` body: create or replace; answers `null`, as OSMO;
- `DELETE /api/credentials/NAME`: `{"credentials": [the deleted one]}`; another user's (or no) credential of
  that name is a 404.

Always the caller's own: `credentials:Read|Update|Delete` on `credentials/<caller>` (`osmo-user` holds
`credentials:*`), decided by `access.policy` through `PolicyPermission`.
"""

from __future__ import annotations

from django.http import JsonResponse
from drf_spectacular.utils import OpenApiTypes, extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from access import actions
from access.api.permissions import PolicyPermission
from access.services import credentials
from configs.revisions import Actor
from portal.api import ErrorSerializer

ERRORS = {400: ErrorSerializer, 401: ErrorSerializer, 403: ErrorSerializer, 404: ErrorSerializer}
_ACTIONS = {"GET": actions.CREDENTIALS_READ, "POST": actions.CREDENTIALS_UPDATE, "DELETE": actions.CREDENTIALS_DELETE}


class CredentialAPIView(APIView):
    permission_classes = [PolicyPermission]

    def get_policy_action(self, request):
        return _ACTIONS.get(request.method, actions.CREDENTIALS_READ)

    def get_policy_resource(self, request):
        return actions.credentials(request.user.get_username() if request.user.is_authenticated else "")


class CredentialCollectionView(CredentialAPIView):
    @extend_schema(responses={200: OpenApiTypes.OBJECT, **ERRORS}, summary="Your credentials (names, types, keys)")
    def get(self, request):
        return Response({"credentials": [credentials.describe(c) for c in credentials.credentials_of(request.user)]})


class CredentialObjectView(CredentialAPIView):
    @extend_schema(
        request=OpenApiTypes.OBJECT,
        responses={200: OpenApiTypes.NONE, **ERRORS},
        summary="Create or replace a credential (REGISTRY, DATA or GENERIC)",
    )
    def post(self, request, name):
        credentials.set_credential(request.user, name, request.data, Actor.for_request(request, "api"))
        return JsonResponse(None, safe=False)  # OSMO's answer: `null` (DRF would send an empty body)

    @extend_schema(responses={200: OpenApiTypes.OBJECT, **ERRORS}, summary="Delete one of your credentials")
    def delete(self, request, name):
        deleted = credentials.delete(request.user, name, Actor.for_request(request, "api"))
        return Response({"credentials": [credentials.describe(deleted)]})
