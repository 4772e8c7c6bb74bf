"""What the soak samples while it runs and checks at the end (docs/operations.md, "Soak"). Apps are imported
inside the functions: Django is set up by the caller."""

from __future__ import annotations

import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

# a process's resident memory may grow by this much between the end of the warm-up and the end (caches, the
# allocator's arenas), no more
RSS_GROWTH_RATIO, RSS_GROWTH_KIB = 1.25, 32 * 1024
ERROR_RATE_BOUND = 0.02  # 5xx and failed connections over all requests, faults included
LIVE_PHASES = {"Pending", "Running"}


def retrying(read: Callable[[], Any], attempts: int = 5) -> Any:
    """Run a database read, reconnecting when the connection was terminated under it (the database fault)."""
    from django.db import InterfaceError, OperationalError, close_old_connections, connection

    for attempt in range(attempts):
        try:
            return read()
        except (OperationalError, InterfaceError):
            connection.close()
            close_old_connections()
            if attempt == attempts - 1:
                raise
            time.sleep(0.5)  # the database is being reconnected to: a short back-off, not a wait for a result
    return None


@dataclass
class Check:
    name: str
    ok: bool
    detail: str


# ------------------------------------------------------------------------------------------ sampled during the run


def guarantee_breaches() -> tuple[float, list[str], int]:
    """Per node pool, each project's and department's non-preemptible allocation (admitted, in flight or holding
    a reservation) against its deserved quota, per resource quota'd. Returns (the highest allocation / deserved,
    breaches, preemptible parts in flight: work admitted above deserved, so the sample is not vacuous)."""
    from django.db.models import Q

    from quotas.models import Quota
    from workflows.models import WorkflowPart, WorkflowStatus

    in_flight = (WorkflowStatus.PENDING, WorkflowStatus.WAITING, WorkflowStatus.RUNNING)
    parts = WorkflowPart.objects.filter(preemptible=False).filter(
        Q(workflow__status__in=in_flight) | Q(workflow__status=WorkflowStatus.QUEUED, admitted_at__isnull=False)
    )
    allocated: dict[tuple[str, str, str], int] = defaultdict(int)
    rows = parts.values_list("node_pool", "workflow__project__name", "workflow__project__department__name", "requests")
    for node_pool, project, department, requests in rows:
        if not project:
            continue
        for resource, amount in (requests or {}).items():
            allocated[node_pool, f"project {project}", resource] += int(amount)
            allocated[node_pool, f"department {department}", resource] += int(amount)
    breaches, peak = [], 0.0
    quotas = list(
        Quota.objects.values_list(
            "node_pool__name", "project__name", "department__name", "resource", "deserved", "limit"
        )
    )
    # as admission counts (quotas.services.state.managed_resources): only resources some quota guarantees or caps
    managed = {(row[0], row[3]) for row in quotas if row[4] or row[5] is not None}
    for node_pool, project, department, resource, deserved, _ in quotas:
        if (node_pool, resource) not in managed:
            continue
        team = f"project {project}" if project else f"department {department}"
        used = allocated.get((node_pool, team, resource), 0)
        if deserved:
            peak = max(peak, used / deserved)
        if used > deserved:
            breaches.append(f"{node_pool} {team} {resource}: non-preemptible {used} > deserved {deserved}")
    over = WorkflowPart.objects.filter(preemptible=True, workflow__status__in=in_flight).count()
    return peak, breaches, over


