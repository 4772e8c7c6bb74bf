"""API plumbing shared by every app: bounds of query parameters, and refusals raised where DRF expects its own
exceptions. Every error becomes one JSON envelope in `portal.error_responses`.
"""

from __future__ import annotations

from datetime import UTC, datetime

from rest_framework import exceptions, serializers

from portal.errors import PortalError

# The largest integer a PostgreSQL `integer` column (and a sane offset or revision number) holds: query
# parameters are capped here so that a huge number is a 400 naming the field, not a database error.
MAX_INT = 2_147_483_647


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
