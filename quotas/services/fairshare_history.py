"""The fair-share page's last 24 hours (docs/quotas.md, "Seeing it"; docs/admin.md, "Dashboards"): per project,
the GPUs its pods held in the node pool each hour (the hour's average, from the usage record through
usage.services.hourly_series, i.e. the usage report), drawn as a sparkline beside its current allocation.

Two queries (the report's), whatever the number of projects.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.utils import timezone

from quotas.models import NodePool
from usage.services import hourly_series


@dataclass(frozen=True)
class ProjectHistory:
    project: str
    gpus: list[float]  # oldest first, one per hour; the last is the current hour so far

    @property
    def peak(self) -> float:
        return max(self.gpus, default=0)

    @property
    def average(self) -> float:
        return round(sum(self.gpus) / len(self.gpus), 1) if self.gpus else 0


@dataclass(frozen=True)
class FairShareHistory:
    since: datetime
    projects: list[ProjectHistory]


def last_day(node_pool: NodePool, projects: list[str], now: datetime | None = None) -> FairShareHistory:
    """`projects` (the chart's, in its order; "no project" is the record's "") first, then any other project
    that ran in the node pool in the last 24 hours."""
    now = now or timezone.now()
    series = hourly_series.gpus_in_use(now, by=("project",), filters={"node_pool": (node_pool.name,)})
    names = {name: "" if name == "no project" else name for name in projects}
    shown = [ProjectHistory(name, series.get((key,), [0.0] * hourly_series.HOURS)) for name, key in names.items()]
    others = sorted(key for (key,) in series if key not in names.values())
    shown += [ProjectHistory(key or "no project", series[(key,)]) for key in others]
    return FairShareHistory(hourly_series.hours(now)[0], shown)
