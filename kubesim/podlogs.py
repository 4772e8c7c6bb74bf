"""Container logs for simulated pods: `GET /api/v1/namespaces/{ns}/pods/{name}/log`.

A container prints what its own command would (commands.py): `echo hello` prints `hello`, `nvidia-smi` a table
of the GPUs it requested. A command the simulation does not run is named with a `[simulated]` marker, then
one `[simulated] … running, N s` line per second of its runtime and a last line when it ends: never made-up
output. The lines are a pure function of the pod and its times, so asking twice gives the same log, and a
test can predict it. The query parameters are the real API's: `container` (required when the pod has several),
`tailLines`, `sinceSeconds`, `sinceTime`, `timestamps`, `limitBytes` and `follow` (a chunked stream that
ends when the container does). Errors are the API server's: 404 for an unknown pod, 400 for an unknown
container, a container that has not started, or a bad parameter.
"""

from __future__ import annotations

import asyncio
import calendar
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import aiohttp.web

from .commands import MARKER, Outcome, container_of, run_pre_stop
from .commands import run as run_command
from .resources import ApiError

MAX_FOLLOW_SECONDS = 3600  # a follower is dropped after an hour, as a proxy would


@dataclass(frozen=True)
class LogQuery:
    container: str | None = None
    tail_lines: int | None = None
    since_seconds: int | None = None
    since_time: float | None = None
    timestamps: bool = False
    limit_bytes: int | None = None
    follow: bool = False

    @classmethod
    def parse(cls, query: dict[str, str]) -> LogQuery:
        since_time = query.get("sinceTime")
        parsed_time = _parse_time(since_time) if since_time else None
        if since_time and parsed_time is None:
            raise ApiError(400, f'sinceTime: Invalid value: "{since_time}": must be an RFC3339 time')
        return cls(
            container=query.get("container") or None,
            tail_lines=_number(query, "tailLines", minimum=0),
            since_seconds=_number(query, "sinceSeconds", minimum=1),
            since_time=parsed_time,
            timestamps=query.get("timestamps", "").lower() in ("true", "1"),
            limit_bytes=_number(query, "limitBytes", minimum=1),
            follow=query.get("follow", "").lower() in ("true", "1"),
        )


def _number(query: dict[str, str], name: str, *, minimum: int) -> int | None:
    raw = query.get(name)
    if raw is None or raw == "":
        return None
    if not raw.lstrip("-").isdigit() or int(raw) < minimum:
        raise ApiError(400, f'{name}: Invalid value: "{raw}": must be greater than or equal to {minimum}')
    return int(raw)


def _parse_time(value: str) -> float | None:
    text = value.strip().replace("z", "Z")
    head, _, fraction = text.rstrip("Z").partition(".")
    try:
        seconds = calendar.timegm(time.strptime(head, "%Y-%m-%dT%H:%M:%S"))
    except ValueError:
        return None
    digits = "".join(ch for ch in fraction if ch.isdigit())
    return seconds + (int(digits) / 10 ** len(digits) if digits else 0.0)


def _stamp(at: float) -> str:
    whole = math.floor(at)
    nanos = round((at - whole) * 1e9)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)) + f".{nanos:09d}Z"


# --------------------------------------------------------------------------- what a container prints


@dataclass(frozen=True)
class Run:
    """One container's run, as its status says: started (epoch seconds), finished (None: still running)."""

    outcome: Outcome
    container: str
    started: float
    finished: float | None
    exit_code: int | None
    reason: str
    stopping: tuple[float, tuple[str, ...]] | None = None  # (when, lines): its preStop hook, run as it is deleted


def container_run(pod: dict, container: str | None, outputs: dict | None = None) -> Run:
    """The container's run, or the API server's 400 for a container that is unknown or has not started."""
    metadata, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
    name = metadata.get("name", "")
    names = [c.get("name", "") for c in spec.get("containers") or ()]
    if container is None:
        if len(names) != 1:
            raise ApiError(
                400, f"a container name must be specified for pod {name}, choose one of: [{' '.join(names)}]"
            )
        container = names[0]
    if container not in names:
        raise ApiError(400, f"container {container} is not valid for pod {name}")
    states = next(
        (s.get("state") or {} for s in status.get("containerStatuses") or () if s.get("name") == container), {}
    )
    running, terminated = states.get("running"), states.get("terminated")
    started = _parse_time(str((running or terminated or {}).get("startedAt") or ""))
    if started is None:
        why = ((states.get("waiting") or {}).get("reason")) or "ContainerCreating"
        raise ApiError(400, f'container "{container}" in pod "{name}" is waiting to start: {why}')
    finished = _parse_time(str(terminated.get("finishedAt") or "")) if terminated else None
    printed = (outputs or {}).get(metadata.get("uid", "")) or {}
    outcome = printed.get(container) or run_command(pod, container_of(pod, container))
    return Run(
        stopping=_pre_stop(pod, container_of(pod, container), printed.get((container, "preStop"))),
        outcome=outcome,
        container=container,
        started=started,
        finished=(finished if finished is not None else started) if terminated else None,
        exit_code=terminated.get("exitCode") if terminated else None,
        reason=str((terminated or {}).get("reason") or ""),
    )


