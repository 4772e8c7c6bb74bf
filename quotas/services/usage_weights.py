"""Time-based fair share of a node pool (NODE_POOL `time_based_fair_share`; docs/quotas.md, "Time-based fair
share"): the engine's `UsageHistory` read from the usage record, and the weights before and after usage that
the fair-share page and `quota show` print.

A project's normalised usage, per resource, is what it used in this node pool over the last `window_days`
(usage.services.history: running attempts up to now, each second weighted by 0.5^(age / half-life) when a
half-life is set) over what the node pool's capacity could have given in the same window, weighted the same
way: a project that held the whole node pool the whole window has 1 (100%), with or without decay. If the raw
record keeps fewer days (USAGE_RAW_RETENTION_DAYS shrank under the window after it was set), the window is
those days (`Window.counted_days`), and the text the pages print says so. Attempts
charged to no project, or to a project without quota rows here, count for the team admission charges them to
(`team_of`: quotas.services.state's `(none)`). One query per node pool with the block set
(quotas.services.state reads it once per state, so once per admission pass).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from fractions import Fraction

from django.conf import settings

from pools.engine.fairshare import department_usage, usage_weights
from pools.engine.quota_model import K_SCALE, RESOURCES, USAGE_SCALE, QuotaTree, Resources, UsageHistory
from quotas.models import NodePool
from usage.services.history import usage_by_project, weighted_seconds


@dataclass(frozen=True)
class Window:
    """A node pool's `time_based_fair_share` block."""

    days: int
    half_life_hours: int | None
    k: Decimal
    kept_days: int  # what the raw usage record keeps (USAGE_RAW_RETENTION_DAYS) when it was read

    @classmethod
    def of(cls, node_pool: NodePool) -> Window | None:
        if not node_pool.time_based_fair_share:
            return None
        k = node_pool.fair_share_k
        return cls(
            node_pool.fair_share_window_days,
            node_pool.fair_share_half_life_hours,
            Decimal(str(k or 0)),
            settings.USAGE_RAW_RETENTION_DAYS,
        )

    @property
    def counted_days(self) -> int:
        """The days usage is counted over: the window, or what the raw record keeps if that is shorter (the
        NODE_POOL check refuses such a window; the retention may have shrunk since it was set)."""
        return min(self.days, self.kept_days)

    @property
    def k_milli(self) -> int:
        return int(self.k * K_SCALE)

    @property
    def half_life_seconds(self) -> int | None:
        return None if self.half_life_hours is None else self.half_life_hours * 3600

    def as_dict(self) -> dict:
        return {
            "window_days": self.days,
            "counted_days": self.counted_days,
            "half_life_hours": self.half_life_hours,
            "k": float(self.k),
        }

    def text(self) -> str:
        decay = f"half-life {self.half_life_hours} h" if self.half_life_hours else "no decay"
        span = f"{self.days} days"
        if self.counted_days < self.days:
            span = (
                f"{self.counted_days} days (the window is {self.days} days, but the raw usage record keeps"
                f" {self.kept_days}: USAGE_RAW_RETENTION_DAYS)"
            )
        return f"usage over the last {span}, {decay}, k = {self.k.normalize():f}"


def history(
    node_pool: NodePool, capacity: Resources, team_of: Callable[[str], str], now: datetime
) -> UsageHistory | None:
    """The engine's input for `node_pool` (None: the block is not set): per resource, each team's usage in
    parts per million of what `capacity` could have given over the window; `team_of` names the team a
    recorded project is charged to."""
    window = Window.of(node_pool)
    if window is None:
        return None
    span = timedelta(days=window.counted_days)
    used = usage_by_project(node_pool.name, now - span, now, window.half_life_seconds)
    possible = weighted_seconds(span.total_seconds(), 0.0, window.half_life_seconds)
    usage: dict[str, dict[str, int]] = {resource: {} for resource in RESOURCES}
    for project, amounts in used.items():
        team = team_of(project)
        for resource in RESOURCES:
            room = capacity.get(resource) * possible
            if room > 0 and amounts[resource] > 0:
                share = round(amounts[resource] / room * USAGE_SCALE)
                usage[resource][team] = usage[resource].get(team, 0) + share
    return UsageHistory(usage, window.k_milli)


@dataclass(frozen=True)
class WeightRow:
    """One team's over-quota weight in one resource, before and after its usage (fractions of its level)."""

    kind: str  # department | project
    name: str
    department: str  # a project's; "" for a department
    weight: int
    usage: float  # normalised: 0.24 = 24% of what the node pool could give over the window
    before: float  # wn: its weight over its siblings' (same department and priority)
    after: float  # max(0, wn + k·(wn − usage))

    @property
    def usage_percent(self) -> str:
        return f"{self.usage * 100:.1f}%"

    def as_dict(self) -> dict:
        return {
            "kind": self.kind,
            "name": self.name,
            "department": self.department or None,
            "weight": self.weight,
            "usage": round(self.usage, 4),
            "weight_before": round(self.before, 4),
            "weight_after": round(self.after, 4),
        }


def weight_rows(tree: QuotaTree, usage: UsageHistory, resource: str = "gpu") -> list[WeightRow]:
    """Departments, then projects, each among its siblings of the same priority with a weight above 0, as the
    first round of the over-quota split weighs them when every sibling wants more than its deserved."""
    used = usage.of(resource)
    by_department = department_usage(tree, used)
    rows = _level("department", tree.departments, by_department, usage.k_milli, resource)
    siblings: dict[tuple, list] = {}
    for project in tree.projects:
        siblings.setdefault((project.department, project.priority), []).append(project)
    for group in siblings.values():
        rows.extend(_level("project", group, used, usage.k_milli, resource))
    return rows


def _level(kind: str, teams, used, k_milli: int, resource: str) -> list[WeightRow]:
    weights = {team.name: team.quota(resource).weight for team in teams}
    figures = usage_weights(weights, used, k_milli)
    return [
        WeightRow(
            kind,
            team.name,
            team.department or "",
            weights[team.name],
            used.get(team.name, 0) / USAGE_SCALE,
            float(figures.get(team.name, (Fraction(0), Fraction(0)))[0]),
            float(figures.get(team.name, (Fraction(0), Fraction(0)))[1]),
        )
        for team in teams
    ]
