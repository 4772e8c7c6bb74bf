"""The admin's usage page (docs/usage.md, "The usage page"): four charts over the last 24 hours, 7 days, 30 days or
a chosen range, each with its table beside it and its series as CSV.

- GPU allocation per node pool, stacked by project, against the node pool's capacity: the average GPUs each
  project held per hour or day (GPU-seconds ÷ the period's elapsed seconds). Capacity is the node pool's
  *current* allocatable GPUs (Ready, schedulable members: `quotas.services.overview.with_totals`), drawn as a
  line across the whole range: the record keeps no history of capacity.
- Guarantees: per project, deserved GPU-hours against GPU-hours used, the share of the guarantee used and the
  idle guarantee (`usage.services.consumption`, `usage.services.guarantee`).
- The queue: how many workflows wait for admission at the end of each period, and the p50/p95 of the waits
  that ended in it (submitted → admitted), from the finished workflows' records (`usage.models.WorkflowRecord`)
  and the workflows not finished yet (`workflows.models.Workflow`).
- Cost per department, stacked per period.

Every number comes from the one reading of the record (`usage.services.report.usage`). It lives in selfservice,
the top app, because it reads usage, quotas and workflows. A fixed number of queries whatever the range,
the number of projects or of records (tests/selfservice/test_usage_page.py).
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import Q
from django.utils import timezone

from quotas.services.overview import with_totals
from usage.models import WorkflowRecord
from usage.services import consumption
from usage.services.report import ReportError, ReportQuery, period, usage
from usage.services.rollup import DAY, HOUR, floor_day, floor_hour
from workflows.models import Workflow, WorkflowStatus

RANGES = {"24h": timedelta(hours=24), "7d": timedelta(days=7), "30d": timedelta(days=30)}
DEFAULT_RANGE = "7d"
HOURLY_UP_TO = timedelta(days=8)  # 7 days (169 whole hours) are drawn per hour; longer ranges per day
CHARTS = ("allocation", "guarantee", "queue", "cost")
STACKED = 8  # projects or departments with a colour of their own; the rest are "other"
OTHER = "other"


@dataclass(frozen=True)
class Window:
    key: str  # 24h, 7d, 30d or custom
    start: datetime
    end: datetime
    granularity: str  # hour or day
    now: datetime

    @property
    def step(self) -> timedelta:
        return HOUR if self.granularity == "hour" else DAY

    def periods(self) -> list[datetime]:
        first = self.start if self.granularity == "hour" else floor_day(self.start)
        return [first + self.step * index for index in range(math.ceil((self.end - first) / self.step))]

    def seconds(self, period_start: datetime) -> int:
        """Seconds of the period inside the window and before now (a running hour counts so far)."""
        began, ended = max(period_start, self.start), min(period_start + self.step, self.end, self.now)
        return max(0, int((ended - began).total_seconds()))

    def query(self, *by: str, granularity: str | None = None) -> ReportQuery:
        return ReportQuery(self.start, self.end, by, granularity or self.granularity)


def window(params, now: datetime | None = None) -> tuple[Window, str]:
    """The range the page shows, from its query string (`range`, and `from`/`to` when custom), and an error
    message when a custom range was refused (then the default range is shown)."""
    now = now or timezone.now()
    key = params.get("range") or DEFAULT_RANGE
    error = ""
    if key == "custom":
        try:
            start = consumption.parse_time(params.get("from") or "", "from", consumption.api_label)
            end = consumption.parse_time(params.get("to") or "", "to", consumption.api_label, end=True)
            start, end = period(start, end, now)
        except ReportError as refused:
            error, key = str(refused), DEFAULT_RANGE
    if key != "custom":
        key = key if key in RANGES else DEFAULT_RANGE
        start, end = period(now - RANGES[key], now, now)
    granularity = "hour" if end - start <= HOURLY_UP_TO else "day"
    return Window(key, start, end, granularity, now), error


# ------------------------------------------------------------------------------------------------ the page


def page(win: Window) -> dict:
    """Every chart's figures: `allocation`, `guarantee`, `queue`, `cost`."""
    by_team = usage(win.query("node_pool", "project", "department"), win.now)
    return {
        "allocation": allocation(win, by_team),
        "guarantee": guarantees(win),
        "queue": queue(win),
        "cost": cost(win, by_team),
    }


