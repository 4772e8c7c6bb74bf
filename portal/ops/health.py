"""`/healthz` and `/readyz` (docs/operations.md).

`/healthz` says the process answers: no database, no broker, nothing that a restart would not fix.
`/readyz` names each dependency with ok/error and a short reason, 503 when one fails:
- database: `SELECT 1` on the default connection;
- broker: a connection to the Celery broker; with none configured tasks run in-process ("embedded");
- cluster: at least one connected backend answers (clusters.reachability). No backend configured is ok:
  a fresh installation must become ready so that an administrator can add the first backend. The answer
  is cached READINESS_CLUSTER_CACHE_SECONDS per process, so probes do not hammer the clusters.
READINESS_REQUIRES_CLUSTER=false reports the cluster check without failing on it.
Reasons are exception classes and first lines, never credentials or stack traces.
"""

from __future__ import annotations

import threading
import time

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections
from django.http import JsonResponse

from clusters.reachability import any_backend_reachable

OK, ERROR = "ok", "error"
_cluster_cache: dict = {}  # {"at": monotonic seconds, "answer": dict}
_cluster_lock = threading.Lock()


def healthz(request) -> JsonResponse:
    return JsonResponse({"status": OK})


def readyz(request) -> JsonResponse:
    checks = {"database": database(), "broker": broker(), "cluster": cluster()}
    # READINESS_REQUIRES_CLUSTER=false: clusters all down leave the pages up (the check is still reported).
    required = [name for name in checks if name != "cluster" or settings.READINESS_REQUIRES_CLUSTER]
    ready = all(checks[name]["status"] == OK for name in required)
    return JsonResponse({"status": OK if ready else ERROR, "checks": checks}, status=200 if ready else 503)


def database() -> dict:
    conn = connections[DEFAULT_DB_ALIAS]
    try:
        with conn.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception as error:  # noqa: BLE001  (any failure means not ready; the reason says which)
        conn.close()  # the next probe reconnects
        return {"status": ERROR, "reason": _short(error)}
    return {"status": OK, "reason": f"{conn.vendor} answers"}


def broker() -> dict:
    from portal.celery import app

    if app.conf.task_always_eager:
        return {"status": OK, "reason": "embedded (no broker): tasks run in-process"}
    timeout = settings.READINESS_TIMEOUT_SECONDS
    try:
        with app.connection_for_write() as conn:
            conn.connect_timeout = timeout
            conn.ensure_connection(max_retries=1, interval_start=0, timeout=timeout)
    except Exception as error:  # noqa: BLE001
        return {"status": ERROR, "reason": _short(error)}
    return {"status": OK, "reason": "broker answers"}


def cluster() -> dict:
    with _cluster_lock:  # one probe at a time per process; the others wait for its cached answer
        now = time.monotonic()
        cached = _cluster_cache.get("answer")
        if cached is not None and now - _cluster_cache["at"] < settings.READINESS_CLUSTER_CACHE_SECONDS:
            return cached
        try:
            found = any_backend_reachable(settings.READINESS_TIMEOUT_SECONDS)
            answer = {"status": OK if found.ok else ERROR, "reason": found.reason}
        except Exception as error:  # noqa: BLE001  (the database may be away as well: say so, don't crash)
            answer = {"status": ERROR, "reason": _short(error)}
        _cluster_cache.update(at=time.monotonic(), answer=answer)
        return answer


def forget_cluster_answer() -> None:
    """Drop the cached cluster answer (tests; a changed backend is otherwise seen after the cache period)."""
    with _cluster_lock:
        _cluster_cache.clear()


def _short(error: BaseException) -> str:
    line = (str(error).strip().splitlines() or [""])[0][:200]
    return f"{type(error).__name__}: {line}" if line else type(error).__name__
