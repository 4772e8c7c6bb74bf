"""Node pools whose queue is growing, for the admin home's "Queues" panel (docs/quotas.md, "Seeing it").

Per node pool with queued workflows: how many wait there now (a workflow whose part there is reserved while
another part waits elsewhere is not counted here), how long the oldest has waited (since its submission), and
over the last `WINDOW`: how many workflows with tasks charged to it were submitted (they entered its
queue; an unmanaged node pool admits them at once) and how many were admitted. The queue is **growing** when
workflows are queued now and more were submitted than admitted in the window. A preempted workflow that is
rescheduled keeps its submission time, so it does not count as submitted again. Two queries.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import Count, Min, Q
from django.utils import timezone

from quotas.models import NodePool
from workflows.models import WorkflowPart, WorkflowStatus

WINDOW = timedelta(minutes=15)


@dataclass(frozen=True)
class QueueSummary:
    node_pool: NodePool
    queued: int
    oldest_since: datetime
    submitted_recently: int
    admitted_recently: int

    @property
    def growing(self) -> bool:
        return self.queued > 0 and self.submitted_recently > self.admitted_recently

    @property
    def oldest_wait(self) -> timedelta:
        return timezone.now() - self.oldest_since


def queues(*, now: datetime | None = None, growing_only: bool = False) -> list[QueueSummary]:
    """Node pools with queued workflows, the growing ones first, then by the oldest wait."""
    since = (now or timezone.now()) - WINDOW
    waiting = Q(workflow__status=WorkflowStatus.QUEUED, admitted_at__isnull=True)
    rows = (
        # only the parts that count in some figure: the index scans of the three, not a scan of every part ever
        WorkflowPart.objects.filter(
            Q(workflow__status=WorkflowStatus.QUEUED)
            | Q(workflow__created_at__gte=since)
            | Q(workflow__admitted_at__gte=since)
        )
        .values("node_pool")
        .annotate(
            queued=Count("pk", filter=waiting),
            oldest=Min("workflow__created_at", filter=waiting),
            submitted=Count("pk", filter=Q(workflow__created_at__gte=since)),
            admitted=Count("pk", filter=Q(workflow__admitted_at__gte=since)),
        )
        .filter(queued__gt=0)
        .order_by("node_pool")
    )
    rows = list(rows)
    node_pools = {np.name: np for np in NodePool.objects.filter(name__in=[r["node_pool"] for r in rows])}
    found = [
        QueueSummary(node_pools[r["node_pool"]], r["queued"], r["oldest"], r["submitted"], r["admitted"])
        for r in rows
        if r["node_pool"] in node_pools
    ]
    if growing_only:
        found = [q for q in found if q.growing]
    return sorted(found, key=lambda q: (not q.growing, q.oldest_since, q.node_pool.name))
