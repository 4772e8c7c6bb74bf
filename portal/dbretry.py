"""A request whose database connection was lost runs once more on a new connection, where that is safe
(issue #31 point 4: a database failover cost a client error, 1 submission in 120).

`RetryLostConnectionMiddleware` (after the request id and the API guard, before sessions and
authentication, so those run again too):
- A view that raises a database error saying its connection is gone (`pg_terminate_backend`, a failover,
  a restart: `lost_connection`) has lost its uncommitted transaction; the database has nothing of it.
  The request is then run once more, on a new connection, if it is safe:
  a read (GET, HEAD, OPTIONS), or a view that declares `retry_lost_connection = True` because it is keyed
  (the workflow submission: `workflows.services` stores the request id with the workflow, so a retry after
  a commit the client never heard of answers that workflow instead of storing a second one).
- Anything else, or a second loss, is a 503 `database_unavailable` (the API's envelope), never a 500: the
  client may retry; a write that is not keyed may or may not have been stored.
- A database error on a connection that is still fine (a constraint, a timeout) is not this module's.
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.db import InterfaceError, OperationalError, connection
from django.http import HttpResponse

from portal.api_guards import envelope, is_api

log = logging.getLogger(__name__)
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
LOST_SQLSTATES = frozenset({"57P01", "57P02", "57P03"})  # admin shutdown, crash shutdown, cannot connect now
REASON = "the database connection was lost; nothing was stored unless the answer says so: try again"


def lost_connection(error: BaseException) -> bool:
    """Whether a database error says the connection itself is gone: PostgreSQL's connection exceptions
    (SQLSTATE class 08) and shutdowns (57P01-57P03, what `pg_terminate_backend` and a failover send), or a
    client-side error with no SQLSTATE (libpq: the server closed the connection, the socket failed). A
    timeout, a deadlock or a constraint has its own SQLSTATE and is not this."""
    if not isinstance(error, (OperationalError, InterfaceError)):
        return False
    sqlstate = getattr(error.__cause__, "sqlstate", None)
    if sqlstate:
        return sqlstate.startswith("08") or sqlstate in LOST_SQLSTATES
    return True


def retry_allowed(request, view_func) -> bool:
    if request.method in SAFE_METHODS:
        return True
    view_class = getattr(view_func, "cls", None) or getattr(view_func, "view_class", None)
    return any(getattr(declared, "retry_lost_connection", False) for declared in (view_class, view_func))


def _keep_body(request) -> bool:
    """Read a body within DATA_UPLOAD_MAX_MEMORY_SIZE into memory, so a second run reads it again; a larger
    one (an upload) is streamed once, as it would be without this module, and not run twice."""
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    try:
        size = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return False
    if limit is None or size > limit:
        return False
    try:
        request.body  # noqa: B018  (cached on the request)
    except RequestDataTooBig:
        return False
    return True


class RetryLostConnectionMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        request.db_retry = {"allowed": False, "lost": False, "retried": False}
        response = self.get_response(request)
        state = request.db_retry
        if state["lost"] and state["allowed"] and not state["retried"] and not connection.in_atomic_block:
            state.update(lost=False, retried=True)
            connection.close()  # the next query opens a new connection
            log.warning("database connection lost during %s %s: running it once more", request.method, request.path)
            response = self.get_response(request)
        if state["lost"]:
            if not connection.in_atomic_block:
                connection.close()
            return self.unavailable(request)
        return response

    def process_view(self, request, view_func, view_args, view_kwargs):
        allowed = retry_allowed(request, view_func)
        if allowed and request.method not in SAFE_METHODS:
            allowed = _keep_body(request)
        request.db_retry["allowed"] = request.db_retry["allowed"] or allowed
        return None

    def process_exception(self, request, exception):
        if not lost_connection(exception):
            return None
        request.db_retry["lost"] = True
        return HttpResponse(status=503)  # a placeholder: __call__ retries or answers unavailable()

    @staticmethod
    def unavailable(request):
        if is_api(request):
            response = envelope(503, "database_unavailable", REASON)
        else:
            response = HttpResponse(REASON, status=503, content_type="text/plain; charset=utf-8")
        response["Retry-After"] = "1"
        return response
