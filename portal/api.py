"""API plumbing shared by every app: the exception handler that turns every error into one JSON envelope.

`{"code", "field", "value", "reason"}`: a stable code, the field at fault, its value and why.
"""

from __future__ import annotations

from dataclasses import replace

from django.conf import settings
from rest_framework import exceptions, status
from rest_framework.parsers import JSONParser
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from pools.engine.errors import EngineError
from portal.errors import DomainError
from portal.safe_yaml import Limits, SafeYAMLError, config_limits, load_json


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


class SafeJSONParser(JSONParser):
    """JSON bodies read by `portal.safe_yaml.load_json` within `limits()` (the request size is Django's
    DATA_UPLOAD_MAX_MEMORY_SIZE): duplicate keys, NaN/Infinity, integers over 4300 digits and nesting beyond
    the limit are a 400 `parse_error` naming the problem, never a 500."""

    def limits(self) -> Limits:
        return config_limits()

    def parse(self, stream, media_type=None, parser_context=None):
        size_limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE or 2_621_440
        raw = stream.read(size_limit + 1) if stream is not None else b""
        if len(raw) > size_limit:
            raise exceptions.ParseError(f"the request body is larger than {size_limit} bytes")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise exceptions.ParseError("the request body is not UTF-8 text") from None
        try:
            document = load_json(text, replace(self.limits(), max_bytes=size_limit), "request body")
        except SafeYAMLError as error:
            raise exceptions.ParseError(error.reason) if error.syntax else self.refused(error) from None
        self.check_size(document, len(raw))
        return document

    def refused(self, error: SafeYAMLError) -> Exception:
        """Hook: what a well-formed body beyond a limit raises (a duplicate key, NaN, too deep)."""
        return exceptions.ParseError(error.reason)

    def check_size(self, document: object, size: int) -> None:
        """Hook: limits that depend on what the body holds."""
