"""Request and response shapes of the teams API (docs/teams.md). Shapes only: `teams.services` validates."""

from __future__ import annotations

from rest_framework import serializers

from portal.api import MAX_LIST_ITEMS, BoundedInt
from teams.services import PRIORITY_MAX, PRIORITY_MIN


class DepartmentSerializer(serializers.Serializer):
    name = serializers.CharField()
    description = serializers.CharField(allow_blank=True)
    projects = serializers.ListField(child=serializers.CharField(), help_text="Its projects that you may see.")
    created_at = serializers.DateTimeField()


class DepartmentListSerializer(serializers.Serializer):
    departments = DepartmentSerializer(many=True)


class DepartmentCreateSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=200, help_text="Letters, digits, '_', '.', '-'; starts with a letter.")
    description = serializers.CharField(required=False, allow_blank=True, default="", max_length=2000)


class ProjectSerializer(serializers.Serializer):
    name = serializers.CharField()
    department = serializers.CharField()
    description = serializers.CharField(allow_blank=True)
    role = serializers.CharField(help_text="The role whose holders are the project's members: osmo-<project>.")
    idp_groups = serializers.ListField(
        child=serializers.CharField(),
        help_text=("IdP group or role names that grant the role at sign-in: the role's name and its external names."),
    )
    member_count = serializers.IntegerField()
    priority = serializers.IntegerField(help_text="Over-quota rank: higher is served first (docs/quotas.md).")
    created_at = serializers.DateTimeField()


class ProjectDetailSerializer(ProjectSerializer):
    members = serializers.ListField(child=serializers.CharField(), help_text="Usernames holding the role.")


class ProjectListSerializer(serializers.Serializer):
    projects = ProjectSerializer(many=True)


class ProjectCreateSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=200, help_text="Letters, digits, '_', '.', '-'; starts with a letter.")
    department = serializers.CharField(max_length=200)
    description = serializers.CharField(required=False, allow_blank=True, default="", max_length=2000)
    idp_groups = serializers.ListField(
        child=serializers.CharField(max_length=255),
        required=False,
        default=list,
        max_length=MAX_LIST_ITEMS,
        help_text="Added to the role's external names (IdP groups that grant it).",
    )


class ProjectUpdateSerializer(serializers.Serializer):
    """What `PATCH` may change; an absent field stays as it is (`teams.services.update_project` checks)."""

    priority = BoundedInt(
        min_value=PRIORITY_MIN,
        max_value=PRIORITY_MAX,
        required=False,
        help_text="-100…100 (higher is served first for over-quota capacity; 0 by default).",
    )
    description = serializers.CharField(required=False, allow_blank=True, max_length=2000)


class ProjectHistoryEventSerializer(serializers.Serializer):
    at = serializers.DateTimeField()
    action = serializers.CharField(help_text="team.create or team.update")
    actor = serializers.CharField()
    source = serializers.CharField(help_text="cli, api or admin")
    changes = serializers.JSONField(
        help_text="team.update: {field: [before, after]}; team.create: what it was made with."
    )


class ProjectHistorySerializer(serializers.Serializer):
    project = serializers.CharField()
    history = ProjectHistoryEventSerializer(many=True, help_text="Newest first, at most 200.")


class ProjectCreatedSerializer(ProjectDetailSerializer):
    role_created = serializers.BooleanField(help_text="Whether the role osmo-<project> was created now.")


class DepartmentAdminsSerializer(serializers.Serializer):
    department = serializers.CharField()
    admins = serializers.ListField(child=serializers.CharField(), help_text="Usernames of the department's admins.")


class DepartmentAdminAddSerializer(serializers.Serializer):
    username = serializers.CharField(max_length=150)
