"""Concurrent submissions over HTTP: a pool of client threads, one new connection per request (gunicorn's sync
workers close them), each latency recorded."""

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
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(len(ordered) * p))]


def post(port: int, token: str, path: str, document: str) -> tuple[int, dict | str, float]:
    started = time.perf_counter()
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        body = json.dumps({"file": document}).encode()
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        connection.request("POST", path, body=body, headers=headers)
        response = connection.getresponse()
        text = response.read().decode(errors="replace")
        answer = json.loads(text) if response.status == 200 else text[:300]
        return response.status, answer, time.perf_counter() - started
    finally:
        connection.close()


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