@dataclass
class Sampler:
    """Samples the guarantees every `every` seconds from a thread until stopped."""

    every: float = 2.0
    samples: int = 0
    failed_reads: int = 0
    peak: float = 0.0  # the highest non-preemptible allocation / deserved seen
    over_quota_samples: int = 0  # samples with preemptible work in flight (admitted above deserved)
    breaches: list[tuple[float, str]] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> None:
        self._started = time.monotonic()
        self._thread = threading.Thread(target=self._run, name="soak-sampler", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(60)

    def _run(self) -> None:
        from django.db import DatabaseError, connection

        while not self._stop.wait(self.every):
            try:
                peak, found, over = retrying(guarantee_breaches)
            except DatabaseError:
                self.failed_reads += 1  # the database fault: this sample is skipped, the next one taken
                continue
            self.samples += 1
            self.peak = max(self.peak, peak)
            self.over_quota_samples += bool(over)
            at = time.monotonic() - self._started
            self.breaches.extend((at, breach) for breach in found)
        connection.close()


# ------------------------------------------------------------------------------------------ at the end


def unfinished() -> int:
    from workflows.models import FINISHED_WORKFLOW, Workflow

    return retrying(lambda: Workflow.objects.exclude(status__in=FINISHED_WORKFLOW).count())


def queues_empty(broker_url: str) -> bool:
    """No message waiting in the Celery queue and none received but unacknowledged."""
    import redis

    client = redis.Redis.from_url(broker_url)
    return client.llen("celery") == 0 and client.hlen("unacked") == 0


def workflows_match_pods(creations: Counter, phases: dict[str, str], submitted: set[str]) -> list[Check]:
    """Every workflow in a terminal state, its tasks' states matching their pods on the clusters; every pod
    created once, none missing, none the portal does not know."""
    from workflows.models import FINISHED_WORKFLOW, Task, TaskStatus, Workflow, WorkflowStatus

    workflows = dict(retrying(lambda: list(Workflow.objects.values_list("workflow_id", "status"))))
    tasks = retrying(
        lambda: list(Task.objects.values_list("workflow__workflow_id", "pod_name", "status", "pod_created_at"))
    )
    live = {wid: status for wid, status in workflows.items() if status not in FINISHED_WORKFLOW}
    missing_rows = submitted - set(workflows)
    twice = {name: n for name, n in creations.items() if n > 1}
    known = {pod for _, pod, _, _ in tasks}
    unknown = sorted(set(creations) - known)
    mismatched, without_pod, completed_wrong = [], [], []
    for wid, pod, status, created_at in tasks:
        phase = phases.get(pod)
        if status == TaskStatus.COMPLETED:
            if creations.get(pod, 0) != 1:
                without_pod.append(f"{wid}/{pod}: COMPLETED with {creations.get(pod, 0)} pod creations")
            elif phase not in ("Succeeded", "Deleted"):
                mismatched.append(f"{wid}/{pod}: COMPLETED, pod {phase}")
        elif status in (TaskStatus.PENDING, TaskStatus.WAITING, TaskStatus.RUNNING):
            continue  # counted in `live` through its workflow
        elif phase in LIVE_PHASES:
            mismatched.append(f"{wid}/{pod}: {status}, pod still {phase}")
        if created_at is None and creations.get(pod) and status == TaskStatus.COMPLETED:
            mismatched.append(f"{wid}/{pod}: a pod exists but the portal never recorded creating it")
    for wid, status in workflows.items():
        if status == WorkflowStatus.COMPLETED:
            completed_wrong.extend(
                f"{wid}/{pod}: workflow COMPLETED, task {task_status}"
                for w, pod, task_status, _ in tasks
                if w == wid and task_status != TaskStatus.COMPLETED
            )
    states = Counter(workflows.values())
    return [
        Check(
            "every workflow terminal",
            not live and not missing_rows,
            f"{len(workflows)} workflows: "
            + ", ".join(f"{s} {n}" for s, n in sorted(states.items()))
            + (f"; still live: {sorted(live.items())[:5]}" if live else "")
            + (f"; accepted but not stored: {sorted(missing_rows)[:5]}" if missing_rows else ""),
        ),
        Check(
            "tasks match their pods",
            not mismatched and not completed_wrong,
            f"{len(tasks)} tasks checked against {len(phases)} pods" + _some(mismatched + completed_wrong),
        ),
        Check(
            "no pod created twice",
            not twice,
            f"{sum(creations.values())} pod creations" + _some([f"{n} × {name}" for name, n in twice.items()]),
        ),
        Check(
            "no pod missing, none unknown",
            not without_pod and not unknown,
            f"{sum(1 for _, _, s, _ in tasks if s == TaskStatus.COMPLETED)} completed tasks, one pod each"
            + _some(without_pod + [f"unknown pod {name}" for name in unknown]),
        ),
    ]


def rss_checks(start: dict[str, int], end: dict[str, int], restarted: set[str]) -> tuple[Check, list[tuple]]:
    rows, grown = [], []
    for name in sorted(end):
        before, after = start.get(name, 0), end[name]
        note = "restarted during the run: start is its first sample after the restart" if name in restarted else ""
        rows.append((name, before, after, note))
        if before and after > before * RSS_GROWTH_RATIO + RSS_GROWTH_KIB:
            grown.append(f"{name}: {before // 1024} → {after // 1024} MiB")
    bound = f"end ≤ start × {RSS_GROWTH_RATIO} + {RSS_GROWTH_KIB // 1024} MiB"
    return Check("RSS bounded", not grown, bound + _some(grown)), rows


def _some(items: list[str]) -> str:
    return f"; {len(items)}: " + "; ".join(items[:5]) if items else ""
