"""Cluster errors as one clean line, and whether retrying can help.

Everything the Kubernetes client or urllib3 raises is turned into `KubeError` here, so callers (Celery
tasks, commands, the admin) never see a client exception or a traceback. `transient` is true for
network failures, timeouts, 429 and 5xx; a 4xx other than 408/429 will fail the same way again.
"""

from __future__ import annotations

import json

from portal.errors import DomainError

GONE = 410
_TRANSIENT_STATUSES = {408, 429, 500, 502, 503, 504}


class KubeError(DomainError):
    status = 502  # HTTP status when it reaches the REST API: the upstream cluster failed
    code = "cluster_error"

    def __init__(
        self, reason: str, *, k8s_status: int = 0, transient: bool = False, field: str = "", value: object = None
    ) -> None:
        super().__init__(_one_line(reason), field=field, value=value)
        self.k8s_status = k8s_status
        self.transient = transient

    def __str__(self) -> str:
        return self.reason

    @property
    def gone(self) -> bool:
        """410: the resourceVersion or continue token expired; list again."""
        return self.k8s_status == GONE


def from_exception(error: BaseException, doing: str) -> KubeError:
    """Translate any exception raised while `doing` something against a cluster."""
    if isinstance(error, KubeError):
        return error
    from kubernetes.client.exceptions import ApiException  # local: keep this module light to import

    if isinstance(error, ApiException):
        status = int(error.status or 0)
        if status == 0:  # TLS failures and malformed requests surface as status 0
            return KubeError(f"{doing}: {_first_line(error.reason)}", transient=False)
        message = _status_message(error)
        return KubeError(
            f"{doing}: HTTP {status} {error.reason or ''}{': ' + message if message else ''}",
            k8s_status=status,
            transient=status in _TRANSIENT_STATUSES,
        )
    transient = _is_network_error(error)
    return KubeError(f"{doing}: {_describe_other(error)}", transient=transient)


def _status_message(error) -> str:
    body = getattr(error, "body", None)
    if not body:
        return ""
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    try:
        data = json.loads(body)
    except (TypeError, ValueError):
        return _first_line(str(body))[:200]
    return str(data.get("message") or "") if isinstance(data, dict) else ""


def _is_network_error(error: BaseException) -> bool:
    import urllib3.exceptions

    network = (urllib3.exceptions.HTTPError, ConnectionError, TimeoutError, OSError)
    return isinstance(error, network) and not isinstance(error, urllib3.exceptions.SSLError)


def _describe_other(error: BaseException) -> str:
    import urllib3.exceptions

    if isinstance(error, urllib3.exceptions.MaxRetryError):
        reason = error.reason
        if isinstance(reason, urllib3.exceptions.NewConnectionError):
            return f"cannot connect to {_host(error)}: {_errno_text(reason)}"
        if isinstance(reason, urllib3.exceptions.ConnectTimeoutError):
            return f"timed out connecting to {_host(error)}"
        if isinstance(reason, urllib3.exceptions.SSLError):
            return f"TLS error talking to {_host(error)}: {_first_line(str(reason))}"
        return f"request to {_host(error)} failed: {_first_line(str(reason))}"
    if isinstance(error, urllib3.exceptions.ReadTimeoutError):
        return "the cluster did not answer in time (read timeout)"
    if isinstance(error, urllib3.exceptions.ProtocolError):
        return f"the connection broke: {_first_line(str(error.args[0] if error.args else error))}"
    text = _first_line(str(error)) or type(error).__name__
    return f"{type(error).__name__}: {text}" if type(error).__name__ not in text else text


def _host(error) -> str:
    pool = getattr(error, "pool", None)
    if pool is not None and getattr(pool, "host", None):
        return f"{pool.scheme}://{pool.host}:{pool.port}"
    return "the cluster"


def _errno_text(error) -> str:
    text = str(error)
    for known in (
        "Connection refused",
        "Name or service not known",
        "No route to host",
        "Temporary failure in name resolution",
        "Network is unreachable",
    ):
        if known in text:
            return known.lower()
    return _first_line(text.split(": ", 1)[-1])


def _first_line(text: object) -> str:
    return str(text or "").strip().splitlines()[0].strip() if str(text or "").strip() else ""


def _one_line(text: str) -> str:
    return " ".join(str(text).split())
