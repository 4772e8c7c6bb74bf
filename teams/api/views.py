"""Teams REST API (docs/teams.md). Views only translate HTTP; `teams.services` decides.

    GET  /api/teams/departments          departments you may see, each with its projects you may see
    POST /api/teams/departments          create one (config:Update on config/team)
    GET  /api/teams/departments/{name}
    GET  /api/teams/departments/{name}/admins            its admins (team admins and its own admins)
    POST /api/teams/departments/{name}/admins            {"username"}: appoint one (config:Update on config/team)
    DELETE /api/teams/departments/{name}/admins/{user}   remove one (config:Update on config/team)
    GET  /api/teams/projects             projects you may see (team admins: all; others: their own)
    POST /api/teams/projects             create one, and its role osmo-<name> when missing (a team admin,
                                         or an admin of its department: the service decides)
    GET  /api/teams/projects/{name}      one project with its members
    PATCH /api/teams/projects/{name}     {"priority", "description"}: change them (a team admin, or an admin
                                         of its department; audited)
    GET  /api/teams/projects/{name}/history   its creation and changes, newest first

Reading needs only a signed-in principal: what it sees is filtered by `teams.services` (a project you may
not see is a 404, exactly as an unknown one). Creating needs `config:Update` on `config/team`.
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import exceptions, status
from rest_framework.permissions import SAFE_METHODS
from rest_framework.response import Response
from rest_framework.views import APIView

from access.api.permissions import PolicyPermission
from configs.revisions import Actor
from portal.api import ErrorSerializer
from teams import services
from teams.api import serializers as s

ERRORS = {400: ErrorSerializer, 401: ErrorSerializer, 403: ErrorSerializer, 404: ErrorSerializer}
NAME = OpenApiParameter("name", str, OpenApiParameter.PATH)


class TeamPermission(PolicyPermission):
    """Reads: any signed-in principal (the service filters). Writes: `config:Update` on `config/team`, unless
    the view says the service decides (`service_decides`: creating a project, which a department's admins
    may do in their department)."""

    policy_action, policy_resource = services.UPDATE, services.RESOURCE

    def target(self, request, view):
        return self.policy_action, self.policy_resource

    def has_permission(self, request, view):
        if request.method in SAFE_METHODS or getattr(view, "service_decides", False):
            if request.user is not None and request.user.is_authenticated:
                return True
            raise exceptions.NotAuthenticated()
        return super().has_permission(request, view)


def _body(serializer_class, request) -> dict:
    serializer = serializer_class(data=request.data if hasattr(request.data, "keys") else {})
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


class DepartmentCollectionView(APIView):
    permission_classes = [TeamPermission]

    @extend_schema(
        operation_id="team_department_list",
        summary="Departments you may see",
        responses={200: s.DepartmentListSerializer, **ERRORS},
    )
    def get(self, request):
        rows = services.describe_departments(services.departments_visible_to(request), request)
        return Response({"departments": rows})

    @extend_schema(
        operation_id="team_department_create",
        summary="Create a department",
        request=s.DepartmentCreateSerializer,
        responses={201: s.DepartmentSerializer, **ERRORS, 409: ErrorSerializer},
    )
    def post(self, request):
        data = _body(s.DepartmentCreateSerializer, request)
        department = services.create_department(
            data["name"], Actor.for_request(request, "api"), description=data["description"], who=request
        )
        [row] = services.describe_departments([department], request)
        return Response(row, status=status.HTTP_201_CREATED)


class DepartmentView(APIView):
    permission_classes = [TeamPermission]

    @extend_schema(
        operation_id="team_department_retrieve",
        summary="One department",
        parameters=[NAME],
        responses={200: s.DepartmentSerializer, **ERRORS},
    )
    def get(self, request, name):
        [row] = services.describe_departments([services.get_department(name, request)], request)
        return Response(row)


class DepartmentAdminsView(APIView):
    permission_classes = [TeamPermission]

    @extend_schema(
        operation_id="team_department_admins",
        summary="The department's admins",
        parameters=[NAME],
        responses={200: s.DepartmentAdminsSerializer, **ERRORS},
    )
    def get(self, request, name):
        return Response({"department": name, "admins": services.department_admins(name, request)})

    @extend_schema(
        operation_id="team_department_admin_add",
        summary="Appoint a department admin",
        parameters=[NAME],
        request=s.DepartmentAdminAddSerializer,
        responses={201: s.DepartmentAdminsSerializer, **ERRORS, 409: ErrorSerializer},
    )
    def post(self, request, name):
        data = _body(s.DepartmentAdminAddSerializer, request)
        admins = services.add_department_admin(name, data["username"], Actor.for_request(request, "api"), who=request)
        return Response({"department": name, "admins": admins}, status=status.HTTP_201_CREATED)


class DepartmentAdminView(APIView):
    permission_classes = [TeamPermission]

    @extend_schema(
        operation_id="team_department_admin_remove",
        summary="Remove a department admin",
        parameters=[NAME, OpenApiParameter("username", str, OpenApiParameter.PATH)],
        responses={204: None, **ERRORS, 409: ErrorSerializer},
    )
    def delete(self, request, name, username):
        services.remove_department_admin(name, username, Actor.for_request(request, "api"), who=request)
        return Response(status=status.HTTP_204_NO_CONTENT)


class ProjectCollectionView(APIView):
    permission_classes = [TeamPermission]
    service_decides = True  # creating: a team admin, or an admin of the project's department

    @extend_schema(
        operation_id="team_project_list",
        summary="Projects you may see",
        responses={200: s.ProjectListSerializer, **ERRORS},
        description=(
            "Team admins (`config:Read` on `config/team`) see every project; everyone else "
            "the projects they belong to (whose role they hold)."
        ),
    )
    def get(self, request):
        rows = [services.describe_project(p) for p in services.projects_visible_to(request)]
        return Response(s.ProjectListSerializer({"projects": rows}).data)

    @extend_schema(
        operation_id="team_project_create",
        summary="Create a project (and its role when missing)",
        request=s.ProjectCreateSerializer,
        responses={201: s.ProjectCreatedSerializer, **ERRORS, 409: ErrorSerializer},
    )
    def post(self, request):
        data = _body(s.ProjectCreateSerializer, request)
        created = services.create_project(
            data["name"],
            data["department"],
            Actor.for_request(request, "api"),
            description=data["description"],
            idp_groups=data["idp_groups"],
            who=request,
        )
        row = {**services.describe_project(created.project, members=True), "role_created": created.role_created}
        return Response(s.ProjectCreatedSerializer(row).data, status=status.HTTP_201_CREATED)


class ProjectView(APIView):
    permission_classes = [TeamPermission]
    service_decides = True  # changing: a team admin, or an admin of the project's department

    @extend_schema(
        operation_id="team_project_retrieve",
        summary="One project with its members",
        parameters=[NAME],
        responses={200: s.ProjectDetailSerializer, **ERRORS},
        description="A project you may not see is a 404 `project_not_found`, as an unknown one.",
    )
    def get(self, request, name):
        project = services.get_project(name, request)
        return Response(s.ProjectDetailSerializer(services.describe_project(project, members=True)).data)

    @extend_schema(
        operation_id="team_project_update",
        summary="Change a project's priority or description",
        parameters=[NAME],
        request=s.ProjectUpdateSerializer,
        responses={200: s.ProjectDetailSerializer, **ERRORS},
        description=(
            "A team admin, or an admin of the project's department. `priority`: an integer from -100 to 100 "
            "(400 `invalid` otherwise, nothing changed). Each change is in the project's history."
        ),
    )
    def patch(self, request, name):
        data = _body(s.ProjectUpdateSerializer, request)
        services.update_project(name, Actor.for_request(request, "api"), who=request, **data)
        project = services.get_project(name, request)
        return Response(s.ProjectDetailSerializer(services.describe_project(project, members=True)).data)


class ProjectHistoryView(APIView):
    permission_classes = [TeamPermission]

    @extend_schema(
        operation_id="team_project_history",
        summary="A project's creation and changes",
        parameters=[NAME],
        responses={200: s.ProjectHistorySerializer, **ERRORS},
    )
    def get(self, request, name):
        events = services.project_history(name, request)
        return Response(s.ProjectHistorySerializer({"project": name, "history": events}).data)
