"""Container logs for simulated pods: `GET /api/v1/namespaces/{ns}/pods/{name}/log`.

A running container "prints" like a training loop: a few start-up lines, then one line per second of its
runtime (`step 12 loss=1.8342 lr=0.00100 gpu_util=91%`), and a last line when it ends. The lines are a pure
function of the pod's uid, container name and times, so asking twice gives the same log, and a test can
predict it. The query parameters are the real API's: `container` (required when the pod has several),
`tailLines`, `sinceSeconds`, `sinceTime`, `timestamps`, `limitBytes` and `follow` (a chunked stream that
ends when the container does). Errors are the API server's: 404 for an unknown pod, 400 for an unknown
container, a container that has not started, or a bad parameter.
"""

from __future__ import annotations

import asyncio
import calendar
import hashlib
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import aiohttp.web

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

    seed: int
    container: str
    node: str
    started: float
    finished: float | None
    exit_code: int | None
    reason: str


def container_run(pod: dict, container: str | None) -> Run:
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
    seed = int.from_bytes(hashlib.sha256(f"{metadata.get('uid', name)}/{container}".encode()).digest()[:8], "big")
    return Run(
        seed=seed,
        container=container,
        node=spec.get("nodeName", ""),
        started=started,
        finished=(finished if finished is not None else started) if terminated else None,
        exit_code=terminated.get("exitCode") if terminated else None,
        reason=str((terminated or {}).get("reason") or ""),
    )


def lines_until(run: Run, now: float) -> list[tuple[float, str]]:
    """Every (time, text) line the container printed up to `now`: 3 start-up lines, one per second after."""
    end = run.finished if run.finished is not None else now
    lines = [
        (run.started, f"starting on node {run.node or 'unknown'}"),
        (run.started, f"random seed {run.seed % 10000}"),
        (run.started, "training for as long as it runs"),
    ]
    steps = max(0, math.floor(end - run.started))
    for step in range(1, steps + 1):
        lines.append((run.started + step, _step_line(run.seed, step)))
    if run.finished is not None:
        lines.append((run.finished, f"exiting with code {run.exit_code} ({run.reason or 'done'})"))
    return lines


def _step_line(seed: int, step: int) -> str:
    jitter = ((seed >> (step % 48)) % 1000) / 100000
    loss = 2.5 / math.sqrt(step) + jitter
    return f"step {step} loss={loss:.4f} lr=0.00100 gpu_util={80 + (seed + step * 7) % 19}%"


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


def log_text(pod: dict, query: LogQuery, now: float | None = None) -> str:
    now = time.time() if now is None else now
    run = container_run(pod, query.container)
    text = render(select(lines_until(run, now), query, now), query)
    if query.limit_bytes is not None:
        text = text.encode()[: query.limit_bytes].decode("utf-8", "ignore")
    return text


async def follow(
    raw: aiohttp.web.BaseRequest, pod: dict, query: LogQuery, current: Callable[[], dict | None]
) -> aiohttp.web.StreamResponse:
    """Stream the log as it grows, once a second, until the container ends or the pod is gone."""
    run = container_run(pod, query.container)
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
        run = container_run(pod, query.container)
        lines = lines_until(run, time.time())
        await response.write(render(lines[shown:], query).encode())
        shown = len(lines)
    await response.write_eof()
    return response
