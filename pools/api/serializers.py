"""Request shapes of the config API (OSMO's: `{configs, description, tags}`)."""

from __future__ import annotations

from rest_framework import serializers

from configs.models import ConfigType
from portal.api import MAX_INT


class ConfigTypeField(serializers.ChoiceField):
    """A config type, in any case (`pool`, `POOL`)."""

    def __init__(self, **kwargs):
        expected = ", ".join(t.lower() for t in ConfigType.values)
        super().__init__(
            choices=ConfigType.values,
            error_messages={"invalid_choice": f'"{{input}}" is not a config type; expected one of {expected}'},
            **kwargs,
        )

    def to_internal_value(self, data):
        return super().to_internal_value(data.upper() if isinstance(data, str) else data)


class ConfigWriteSerializer(serializers.Serializer):
    configs = serializers.JSONField(help_text="The object's body, or for a whole type a {name: body} map.")
    description = serializers.CharField(required=False, allow_blank=True, default="")
    tags = serializers.ListField(child=serializers.CharField(), required=False, default=list)


class ConfigDeleteSerializer(serializers.Serializer):
    description = serializers.CharField(required=False, allow_blank=True, default="")
    tags = serializers.ListField(child=serializers.CharField(), required=False, default=list)


class RollbackSerializer(serializers.Serializer):
    config_type = ConfigTypeField()
    name = serializers.CharField()
    revision = serializers.IntegerField(min_value=1, max_value=MAX_INT)
    description = serializers.CharField(required=False, allow_blank=True, default="")
    tags = serializers.ListField(child=serializers.CharField(), required=False, default=list)


class HistoryQuerySerializer(serializers.Serializer):
    config_types = ConfigTypeField(required=False)
    name = serializers.CharField(required=False)
    offset = serializers.IntegerField(min_value=0, max_value=MAX_INT, default=0)
    limit = serializers.IntegerField(min_value=1, max_value=1000, default=100)
    omit_data = serializers.BooleanField(default=True)


class DiffQuerySerializer(serializers.Serializer):
    config_type = ConfigTypeField()
    name = serializers.CharField()
    first_revision = serializers.IntegerField(min_value=1, max_value=MAX_INT)
    second_revision = serializers.IntegerField(min_value=1, max_value=MAX_INT)


class ApplyResultSerializer(serializers.Serializer):
    config_type = serializers.CharField()
    name = serializers.CharField()
    created = serializers.BooleanField()
    changed = serializers.BooleanField()
    revision = serializers.IntegerField(allow_null=True)
    warnings = serializers.ListField(child=serializers.CharField())
