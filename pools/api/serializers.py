"""Request shapes of the config API (OSMO's: `{configs, description, tags}`)."""

from __future__ import annotations

import datetime

from rest_framework import serializers

from configs.models import ConfigType
from portal.api import MAX_INT, MAX_LIST_ITEMS, MAX_PAGE, BoundedInt


class ConfigTypeField(serializers.ChoiceField):
    """A config type, in any case (`pool`, `POOL`), as the paths take it. A refused one gets the reason a
    path's refused type gets (configs.revisions.check_type); the error's `value` echoes it as sent."""

    def __init__(self, **kwargs):
        expected = ", ".join(t.lower() for t in ConfigType.values)
        super().__init__(
            choices=ConfigType.values,
            error_messages={"invalid_choice": f"is not a config type; expected one of {expected} (in any case)"},
            **kwargs,
        )

    def to_internal_value(self, data):
        if isinstance(data, str) and data.upper() in self.choices:
            return data.upper()
        self.fail("invalid_choice")


def tags_field(**options) -> serializers.ListField:
    """A revision's tags as a body or query sends them: optional, at most MAX_LIST_ITEMS."""
    return serializers.ListField(
        child=serializers.CharField(), **{"required": False, "default": list, "max_length": MAX_LIST_ITEMS, **options}
    )


class ConfigWriteSerializer(serializers.Serializer):
    configs = serializers.JSONField(help_text="The object's body, or for a whole type a {name: body} map.")
    description = serializers.CharField(required=False, allow_blank=True, allow_null=True, default="")
    tags = tags_field(allow_null=True)

    def to_internal_value(self, data):
        # OSMO's `config update RESOURCE_VALIDATION` (whole type) sends its map as `configs_dict`
        if hasattr(data, "get") and "configs" not in data and "configs_dict" in data:
            data = {**data, "configs": data["configs_dict"]}
        values = super().to_internal_value(data)
        return {**values, "description": values["description"] or "", "tags": values["tags"] or []}


class ConfigPatchSerializer(serializers.Serializer):
    configs_dict = serializers.JSONField(help_text="The fields to change (OSMO's deep diff of the body).")
    description = serializers.CharField(required=False, allow_blank=True, allow_null=True, default="")
    tags = tags_field(allow_null=True)


class ConfigDeleteSerializer(serializers.Serializer):
    description = serializers.CharField(required=False, allow_blank=True, allow_null=True, default="")
    tags = tags_field(allow_null=True)


class RollbackSerializer(serializers.Serializer):
    config_type = ConfigTypeField()
    name = serializers.CharField(
        required=False, help_text="Roll back this object only; `revision` is then its own revision number."
    )
    revision = BoundedInt(min_value=1, max_value=MAX_INT)
    description = serializers.CharField(required=False, allow_blank=True, allow_null=True, default="")
    tags = tags_field(allow_null=True)


class UTCDateTimeField(serializers.DateTimeField):
    """OSMO's CLI sends UTC times without an offset (`2025-05-18T00:00:00`)."""

    def __init__(self, **kwargs):
        super().__init__(default_timezone=datetime.UTC, **kwargs)


class HistoryQuerySerializer(serializers.Serializer):
    config_types = serializers.ListField(
        child=ConfigTypeField(), required=False, default=list, max_length=MAX_LIST_ITEMS
    )
    name = serializers.CharField(required=False)
    revision = BoundedInt(min_value=1, max_value=MAX_INT, required=False)
    tags = tags_field()
    created_before = UTCDateTimeField(required=False)
    created_after = UTCDateTimeField(required=False)
    at_timestamp = UTCDateTimeField(required=False)
    order = serializers.ChoiceField(choices=["ASC", "DESC"], default="ASC")
    offset = BoundedInt(min_value=0, max_value=MAX_INT, default=0)
    limit = BoundedInt(min_value=1, max_value=MAX_PAGE, default=20)
    omit_data = serializers.BooleanField(default=False)

    def to_internal_value(self, data):
        if hasattr(data, "get") and isinstance(data.get("order"), str):
            data = data.copy()
            data["order"] = data["order"].upper()
        return super().to_internal_value(data)

    def validate(self, attrs):
        if attrs.get("at_timestamp") and (attrs.get("created_before") or attrs.get("created_after")):
            raise serializers.ValidationError(
                {"at_timestamp": "cannot be combined with created_before or created_after"}
            )
        return attrs


class DiffQuerySerializer(serializers.Serializer):
    config_type = ConfigTypeField()
    name = serializers.CharField(
        required=False, help_text="Diff this object's own revisions; without it, the whole type's (OSMO)."
    )
    first_revision = BoundedInt(min_value=1, max_value=MAX_INT)
    second_revision = BoundedInt(min_value=1, max_value=MAX_INT)


class TagsSerializer(serializers.Serializer):
    set_tags = tags_field(allow_empty=False, default=serializers.empty)
    delete_tags = tags_field(allow_empty=False, default=serializers.empty)

    def validate(self, attrs):
        if not attrs.get("set_tags") and not attrs.get("delete_tags"):
            raise serializers.ValidationError({"set_tags": "give set_tags, delete_tags or both"})
        return attrs


class ApplyResultSerializer(serializers.Serializer):
    config_type = serializers.CharField()
    name = serializers.CharField()
    created = serializers.BooleanField()
    changed = serializers.BooleanField()
    revision = serializers.IntegerField(allow_null=True)
    warnings = serializers.ListField(child=serializers.CharField())