def _pre_stop(pod: dict, container: dict, ran: Outcome | None) -> tuple[float, tuple[str, ...]] | None:
    """The preStop hook's output and when it ran: a Terminating pod's hook started at its deletionTimestamp less
    its grace period (kubesim.kubelet); the hook's output is the container's (as a hook writing to
    /proc/1/fd/1, the usual way to have it logged)."""
    metadata = pod.get("metadata") or {}
    deleting = _parse_time(str(metadata.get("deletionTimestamp") or ""))
    if deleting is None:
        return None
    outcome = ran or run_pre_stop(pod, container)
    if outcome is None:
        return None
    return deleting - float(metadata.get("deletionGracePeriodSeconds") or 0), outcome.lines


def lines_until(run: Run, now: float) -> list[tuple[float, str]]:
    """Every (time, text) line the container printed up to `now`: its command's output as it starts; for a
    command not run here, a `[simulated]` line per second of its runtime and one when it ended."""
    lines = [(run.started, text) for text in run.outcome.lines]
    command = run.outcome.unknown
    if command is not None:
        end = run.finished if run.finished is not None else now
        for second in range(1, max(0, math.floor(end - run.started)) + 1):
            lines.append((run.started + second, f"{MARKER} {command}: running, {second} s"))
        if run.finished is not None:
            lines.append((run.finished, f"{MARKER} exited with code {run.exit_code} ({run.reason or 'done'})"))
    if run.stopping is not None and run.stopping[0] <= now:
        at, said = run.stopping
        lines = sorted([*lines, *((at, text) for text in said)], key=lambda line: line[0])  # stable: in order
    return lines


def select(lines: list[tuple[float, str]], query: LogQuery, now: float) -> list[tuple[float, str]]:
    if query.since_time is not None:
        lines = [line for line in lines if line[0] >= query.since_time]
    elif query.since_seconds is not None:
        lines = [line for line in lines if line[0] >= now - query.since_seconds]
    if query.tail_lines is not None:
        lines = lines[max(0, len(lines) - query.tail_lines) :] if query.tail_lines else []
    return lines


def render(lines: list[tuple[float, str]], query: LogQuery) -> str:
    return "".join((f"{_stamp(at)} {text}\n" if query.timestamps else f"{text}\n") for at, text in lines)


def log_text(pod: dict, query: LogQuery, now: float | None = None, outputs: dict | None = None) -> str:
    """`outputs`: what the kubelet recorded each container (and hook) printing as it ran (kubesim.kubelet)."""
    now = time.time() if now is None else now
    run = container_run(pod, query.container, outputs)
    text = render(select(lines_until(run, now), query, now), query)
    if query.limit_bytes is not None:
        text = text.encode()[: query.limit_bytes].decode("utf-8", "ignore")
    return text


async def follow(
    raw: aiohttp.web.BaseRequest,
    pod: dict,
    query: LogQuery,
    current: Callable[[], dict | None],
    outputs: dict | None = None,
) -> aiohttp.web.StreamResponse:
    """Stream the log as it grows, once a second, until the container ends or the pod is gone."""
    run = container_run(pod, query.container, outputs)
    response = aiohttp.web.StreamResponse(headers={"Content-Type": "text/plain"})
    await response.prepare(raw)
    now = time.time()
    sent = select(lines_until(run, now), query, now)
    await response.write(render(sent, query).encode())
    shown = len(lines_until(run, now))
    deadline = now + MAX_FOLLOW_SECONDS
    while run.finished is None and time.time() < deadline:
        await asyncio.sleep(1.0 - (time.time() - run.started) % 1.0 + 0.01)
        pod = current()
        if pod is None:
            break
        run = container_run(pod, query.container, outputs)
        lines = lines_until(run, time.time())
        await response.write(render(lines[shown:], query).encode())
        shown = len(lines)
    await response.write_eof()
    return response
