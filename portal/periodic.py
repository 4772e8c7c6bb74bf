"""The Celery beat schedule run in-process (`manage.py periodic`), for the embedded default without beat.

Each entry of the beat schedule (`CELERY_BEAT_SCHEDULE` in portal/settings.py: inventory resync, workflow
reconciliation, timeouts, the reaper) runs once at start and then every `schedule` seconds, one at a time,
eagerly in this process.
A run that fails is logged on one line and runs again at its next turn; a write that lost SQLite's lock
is retried first (`portal.dblock`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from django.db import close_old_connections

from portal.dblock import retry_locked

log = logging.getLogger(__name__)


@dataclass
class Job:
    name: str
    task: str  # the Celery task's name
    seconds: float
    due: float = 0.0  # time.monotonic() of the next run
    runs: int = 0
    failures: int = 0


def jobs_from_schedule(schedule: dict) -> list[Job]:
    """Jobs for the beat entries with a plain interval (seconds or a timedelta)."""
    jobs = []
    for name, entry in sorted(schedule.items()):
        every = entry["schedule"]
        seconds = every.total_seconds() if hasattr(every, "total_seconds") else float(every)
        jobs.append(Job(name, entry["task"], max(1.0, seconds)))
    return jobs


def run_task(task_name: str):
    """Run one registered Celery task here and now (eagerly), returning its result; errors propagate."""
    from celery.utils.imports import symbol_by_name

    return symbol_by_name(task_name).apply(throw=True).result  # by module path: autodiscovery is lazy


class PeriodicRunner:
    def __init__(self, jobs: list[Job], run: Callable[[str], object] = run_task) -> None:
        self.jobs = jobs
        self.run_job = run

    def run(self, stop: threading.Event) -> None:
        now = time.monotonic()
        for job in self.jobs:
            job.due = now  # everything once at start: picks up what was left while nothing ran
        while not stop.is_set():
            self.run_due()
            stop.wait(max(0.0, min(job.due for job in self.jobs) - time.monotonic()) if self.jobs else 1.0)

    def run_due(self) -> int:
        ran = 0
        for job in self.jobs:
            if job.due > time.monotonic():
                continue
            job.due = time.monotonic() + job.seconds
            self._run_one(job)
            ran += 1
        return ran

    def _run_one(self, job: Job) -> None:
        close_old_connections()
        started = time.monotonic()
        try:
            result = retry_locked(lambda: self.run_job(job.task), f"periodic {job.name}")
        except Exception as error:  # noqa: BLE001 - one failed run must not stop the others
            job.failures += 1
            log.warning(
                "periodic %s failed: %s: %s (next run in %ss)",
                job.name,
                type(error).__name__,
                error,
                round(job.seconds),
            )
            return
        job.runs += 1
        log.info("periodic %s: %s (%.2fs)", job.name, result, time.monotonic() - started)
