"""Request and response shapes of the token API (`/api/auth/access_token…`, `/api/auth/user/USER/access_token…`)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from portal.api import STRING_LIST, counted


@extend_schema_field(STRING_LIST)
class RolesField(serializers.Field):
    """A list of role names, or OSMO's comma-separated query string form."""

    def to_internal_value(self, data):
        if isinstance(data, str):
            data = [name.strip() for name in data.split(",") if name.strip()]
        if not (isinstance(data, list) and all(isinstance(name, str) for name in data)):
            raise serializers.ValidationError("must be a list of role names or a comma-separated string")
        return counted(data)

    def to_representation(self, value):
        return value


class TokenCreateSerializer(serializers.Serializer):
    expires_at = serializers.CharField(
        required=False,
        allow_blank=True,
        allow_null=True,
        help_text=(
            "YYYY-MM-DD (midnight UTC), an ISO date-time, or e.g. 30d; default and maximum: TOKEN_MAX_LIFETIME_DAYS."
        ),
    )
    roles = RolesField(required=False, allow_null=True, help_text="Subset of your roles; default: all of them.")
    description = serializers.CharField(required=False, allow_blank=True, allow_null=True, max_length=1000)


class TokenSerializer(serializers.Serializer):
    user_name = serializers.CharField(help_text="OSMO: the owner")
    token_name = serializers.CharField(help_text="OSMO: the token's name (= name)")
    description = serializers.CharField()
    expires_at = serializers.DateTimeField(help_text="OSMO: when it stops working (its revocation, if revoked)")
    name = serializers.CharField()
    prefix = serializers.CharField()
    roles = serializers.ListField(child=serializers.CharField())
    created = serializers.DateTimeField()
    expires = serializers.DateTimeField()
    last_used = serializers.DateTimeField(allow_null=True)
    status = serializers.ChoiceField(choices=["active", "expired", "revoked"])


class JWTExchangeSerializer(serializers.Serializer):
    token = serializers.CharField(help_text="A portal API token (pp_…)")


class JWTSerializer(serializers.Serializer):
    token = serializers.CharField(help_text="A JWT for `Authorization: Bearer`; it acts as the API token")
    expires_at = serializers.IntegerField(help_text="When the JWT expires, in seconds since the epoch")
    error = serializers.CharField(allow_null=True, help_text="Always null (OSMO's shape)")
