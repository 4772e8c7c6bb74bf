"""API plumbing shared by every app: the exception handler that turns every error into one JSON envelope.

`{"code", "field", "value", "reason"}`: a stable code, the field at fault, its value and why.
"""

from __future__ import annotations

from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from pools.engine.errors import EngineError
from portal.errors import DomainError


def exception_handler(exc, context):
    if isinstance(exc, DomainError):
        return Response(exc.as_dict(), status=exc.status)
    if isinstance(exc, EngineError):
        return Response({"code": "invalid", **exc.as_dict()}, status=status.HTTP_400_BAD_REQUEST)
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    if isinstance(exc, exceptions.ValidationError):
        field, reason = _first_error(exc.detail)
        value = context["request"].data.get(field) if _has_mapping_data(context) and field else None
        response.data = {"code": "invalid", "field": field, "value": value, "reason": reason}
    else:
        detail = getattr(exc, "detail", str(exc))
        response.data = {"code": getattr(detail, "code", None) or getattr(exc, "default_code", "error"),
                         "field": "", "value": None, "reason": str(detail)}
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


def _has_mapping_data(context) -> bool:
    request = context.get("request")
    try:
        return request is not None and hasattr(request.data, "get")
    except exceptions.ParseError:
        return False
