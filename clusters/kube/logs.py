"""A container's log from the cluster's log API (`GET /api/v1/namespaces/{ns}/pods/{name}/log`).

`read_pod_log` asks for the last `tail_lines` lines, or those from `since` on, always with timestamps, and
returns them as `LogLine(at, text)`: the timestamp (RFC 3339 with nanoseconds, as the kubelet writes it) is
what a follower passes back as `since` to get only what came after. The typed client method has no
`sinceTime` (only `sinceSeconds`), so the request is built by hand (`KubeClient.raw`).

Failures are `KubeError`s: `k8s_status` 404 when the pod is gone, 400 when the container has not started or
does not exist (the API server's message says which), 0 when the cluster cannot be reached.
"""

from __future__ import annotations

from dataclasses import dataclass

from clusters.kube.connection import KubeClient

MAX_LINES = 5000  # one answer never carries more, whatever the caller asks
MAX_BYTES = 2 * 1024 * 1024


@dataclass(frozen=True)
class LogLine:
    at: str  # the kubelet's timestamp, RFC 3339 with nanoseconds; "" when the line had none
    text: str


def read_pod_log(
    kube: KubeClient,
    namespace: str,
    pod: str,
    container: str | None = None,
    *,
    tail_lines: int | None = None,
    since: str | None = None,
) -> list[LogLine]:
    """The container's log lines, oldest first: the last `tail_lines`, and only those stamped after `since`
    (the `at` of the last line the caller has; the API's sinceTime has whole seconds, so lines of that same
    second are dropped here)."""
    query = [("timestamps", "true"), ("limitBytes", str(MAX_BYTES))]
    if container:
        query.append(("container", container))
    if since:
        query.append(("sinceTime", since.split(".")[0].rstrip("Z") + "Z"))
    query.append(("tailLines", str(min(tail_lines if tail_lines is not None else MAX_LINES, MAX_LINES))))
    text = _get_text(kube, f"reading the log of pod {namespace}/{pod}", namespace, pod, query)
    lines = [_parse(line) for line in text.splitlines()]
    if since:
        after = stamp_key(since)
        lines = [line for line in lines if stamp_key(line.at) > after]
    return lines


def stamp_key(stamp: str) -> str:
    """A timestamp that sorts as text: RFC3339Nano drops trailing zeros (`.5Z`), so pad the fraction."""
    head, _, fraction = stamp.rstrip("Z").partition(".")
    return f"{head}.{fraction.ljust(9, '0')}"


def _parse(line: str) -> LogLine:
    stamp, _, text = line.partition(" ")
    if len(stamp) >= 20 and stamp[4] == "-" and stamp[10] == "T":
        return LogLine(stamp, text)
    return LogLine("", line)


def _get_text(kube: KubeClient, doing: str, namespace: str, pod: str, query: list[tuple[str, str]]) -> str:
    path, params = "/api/v1/namespaces/{namespace}/pods/{name}/log", {"namespace": namespace, "name": pod}
    return kube.raw(doing, "GET", path, params, query=query, accept="text/plain").decode("utf-8", "replace")
