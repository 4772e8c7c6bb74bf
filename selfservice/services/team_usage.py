"""Researchers' "my team's usage" on the pool page and in My workflows (docs/self-service.md, "Your team's
usage"): for each project the viewer belongs to and each node pool it ran in or holds a quota row in, the
GPU-hours its pods held this week (since Monday 00:00 UTC) and this month (since the 1st, 00:00 UTC), beside the
GPU-hours its fair share *now* would give over the same time (fair share × hours gone).

The GPU-hours are usage.services.report's (the one reading of the usage record: rollups, attempts not rolled up
yet, running ones up to now); the fair share is quotas.services.standing's (what admission computes). The
comparison says how the time so far went against today's fair share, not what was deserved hour by hour.

Queries: the report (2, one period from the earlier of the two starts, by day), plus on My workflows the
viewer's projects (1), the node pools (1) and their standings (3); the pool page reuses its quota panels.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.utils import timezone

from quotas.models import NodePool
from quotas.services.standing import standings
from selfservice.services.quota_panels import QuotaPanel
from teams.services import member_projects
from usage.services.report import ReportQuery, period, usage
from usage.services.rollup import floor_day


@dataclass(frozen=True)
class UsageLine:
    project: str
    node_pool: str
    fair_share: int | None  # GPUs now; None: no quota row there (nothing to compare with)
    week_hours: float
    month_hours: float
    week_share_hours: float  # fair share × hours since the week began
    month_share_hours: float

    @property
    def week_percent(self) -> int:
        return _percent(self.week_hours, self.week_share_hours)

    @property
    def month_percent(self) -> int:
        return _percent(self.month_hours, self.month_share_hours)

    @property
    def week_over(self) -> bool:
        return self.fair_share is not None and self.week_hours > self.week_share_hours

    @property
    def month_over(self) -> bool:
        return self.fair_share is not None and self.month_hours > self.month_share_hours


@dataclass(frozen=True)
class TeamUsage:
    lines: list[UsageLine]
    week_start: datetime
    month_start: datetime
    now: datetime


def _percent(used: float, share: float) -> int:
    if share <= 0:
        return 100 if used > 0 else 0
    return min(100, round(100 * used / share))


def week_and_month(now: datetime) -> tuple[datetime, datetime]:
    today = floor_day(now)
    return today - timedelta(days=today.weekday()), today.replace(day=1)


def for_panels(panels: list[QuotaPanel], who, now: datetime | None = None) -> TeamUsage | None:
    """The pool page's: the node pools of its quota panels, the fair shares they show."""
    if not panels:
        return None
    shares = {
        (p.project, panel.node_pool): p.gpu.fair_share_amount
        for panel in panels
        if panel.managed
        for p in panel.projects
    }
    return _team_usage(member_projects(who), [panel.node_pool for panel in panels], shares, now)


def for_viewer(who, now: datetime | None = None) -> TeamUsage | None:
    """My workflows': every node pool where the viewer's projects ran or hold a quota row."""
    projects = member_projects(who)
    if not projects:
        return None
    node_pools = list(NodePool.objects.select_related("backend").order_by("name"))
    found = standings(node_pools, projects)
    shares = {
        (project.project, standing.node_pool.name): project.gpu.fair_share
        for standing in found.values()
        if standing.managed
        for project in standing.projects
    }
    return _team_usage(projects, None, shares, now)


def _team_usage(
    projects: list[str], node_pools: list[str] | None, shares: dict[tuple[str, str], int], now: datetime | None
) -> TeamUsage | None:
    if not projects:
        return None
    now = now or timezone.now()
    week, month = week_and_month(now)
    filters = {"project": tuple(projects)} | ({"node_pool": tuple(node_pools)} if node_pools is not None else {})
    start, end = period(min(week, month), now, now)
    query = ReportQuery(start, end, by=("project", "node_pool"), granularity="day", filters=filters)
    used: dict[tuple[str, str], list[int]] = {}
    for row in usage(query, now=now):
        sums = used.setdefault((row.group["project"], row.group["node_pool"]), [0, 0])
        sums[0] += row.gpu_seconds if row.period >= week else 0
        sums[1] += row.gpu_seconds if row.period >= month else 0
    week_hours, month_hours = (now - week).total_seconds() / 3600, (now - month).total_seconds() / 3600
    lines = []
    for project, node_pool in sorted(set(used) | set(shares)):
        seconds = used.get((project, node_pool), [0, 0])
        share = shares.get((project, node_pool))
        lines.append(
            UsageLine(
                project,
                node_pool or "(none)",
                share,
                round(seconds[0] / 3600, 1),
                round(seconds[1] / 3600, 1),
                round((share or 0) * week_hours, 1),
                round((share or 0) * month_hours, 1),
            )
        )
    return TeamUsage(lines, week, month, now)
