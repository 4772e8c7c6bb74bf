"""Guards in front of the REST API: whatever a client sends, an error under /api/ is the JSON envelope
`{"code", "field", "value", "reason"}` (portal.api), never an HTML page or a 500.

`APIGuardMiddleware` (before the rest of Django's middleware, so it sees every response of the site; only the
operations endpoints, portal.ops.endpoints, answer before it):

- a doubled leading slash on an API path (`//api/pool`, as OSMO's client sends some) is one before routing;

- a NUL character (raw or `%00`) in the path is a 404: no resource has one, and PostgreSQL refuses NUL
  in text, so it must never reach a query; in the query string it is a 400 naming the parameter;
- an error response that DRF did not render (Django's 404/405/400/500 pages, a URL no route matches,
  `DisallowedHost`, a body over the size limit, ...) is replaced by the envelope. DRF's responses pass
  as they are: JSON, or the browsable page a browser asked for;
- a database `DataError` escaping a non-DRF view is a 400 (DRF views: `portal.error_responses.exception_handler`).

Their log lines: `portal.log_filters.ClientErrorsOnOneLine`.
"""

from __future__ import annotations

import re

from django.core.exceptions import SuspiciousOperation
from django.db import DataError
from django.http import JsonResponse
from rest_framework.response import Response as DRFResponse

from portal.errors import with_osmo_fields

API_PREFIX = "/api/"
NUL = "\x00"
_LEADING_SLASHES = re.compile("^/{2,}")

# What Django's own error pages mean, in the envelope's terms (status -> code, reason).
_DJANGO_ERRORS = {
    400: ("bad_request", "the request is malformed"),
    403: ("forbidden", "you may not do this"),
    404: ("not_found", "no API resource at this path"),
    405: ("method_not_allowed", "this method is not allowed here"),
    413: ("too_large", "the request body is too large"),
}


def envelope(status: int, code: str, reason: str, *, field: str = "", value: object = None) -> JsonResponse:
    body = {"code": code, "field": field, "value": value, "reason": reason}
    return JsonResponse(with_osmo_fields(body, status), status=status)


def is_api(request) -> bool:
    return request.path_info.startswith(API_PREFIX)


def collapse_slashes(request) -> None:
    """`//api/pool` is `/api/pool`. OSMO's client joins its base URL and a path that may start with a slash;
    gunicorn hands the doubled slash on as it came (Django's development server too), and no route would
    match. Only API paths are rewritten: a page's URL stays what the browser asked for."""
    path = request.path_info
    if not path.startswith("//"):
        return
    collapsed = _LEADING_SLASHES.sub("/", path)
    if collapsed.startswith(API_PREFIX):
        request.path_info = collapsed
        request.path = request.META.get("SCRIPT_NAME", "").rstrip("/") + collapsed


def database_refusal(error: DataError) -> dict:
    """The envelope for a value the database refused (a bound nobody checked earlier)."""
    first_line = str(error).strip().splitlines()[0] if str(error).strip() else "invalid value"
    return {"code": "invalid", "field": "", "value": None, "reason": f"the database refused a value: {first_line}"}


class APIGuardMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        collapse_slashes(request)
        if not is_api(request):
            return self.get_response(request)
        refusal = self.refuse_nul(request)
        if refusal is not None:
            return refusal
        return self.as_envelope(request, self.get_response(request))

    def process_exception(self, request, exception):
        if is_api(request) and isinstance(exception, DataError):
            return JsonResponse(database_refusal(exception), status=400)
        return None

    @staticmethod
    def refuse_nul(request) -> JsonResponse | None:
        if NUL in request.path_info:
            return envelope(
                404,
                "not_found",
                "no API resource has a NUL character in its path",
                field="path",
                value=request.path_info,
            )
        try:
            params = list(request.GET.lists())
        except SuspiciousOperation as error:  # e.g. more parameters than DATA_UPLOAD_MAX_NUMBER_FIELDS
            return envelope(400, "bad_request", str(error), field="query")
        for name, values in params:
            if NUL in name or any(NUL in value for value in values):
                return envelope(
                    400,
                    "invalid",
                    "must not contain a NUL character",
                    field=name,
                    value=next((v for v in values if NUL in v), None),
                )
        return None

    @staticmethod
    def as_envelope(request, response):
        if response.status_code < 400 or isinstance(response, DRFResponse):
            return response
        if response.get("Content-Type", "").startswith("application/json"):
            return response  # already JSON (this middleware's, or a JSON view's own)
        code, reason = _DJANGO_ERRORS.get(response.status_code, ("error", "the request failed"))
        if response.status_code >= 500:
            code, reason = "server_error", "the server failed to answer; the error is logged"
        replaced = envelope(
            response.status_code,
            code,
            reason,
            field="path" if response.status_code == 404 else "",
            value=request.path_info if response.status_code == 404 else None,
        )
        if "Allow" in response:  # a 405 says what is allowed
            replaced["Allow"] = response["Allow"]
        return replaced