def _palette(names_by_size: list[str]) -> dict[str, int]:
    """A colour index per name, the largest first; past STACKED, the colour of "other"."""
    return {name: index for index, name in enumerate(names_by_size[:STACKED])}


def _legend(colours: dict[str, int], count: int) -> list[tuple[str, int]]:
    return [*colours.items(), *([(OTHER, STACKED)] if count > STACKED else [])]


def _stack(win: Window, amounts: dict[datetime, dict[str, float]], colours: dict[str, int], scale: float) -> list:
    """Per period: its label and the stacked segments (name, amount, height %, colour), largest name first."""
    columns = []
    for period_start in win.periods():
        values = amounts.get(period_start, {})
        merged: dict[str, float] = defaultdict(float)
        for name, amount in values.items():
            merged[name if name in colours else OTHER] += amount
        ordered = sorted(merged.items(), key=lambda item: colours.get(item[0], STACKED))
        columns.append(
            {
                "period": period_start,
                "total": sum(merged.values()),
                "segments": [
                    {
                        "name": name,
                        "amount": amount,
                        "height": round(100 * amount / scale, 2) if scale else 0,
                        "colour": colours.get(name, STACKED),
                    }
                    for name, amount in ordered
                    if amount > 0
                ],
            }
        )
    return columns


def allocation(win: Window, rows) -> dict:
    """Per node pool: average GPUs per project and period, stacked, and the current capacity."""
    capacity = {pool.name: pool.capacity_gpu for pool in with_totals().only("name")}
    gpu_seconds: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    per_period: dict[str, dict[datetime, dict[str, float]]] = defaultdict(lambda: defaultdict(dict))
    for row in rows:
        node_pool, project = row.group["node_pool"], row.group["project"] or "(no project)"
        gpu_seconds[node_pool][project] += row.gpu_seconds
        seconds = win.seconds(row.period)
        if seconds:
            cell = per_period[node_pool][row.period]
            cell[project] = cell.get(project, 0) + row.gpu_seconds / seconds
    names = sorted(set(gpu_seconds) | {name for name, gpus in capacity.items() if gpus})
    elapsed = max(1, int((min(win.end, win.now) - win.start).total_seconds()))
    pools = []
    for node_pool in names:
        by_project = sorted(gpu_seconds.get(node_pool, {}).items(), key=lambda item: (-item[1], item[0]))
        colours = _palette([name for name, _ in by_project])
        peak = max([0.0, *(sum(cell.values()) for cell in per_period[node_pool].values())])
        scale = max(peak, capacity.get(node_pool, 0)) or 1
        pools.append(
            {
                "name": node_pool or "(no node pool)",
                "capacity": capacity.get(node_pool, 0),
                "capacity_height": round(100 * capacity.get(node_pool, 0) / scale, 2),
                "scale": round(scale, 1),
                "columns": _stack(win, per_period[node_pool], colours, scale),
                "legend": _legend(colours, len(by_project)),
                "rows": [
                    {
                        "project": project,
                        "gpu_hours": seconds / 3600,
                        "average_gpus": seconds / elapsed,
                        "share": 100 * seconds / elapsed / capacity[node_pool] if capacity.get(node_pool) else None,
                    }
                    for project, seconds in by_project
                ],
            }
        )
    return {"node_pools": pools}


def guarantees(win: Window) -> dict:
    """Per project: deserved and used GPU-hours, the guarantee's share used, the idle guarantee."""
    report = consumption.report(win.query("project", granularity="total"), now=win.now)
    rows = []
    for row in report.rows:  # no sample in the whole range: nothing known, drawn as no guarantee (the note says so)
        deserved, idle = row["deserved_gpu_hours"] or 0.0, row["idle_guarantee_gpu_hours"] or 0.0
        used = row["gpu_hours"]
        if not deserved and not used:
            continue
        rows.append(
            {
                "project": row["project"] or "(no project)",
                "deserved": deserved,
                "used": used,
                "within": deserved - idle,
                "utilisation": 100 * (deserved - idle) / deserved if deserved else None,
                "idle": idle,
            }
        )
    rows.sort(key=lambda row: (-row["deserved"], -row["used"], row["project"]))
    scale = max([1.0, *(max(row["deserved"], row["used"]) for row in rows)])
    for row in rows:
        row["deserved_width"] = round(100 * row["deserved"] / scale, 2)
        row["used_width"] = round(100 * row["used"] / scale, 2)
        row["within_width"] = round(100 * row["within"] / scale, 2)
    idle = sum(row["idle"] for row in rows)
    return {"rows": rows, "scale": round(scale, 1), "idle": idle, "known": consumption.coverage_note(report.guarantee)}


