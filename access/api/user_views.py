"""OSMO's user API (what `osmo user list|create|update|get|delete` sends), for whoever may manage users:
`config:Read` on `config/user` to read, `config:Update` to change (as the admin's user pages; `osmo-admin`).

OSMO 6.4's CLI says `api/auth/user…`, a later one `api/auth/users…` (with `external_id` and PATCH): both
spellings lead here (access/api/urls.py). Answers are OSMO's shapes (access.services.user_directory).
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiTypes, extend_schema
from rest_framework import serializers
from rest_framework.permissions import SAFE_METHODS
from rest_framework.response import Response
from rest_framework.views import APIView

from access import actions
from access.api.permissions import PolicyPermission
from access.api.serializers import RolesField
from access.services import user_directory
from configs.revisions import Actor
from portal.api import MAX_INT, MIN_INT, BoundedInt, ErrorSerializer, checked_count, list_param

ERRORS = {400: ErrorSerializer, 401: ErrorSerializer, 403: ErrorSerializer, 404: ErrorSerializer, 409: ErrorSerializer}


class ListQuery(serializers.Serializer):
    # Outside MIN_INT…MAX_INT a 400 naming the field (not a database error on the OFFSET); within it OSMO's
    # clamping: a start below 1 reads as 1, a count is held to 1-1000.
    start_index = BoundedInt(required=False, default=1, min_value=MIN_INT, max_value=MAX_INT)
    count = BoundedInt(required=False, default=100, min_value=MIN_INT, max_value=MAX_INT, help_text="page size, 1-1000")
    id_prefix = serializers.CharField(required=False, allow_blank=True)


class CreateUser(serializers.Serializer):
    id = serializers.CharField(max_length=150)
    roles = RolesField(required=False, allow_null=True)
    external_id = serializers.CharField(required=False, allow_null=True, allow_blank=True, max_length=255)


class UpdateUser(serializers.Serializer):
    external_id = serializers.CharField(max_length=255)


class AssignRole(serializers.Serializer):
    role_name = serializers.CharField(max_length=150)


class UserAPIView(APIView):
    permission_classes = [PolicyPermission]
    policy_resource = actions.config("user")

    def get_policy_action(self, request):
        return actions.CONFIG_READ if request.method in SAFE_METHODS else actions.CONFIG_UPDATE

    @staticmethod
    def actor(request) -> Actor:
        return Actor.for_request(request, "api")


def _body(request, serializer_class):
    serializer = serializer_class(data=request.data if hasattr(request.data, "keys") else {})
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


class UserCollectionView(UserAPIView):
    @extend_schema(
        parameters=[
            ListQuery,
            list_param("roles", "users holding ANY of these"),
        ],
        responses={200: OpenApiTypes.OBJECT, **ERRORS},
        summary="Users (OSMO's UserListResponse)",
        operation_id="auth_user_list",
    )
    def get(self, request, **kwargs):
        query = ListQuery(data=request.query_params.dict())
        query.is_valid(raise_exception=True)
        role_names = [name for value in request.query_params.getlist("roles") for name in value.split(",") if name]
        checked_count(role_names, "roles")
        return Response(
            user_directory.listing(
                start_index=query.validated_data["start_index"],
                count=query.validated_data["count"],
                id_prefix=query.validated_data.get("id_prefix") or None,
                role_names=role_names,
            )
        )

    @extend_schema(request=CreateUser, responses={200: OpenApiTypes.OBJECT, **ERRORS}, summary="Create a user")
    def post(self, request, **kwargs):
        data = _body(request, CreateUser)
        created = user_directory.create(
            data["id"],
            role_names=data.get("roles") or (),
            external_id=data.get("external_id") or None,
            actor=self.actor(request),
        )
        return Response(created)  # OSMO answers 200


class UserObjectView(UserAPIView):
    @extend_schema(responses={200: OpenApiTypes.OBJECT, **ERRORS}, summary="A user with roles (UserWithRoles)")
    def get(self, request, user_id, **kwargs):
        return Response(user_directory.detail(user_id))

    @extend_schema(request=UpdateUser, responses={200: OpenApiTypes.OBJECT, **ERRORS}, summary="Set external_id")
    def patch(self, request, user_id, **kwargs):
        data = _body(request, UpdateUser)
        return Response(user_directory.update_external_id(user_id, data["external_id"], self.actor(request)))

    @extend_schema(responses={200: OpenApiTypes.OBJECT, **ERRORS}, summary="Delete a user, its tokens and roles")
    def delete(self, request, user_id, **kwargs):
        return Response(user_directory.delete(user_id, self.actor(request)))


class UserRolesView(UserAPIView):
    @extend_schema(responses={200: OpenApiTypes.OBJECT, **ERRORS}, summary="A user's roles (UserRolesResponse)")
    def get(self, request, user_id, **kwargs):
        user = user_directory.find(user_id)
        return Response({"user_id": user.get_username(), "roles": user_directory.role_assignments(user)})

    @extend_schema(request=AssignRole, responses={200: OpenApiTypes.OBJECT, **ERRORS}, summary="Grant a role")
    def post(self, request, user_id, **kwargs):
        data = _body(request, AssignRole)
        return Response(user_directory.assign_role(user_id, data["role_name"], self.actor(request)))


class UserRoleObjectView(UserAPIView):
    @extend_schema(responses={200: OpenApiTypes.OBJECT, **ERRORS}, summary="Remove a role from a user")
    def delete(self, request, user_id, role_name, **kwargs):
        return Response(user_directory.remove_role(user_id, role_name, self.actor(request)))
