"""Researchers' "my team's usage" on the pool page and in My workflows (docs/self-service.md, "Your team's
usage"): for each project the viewer belongs to and each node pool it ran in or holds a quota in (a deserved
share or a limit), the GPU-hours its pods held this week (since Monday 00:00 UTC) and this month (since the 1st,
00:00 UTC), against the GPU-hours it **deserved** over the same time.

The GPU-hours are usage.services.report's (the one reading of the usage record: rollups, attempts not rolled up
yet, running ones up to now). The deserved GPU-hours are the hourly deserved samples' (usage.services.guarantee,
what the idle guarantee counts), and for the hours with no sample at all (before sampling began, or the portal
down) today's deserved × those hours (quotas.services.standing). A deserved quota does not move when the node
pool is idle or busy, unlike the fair share, which is shown beside it for what it is: what the project would be
given now.

Queries: the report (2, one period from the earlier of the two starts, by day), the deserved samples (1) and the
sampled hours (1), plus on My workflows the viewer's projects (1), the node pools (1) and their standings (3);
the pool page reuses its quota panels.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.utils import timezone

from quotas.models import NodePool
from quotas.services.standing import holding, standings
from selfservice.services.quota_panels import QuotaPanel
from teams.services import member_projects
from usage.services import guarantee
from usage.services.report import ReportQuery, period, usage
from usage.services.rollup import floor_day


@dataclass(frozen=True)
class Quota:
    """A project's GPUs in a node pool now."""

    deserved: int
    fair_share: int


@dataclass(frozen=True)
class UsageLine:
    project: str
    node_pool: str
    quota: Quota | None  # now; None: no quota row there
    week_hours: float
    month_hours: float
    week_deserved_hours: float  # deserved GPU-hours since the week began (samples; today's where none)
    month_deserved_hours: float

    @property
    def compared(self) -> bool:
        """Whether there is a yardstick: a quota row now, or GPUs deserved in the month's samples."""
        return self.quota is not None or self.month_deserved_hours > 0

    @property
    def week_percent(self) -> int:
        return _percent(self.week_hours, self.week_deserved_hours)

    @property
    def month_percent(self) -> int:
        return _percent(self.month_hours, self.month_deserved_hours)

    @property
    def week_over(self) -> bool:
        return self.compared and self.week_hours > self.week_deserved_hours

    @property
    def month_over(self) -> bool:
        return self.compared and self.month_hours > self.month_deserved_hours


@dataclass(frozen=True)
class TeamUsage:
    lines: list[UsageLine]
    week_start: datetime
    month_start: datetime
    now: datetime
    known_from: datetime | None  # the month's first deserved sample; before it, today's deserved is assumed


def _percent(used: float, deserved: float) -> int:
    if deserved <= 0:
        return 100 if used > 0 else 0
    return min(100, round(100 * used / deserved))


def week_and_month(now: datetime) -> tuple[datetime, datetime]:
    today = floor_day(now)
    return today - timedelta(days=today.weekday()), today.replace(day=1)


def for_panels(panels: list[QuotaPanel], who, now: datetime | None = None) -> TeamUsage | None:
    """The pool page's: the node pools of its quota panels, the quotas they show."""
    if not panels:
        return None
    quotas = {
        (p.project, panel.node_pool): Quota(p.gpu.deserved_amount, p.gpu.fair_share_amount)
        for panel in panels
        if panel.managed
        for p in panel.projects
    }
    return _team_usage(member_projects(who), [panel.node_pool for panel in panels], quotas, now)


def for_viewer(who, now: datetime | None = None) -> TeamUsage | None:
    """My workflows': every node pool where the viewer's projects ran or hold a quota (a deserved share or a
    limit: the zero row every project has in every node pool is none)."""
    projects = member_projects(who)
    if not projects:
        return None
    node_pools = holding(NodePool.objects.select_related("backend").order_by("name"), projects)
    found = standings(node_pools, projects)
    quotas = {
        (project.project, standing.node_pool.name): Quota(project.gpu.deserved, project.gpu.fair_share)
        for standing in found.values()
        if standing.managed
        for project in standing.projects
    }
    return _team_usage(projects, None, quotas, now)


def _team_usage(
    projects: list[str], node_pools: list[str] | None, quotas: dict[tuple[str, str], Quota], now: datetime | None
) -> TeamUsage | None:
    if not projects:
        return None
    now = now or timezone.now()
    week, month = week_and_month(now)
    filters = {"project": tuple(projects)} | ({"node_pool": tuple(node_pools)} if node_pools is not None else {})
    start, end = period(min(week, month), now, now)
    query = ReportQuery(start, end, by=("project", "node_pool"), granularity="day", filters=filters)
    used = _since(((row.period, tuple(row.group.values()), row.gpu_seconds) for row in usage(query, now)), week, month)
    sampled = guarantee.deserved_seconds(query, now)
    deserved = _since(((day, group, seconds) for (day, group), seconds in sampled.items()), week, month)
    known = guarantee.coverage(query, now)
    unsampled = [_elapsed(since, now) - known.sampled_seconds(since, now) for since in (week, month)]
    lines = []
    for project, node_pool in sorted(set(used) | set(quotas) | set(deserved)):
        key = (project, node_pool)
        quota = quotas.get(key)
        seconds, owed = used.get(key, [0, 0]), list(deserved.get(key, [0, 0]))
        for index in (0, 1):  # hours nobody sampled: today's deserved
            owed[index] += (quota.deserved if quota else 0) * unsampled[index]
        hours = [round(value / 3600, 1) for value in (*seconds, *owed)]
        lines.append(UsageLine(project, node_pool or "(none)", quota, *hours))
    return TeamUsage(lines, week, month, now, known.known_from)


def _since(rows, week: datetime, month: datetime) -> dict[tuple, list[int]]:
    """(project, node pool) → [seconds since the week began, since the month began] from daily rows."""
    sums: dict[tuple, list[int]] = {}
    for day, group, seconds in rows:
        both = sums.setdefault(group, [0, 0])
        both[0] += seconds if day >= week else 0
        both[1] += seconds if day >= month else 0
    return sums


def _elapsed(since: datetime, now: datetime) -> int:
    return max(0, int((now - since).total_seconds()))
