"""The REST API's exception handler (settings.REST_FRAMEWORK["EXCEPTION_HANDLER"]): every error becomes one
JSON envelope, `{"code", "field", "value", "reason"}`: a stable code, the field at fault, its value and why,
plus OSMO's `error_code` and `message` so OSMO's own client prints a clean error (`with_osmo_fields`).

Apart from `portal.api` because `rest_framework.views` loads the permission classes, which import
`portal.api`: this module may import `rest_framework.views` at the top.
"""

from __future__ import annotations

from django.core.exceptions import SuspiciousOperation
from django.db import DataError
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from portal.api import APIRefusal
from portal.api_guards import database_refusal
from portal.errors import PortalError, with_osmo_fields


def exception_handler(exc, context):
    if isinstance(exc, APIRefusal):
        exc = exc.error
    response = _envelope_response(exc, context)
    if response is not None:
        response.data = with_osmo_fields(response.data, response.status_code, getattr(exc, "osmo_code", None))
    return response


def _envelope_response(exc, context):
    if isinstance(exc, PortalError):  # a domain or an engine error (the engine's as_dict has no code)
        return Response({"code": exc.code, **exc.as_dict()}, status=exc.status)
    if isinstance(exc, DataError):  # a bound nobody checked before the database: the client's value, a 400
        return Response(database_refusal(exc), status=status.HTTP_400_BAD_REQUEST)
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    if isinstance(exc, exceptions.ValidationError):
        field, reason = _first_error(exc.detail)
        value = _submitted_value(context, field)
        response.data = {"code": "invalid", "field": field, "value": value, "reason": reason}
    else:
        detail = getattr(exc, "detail", str(exc))
        response.data = {
            "code": getattr(detail, "code", None) or getattr(exc, "default_code", "error"),
            "field": "",
            "value": None,
            "reason": str(detail),
        }
    return response


def _first_error(detail, prefix: str = "") -> tuple[str, str]:
    if isinstance(detail, dict):
        key, inner = next(iter(detail.items()))
        child = key if key != "non_field_errors" else ""
        return _first_error(inner, f"{prefix}.{child}" if prefix and child else (child or prefix))
    if isinstance(detail, list) and detail:
        first = detail[0]
        if isinstance(first, (dict, list)):
            return _first_error(first, f"{prefix}[0]")
        return prefix, str(first)
    return prefix, str(detail)


def _submitted_value(context, field: str):
    """The value the client sent for `field`: in the query string, else in the body (None if neither).
    Reading the body may fail (it is parsed on first use, maybe only now): then there is no value."""
    request = context.get("request")
    if not field or request is None:
        return None
    if field in request.query_params:
        return request.query_params.get(field)
    name, _, index = field.rpartition(".")
    if index.isdigit() and name in request.query_params:  # one item of a repeated parameter (`config_types.1`)
        values = request.query_params.getlist(name)
        return values[int(index)] if int(index) < len(values) else None
    if _has_mapping_data(context) and field in request.data:
        value = request.data.get(field)
        return value if isinstance(value, (str, int, float, bool, list, dict, type(None))) else type(value).__name__
    return None


def _has_mapping_data(context) -> bool:
    request = context.get("request")
    try:
        return request is not None and hasattr(request.data, "get")
    except (exceptions.APIException, PortalError, SuspiciousOperation):
        return False