def _waits(win: Window) -> list[tuple[datetime, datetime | None]]:
    """(submitted, end of its wait or None while still waiting) of every workflow that may have waited in the
    window: two queries, the finished workflows' records and the workflows not finished yet."""
    waits = []
    records = WorkflowRecord.objects.filter(submitted_at__lt=win.end).filter(
        Q(finished_at__gte=win.start) | Q(finished_at__isnull=True)
    )
    for submitted, admitted, running, finished in records.values_list(
        "submitted_at", "admitted_at", "running_at", "finished_at"
    ):
        waits.append((submitted, admitted or running or finished))
    live = Workflow.objects.filter(finished_at__isnull=True, created_at__lt=win.end)
    for submitted, admitted, status in live.values_list("created_at", "admitted_at", "status"):
        waits.append((submitted, None if status == WorkflowStatus.QUEUED else (admitted or submitted)))
    return waits


def _percentile(sorted_values: list[float], percent: int) -> float | None:
    """Nearest rank: the smallest value with at least `percent` % of the values at or below it."""
    if not sorted_values:
        return None
    return sorted_values[max(0, math.ceil(percent / 100 * len(sorted_values)) - 1)]


def queue(win: Window) -> dict:
    """Per period: workflows waiting for admission at its end (or now), and the p50/p95 of the waits that ended
    in it, in seconds."""
    waits = _waits(win)
    submitted = sorted(begin for begin, _ in waits)
    ended = sorted(end for _, end in waits if end is not None)
    by_period: dict[datetime, list[float]] = defaultdict(list)
    for begin, end in waits:
        if end is not None and win.start <= end < win.end:
            period_start = floor_hour(end) if win.granularity == "hour" else floor_day(end)
            by_period[period_start].append(max(0.0, (end - begin).total_seconds()))
    rows = []
    for period_start in win.periods():
        moment = min(period_start + win.step, win.end, win.now)
        waited = sorted(by_period.get(period_start, []))
        rows.append(
            {
                "period": period_start,
                "length": bisect_right(submitted, moment) - bisect_right(ended, moment),
                "admitted": len(waited),
                "p50": _percentile(waited, 50),
                "p95": _percentile(waited, 95),
            }
        )
    peak = max([1, *(row["length"] for row in rows)])
    slowest = max([1.0, *(row["p95"] or 0 for row in rows)])
    for row in rows:
        row["length_height"] = round(100 * row["length"] / peak, 2)
        row["p50_height"] = round(100 * (row["p50"] or 0) / slowest, 2)
        row["p95_height"] = round(100 * (row["p95"] or 0) / slowest, 2)
        row["p50_text"], row["p95_text"] = duration(row["p50"]), duration(row["p95"])
    everything = sorted(w for waited in by_period.values() for w in waited)
    p50, p95 = _percentile(everything, 50), _percentile(everything, 95)
    return {
        "rows": rows,
        "peak": peak,
        "slowest": slowest,
        "slowest_text": duration(slowest),
        "waiting_now": sum(1 for _, end in waits if end is None),
        "p50": p50,
        "p95": p95,
        "p50_text": duration(p50),
        "p95_text": duration(p95),
    }


def duration(seconds: float | None) -> str:
    """A wait as a person reads it: 45 s, 12 min, 3.5 h, 2.1 d; "—" for none."""
    if seconds is None:
        return "—"
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds / 60:.0f} min"
    if seconds < 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} d"


