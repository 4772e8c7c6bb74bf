"""API plumbing shared by every app: bounds of integer parameters, and refusals raised where DRF expects its
own exceptions. Every error becomes one JSON envelope in `portal.error_responses`.

Every integer a client sends in a query string or a path (and the integers of the API's own bodies) is read
through `whole_number`: ASCII digits only, a least and a most value, else a 400 naming the field, the value
and the bound. `BoundedInt` is the serializer field, `IntParam` the query parameter a view reads itself; both
declare their bounds in the OpenAPI schema, and tests/security/test_integer_bounds.py fails on an integer
parameter of the schema without them (docs/limits.md lists them).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from drf_spectacular.utils import OpenApiParameter
from rest_framework import exceptions, serializers

from portal.errors import PortalError
from portal.numbers import (
    MAX_INT,
    MAX_LIST_ITEMS,
    MAX_PAGE,
    MIN_INT,
    bound_reason,
    checked_count,
    checked_int,
    too_many,
    whole_number,
)

__all__ = [
    "APIRefusal",
    "ErrorSerializer",
    "MAX_INT",
    "MAX_LIST_ITEMS",
    "MAX_PAGE",
    "MIN_INT",
    "STRING_LIST",
    "BoundedInt",
    "IntParam",
    "checked_count",
    "checked_int",
    "counted",
    "list_param",
    "osmo_time",
    "too_many",
    "whole_number",
]

# A list of strings as the schema declares it: in a query (repeated or comma-separated) or a body.
STRING_LIST = {"type": "array", "items": {"type": "string"}, "maxItems": MAX_LIST_ITEMS}


class BoundedInt(serializers.IntegerField):
    """An integer field with both bounds required, read as `whole_number` reads it (the schema shows
    `minimum` and `maximum`)."""

    def __init__(self, *, min_value: int, max_value: int, **kwargs) -> None:
        super().__init__(min_value=min_value, max_value=max_value, **kwargs)

    def to_internal_value(self, data):
        value = whole_number(data, self.min_value, self.max_value)
        if value is None:
            raise serializers.ValidationError(bound_reason(self.min_value, self.max_value), code="invalid")
        return value


@dataclass(frozen=True)
class IntParam:
    """An integer query parameter a view reads itself: its schema and its reading, with the same bounds."""

    name: str
    least: int
    most: int
    default: int | None = None
    description: str = ""

    def parameter(self) -> OpenApiParameter:
        schema = {"type": "integer", "minimum": self.least, "maximum": self.most}
        if self.default is not None:
            schema["default"] = self.default
        return OpenApiParameter(self.name, schema, description=self.description)

    def read(self, request) -> int | None:
        raw = request.query_params.get(self.name)
        if raw is None or raw == "":
            return self.default
        return checked_int(raw, self.name, self.least, self.most)


class ErrorSerializer(serializers.Serializer):
    """The error envelope, for API schemas."""

    code = serializers.CharField()
    field = serializers.CharField()
    value = serializers.JSONField(allow_null=True)
    reason = serializers.CharField()
    error_code = serializers.CharField(help_text="OSMO's error class: USER, USAGE, RESOURCE, NOTFOUND, SERVER ...")
    message = serializers.CharField(help_text="What OSMO's client prints: the field, the value and the reason")


class APIRefusal(exceptions.APIException):
    """A PortalError dressed as DRF's own exception, for code that DRF calls and expects only its own
    exceptions from: permission classes (the browsable API asks them whether to show a form, and would
    answer a 500 to any other exception). The response is the error's envelope."""

    def __init__(self, error: PortalError) -> None:
        super().__init__(error.reason, code=error.code)
        self.status_code = error.status
        self.error = error


def osmo_time(moment: datetime | None) -> str | None:
    """A time as OSMO answers it: naive UTC ISO 8601 (`2025-05-01T12:34:56.123456`). OSMO's client parses it
    with strptime after replacing `T` by a space (src/lib/utils/common.py), which refuses `Z` and `+00:00`."""
    if moment is None:
        return None
    return moment.astimezone(UTC).replace(tzinfo=None).isoformat()


def counted(items: list) -> list:
    """`items` when there are at most MAX_LIST_ITEMS, else a serializer's ValidationError saying so (the field
    that calls it is named in the 400)."""
    reason = too_many(len(items))
    if reason:
        raise serializers.ValidationError(reason)
    return items


def list_param(name: str, description: str = "") -> OpenApiParameter:
    """A query parameter listing names, repeated (`pools=a&pools=b`): at most MAX_LIST_ITEMS in the schema
    (a view counts them with `checked_count`)."""
    return OpenApiParameter(name, STRING_LIST, description=description)
