"""HTTP clients of the portal's API: one new connection per request (gunicorn's sync workers close them), each
latency recorded. `submit_all` posts a batch from a pool of threads (the scale proof); `Recorder` keeps every
request of the soak's mixed load by kind."""

from __future__ import annotations

import http.client
import json
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field


@dataclass
class Submissions:
    workflow_ids: list[str] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)
    failures: list[tuple[int, str]] = field(default_factory=list)
    seconds: float = 0.0

    def percentile(self, p: float) -> float:
        return percentile(self.latencies, p)


def post(port: int, token: str, path: str, document: str) -> tuple[int, dict | str, float]:
    return call(port, token, "POST", path, {"file": document})


def call(port: int, token: str, method: str, path: str, body: object = None) -> tuple[int, dict | str, float]:
    """One request; status 0 when the connection failed (refused, reset, timed out)."""
    started = time.perf_counter()
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        data = None if body is None else json.dumps(body).encode()
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        connection.request(method, path, body=data, headers=headers)
        response = connection.getresponse()
        text = response.read().decode(errors="replace")
        answer = json.loads(text) if response.status == 200 else text[:300]
        return response.status, answer, time.perf_counter() - started
    except (OSError, http.client.HTTPException) as error:
        return 0, f"{type(error).__name__}: {error}", time.perf_counter() - started
    finally:
        connection.close()


def percentile(samples: list[float], p: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p))] if ordered else 0.0


class Recorder:
    """Every request by kind: its latency and status. An error is a 5xx or a failed connection; a 4xx the load
    expects (cancelling a workflow that just finished: 409) is an answer, counted apart."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.latencies: dict[str, list[float]] = {}
        self.statuses: dict[str, dict[int, int]] = {}
        self.errors: list[tuple[float, str, int, str]] = []  # (time, kind, status, text) of the first 200

    def record(self, kind: str, status: int, seconds: float, answer: object = "") -> None:
        with self._lock:
            self.latencies.setdefault(kind, []).append(seconds)
            counts = self.statuses.setdefault(kind, {})
            counts[status] = counts.get(status, 0) + 1
            if (status == 0 or status >= 500) and len(self.errors) < 200:
                self.errors.append((time.time(), kind, status, str(answer)[:200]))

    def rows(self) -> list[tuple[str, int, int, int, float, float]]:
        """(kind, requests, errors, 4xx, p50 s, p99 s) per kind."""
        with self._lock:
            return [
                (
                    kind,
                    len(samples),
                    sum(n for status, n in self.statuses[kind].items() if status == 0 or status >= 500),
                    sum(n for status, n in self.statuses[kind].items() if 400 <= status < 500),
                    percentile(samples, 0.5),
                    percentile(samples, 0.99),
                )
                for kind, samples in sorted(self.latencies.items())
            ]


def submit_all(
    port: int, token: str, path: str, documents: list[str], clients: int, on_progress: Callable[[int], None]
) -> Submissions:
    """POST every document from `clients` threads; `on_progress(done)` after each answer (in that thread)."""
    result, lock = Submissions(), threading.Lock()

    def one(document: str) -> None:
        status, answer, seconds = post(port, token, path, document)
        with lock:
            result.latencies.append(seconds)
            if status == 200:
                result.workflow_ids.append(answer["workflow_id"])
            else:
                result.failures.append((status, answer))
            done = len(result.latencies)
        on_progress(done)

    started = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        for future in [pool.submit(one, document) for document in documents]:
            future.result()
    result.seconds = time.perf_counter() - started
    return result