def cost(win: Window, rows) -> dict:
    """Cost per department and period, stacked; the table: each department's total."""
    totals: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    per_period: dict[datetime, dict[str, float]] = defaultdict(dict)
    for row in rows:
        department = row.group["department"] or "(no department)"
        totals[department][0] += row.cost_micros
        totals[department][1] += row.gpu_seconds
        cell = per_period[row.period]
        cell[department] = cell.get(department, 0) + row.cost_micros / 1_000_000
    ordered = sorted(totals.items(), key=lambda item: (-item[1][0], item[0]))
    colours = _palette([name for name, _ in ordered])
    peak = max([0.0, *(sum(cell.values()) for cell in per_period.values())]) or 1
    everything = sum(micros for micros, _ in totals.values()) or 1
    return {
        "columns": _stack(win, per_period, colours, peak),
        "peak": peak,
        "legend": _legend(colours, len(ordered)),
        "rows": [
            {"department": name, "cost": micros / 1e6, "gpu_hours": gpu / 3600, "share": 100 * micros / everything}
            for name, (micros, gpu) in ordered
        ],
        "total": sum(micros for micros, _ in totals.values()) / 1_000_000,
    }


# ------------------------------------------------------------------------------------------------ CSV


def csv_of(chart: str, win: Window) -> tuple[list[str], list[dict]]:
    """The chart's series per period (allocation, queue, cost) or its table (guarantee): CSV columns and rows."""
    return {"allocation": _allocation_csv, "guarantee": _guarantee_csv, "queue": _queue_csv, "cost": _cost_csv}[chart](
        win
    )


def _blank_or(value, digits: int = 0):
    return "" if value is None else round(value, digits) if digits else round(value)


def _guarantee_csv(win: Window) -> tuple[list[str], list[dict]]:
    names = {
        "project": "project",
        "deserved": "deserved_gpu_hours",
        "used": "gpu_hours",
        "within": "guarantee_used_gpu_hours",
        "utilisation": "utilisation_percent",
        "idle": "idle_guarantee_gpu_hours",
    }
    rows = [
        {names[key]: row[key] if key == "project" else _blank_or(row[key], 3) for key in names}
        for row in guarantees(win)["rows"]
    ]
    return list(names.values()), rows


def _queue_csv(win: Window) -> tuple[list[str], list[dict]]:
    rows = [
        {
            "period": row["period"].isoformat(),
            "queue_length": row["length"],
            "admitted": row["admitted"],
            "wait_p50_seconds": _blank_or(row["p50"]),
            "wait_p95_seconds": _blank_or(row["p95"]),
        }
        for row in queue(win)["rows"]
    ]
    return ["period", "queue_length", "admitted", "wait_p50_seconds", "wait_p95_seconds"], rows


def _cost_csv(win: Window) -> tuple[list[str], list[dict]]:
    sums: dict[tuple, list[int]] = defaultdict(lambda: [0, 0])
    for row in usage(win.query("department"), win.now):
        sums[(row.period, row.group["department"])] = [row.cost_micros, row.gpu_seconds]
    ordered = sorted(sums.items(), key=lambda item: (item[0][0], -item[1][0], item[0][1]))
    rows = [
        {"period": p.isoformat(), "department": d, "cost_usd": round(c / 1e6, 2), "gpu_hours": round(g / 3600, 3)}
        for (p, d), (c, g) in ordered
    ]
    return ["period", "department", "cost_usd", "gpu_hours"], rows


def _allocation_csv(win: Window) -> tuple[list[str], list[dict]]:
    capacity = {pool.name: pool.capacity_gpu for pool in with_totals().only("name")}
    rows = [
        {
            "period": row.period.isoformat(),
            "node_pool": row.group["node_pool"],
            "project": row.group["project"],
            "gpu_hours": round(row.gpu_seconds / 3600, 3),
            "average_gpus": round(row.gpu_seconds / win.seconds(row.period), 3) if win.seconds(row.period) else "",
            "capacity_gpus": capacity.get(row.group["node_pool"], ""),
        }
        for row in usage(win.query("node_pool", "project"), win.now)
    ]
    rows.sort(key=lambda row: (row["period"], row["node_pool"], -row["gpu_hours"], row["project"]))
    return ["period", "node_pool", "project", "gpu_hours", "average_gpus", "capacity_gpus"], rows
