"""Structured logs and request ids (docs/operations.md).

- `RequestIdMiddleware` takes a sane `X-Request-ID` from the client (or the proxy), else makes one, keeps
  it in a contextvar for the request's log lines and returns it in the response header.
- The Celery hooks (`connect_celery`) carry it into the tasks a request enqueues: a message header at
  publish, restored in the worker before the task runs, so the task's log lines carry the request's id.
  Eager tasks (the embedded default) run inside the request and see the contextvar as it is.
- `RequestIdFilter` puts the id on every record; `JsonFormatter` writes one JSON object per line
  (LOG_FORMAT=json); the default stays human text.

Kept free of Django imports at module level: logging is configured before the apps are loaded.
"""

from __future__ import annotations

import contextvars
import json
import logging
import re
import uuid
from datetime import UTC, datetime

HEADER = "X-Request-ID"
CELERY_HEADER = "request_id"
_SANE = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")  # what a log line and a header can carry as they are

request_id: contextvars.ContextVar[str | None] = contextvars.ContextVar("request_id", default=None)


def sane_request_id(value: str | None) -> str | None:
    return value if value and _SANE.match(value) else None


class RequestIdMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        rid = sane_request_id(request.headers.get(HEADER)) or uuid.uuid4().hex
        token = request_id.set(rid)
        try:
            response = self.get_response(request)
        finally:
            request_id.reset(token)
        response[HEADER] = rid
        return response


class RequestIdFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = request_id.get()
        return True


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "request_id": getattr(record, "request_id", None),
        }
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        if record.stack_info:
            entry["stack"] = self.formatStack(record.stack_info)
        return json.dumps(entry, default=str)


# --- Celery: the id travels as a message header -----------------------------------------------------------


def _on_publish(headers=None, **_) -> None:
    rid = request_id.get()
    if rid and headers is not None:
        headers.setdefault(CELERY_HEADER, rid)


def _on_prerun(task=None, **_) -> None:
    rid = _header_of(task.request) if task is not None else None
    if rid:  # an eager task has no header: it keeps the request's contextvar as it is
        task.request._request_id_token = request_id.set(rid)


def _on_postrun(task=None, **_) -> None:
    token = getattr(task.request, "_request_id_token", None) if task is not None else None
    if token is not None:
        request_id.reset(token)
        task.request._request_id_token = None


def _header_of(request) -> str | None:
    # Message headers become attributes of the task's request; older clients nest them under `headers`.
    value = getattr(request, CELERY_HEADER, None) or (getattr(request, "headers", None) or {}).get(CELERY_HEADER)
    return sane_request_id(value)


def connect_celery() -> None:
    from celery import signals

    signals.before_task_publish.connect(_on_publish, weak=False, dispatch_uid="portal-request-id-publish")
    signals.task_prerun.connect(_on_prerun, weak=False, dispatch_uid="portal-request-id-prerun")
    signals.task_postrun.connect(_on_postrun, weak=False, dispatch_uid="portal-request-id-postrun")
