"""The consumption report as its doors ask for it (docs/usage.md, "Reports"): `manage.py usage report` and
`GET /api/usage/report` read their options here (`parse`), the numbers come from the one reading of the record
(`usage.services.report.usage`) with the idle guarantee beside them (`usage.services.guarantee`), and leave as
rows of plain values (`Report.rows`) for JSON, CSV (`as_csv`) or a table.

Options, by their logical names (the CLI writes `--from`, REST `from`; `label` turns a name into the door's):
`from`/`to` a date (`2026-11-01`: midnight UTC; as `to`, the whole day is included) or an ISO time (naive
is UTC), by default the last 30 days; `by` one or more of `report.GROUPS`; `granularity` total, day or hour;
filters `project`, `department`, `pool`, `node-pool`, each one or more names.

Who sees what: `restrict` narrows the report to the projects a viewer may see (`teams.quota_visibility`).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, time, timedelta

from django.utils import timezone

from portal.numbers import checked_count
from teams.quota_visibility import EVERYTHING, QuotaView
from usage.services import guarantee
from usage.services.report import GRANULARITIES, GROUPS, ReportError, ReportQuery, period, usage

DEFAULT_DAYS = 30
FILTERS = {"project": "project", "department": "department", "pool": "pool", "node-pool": "node_pool"}
MEASURES = ("gpu_hours", "cpu_hours", "memory_gib_hours", "cost_usd")
GUARANTEE = ("deserved_gpu_hours", "idle_guarantee_gpu_hours")
EARLIEST, LATEST = datetime(1970, 1, 1, tzinfo=UTC), datetime(9000, 1, 1, tzinfo=UTC)  # times a report may name
Label = Callable[[str], str]


def cli_label(name: str) -> str:
    return f"--{name}"


def api_label(name: str) -> str:
    return name.replace("-", "_")


# ------------------------------------------------------------------------------------------------ options


def parse(
    *,
    start: str | None = None,
    end: str | None = None,
    by: Iterable[str] = (),
    granularity: str | None = None,
    filters: dict[str, Iterable[str]] | None = None,
    label: Label = cli_label,
    now: datetime | None = None,
) -> ReportQuery:
    """A report query from what a person typed; a ReportError names the option (`label`), the value and why."""
    now = now or timezone.now()
    last = parse_time(end, "to", label, end=True) if end else now
    first = parse_time(start, "from", label) if start else last - timedelta(days=DEFAULT_DAYS)
    try:
        first, last = period(first, last, now)
    except ReportError as error:
        shown = {"from": start, "to": end}.get(error.field)
        reason = error.reason
        if reason.startswith("the period is empty"):  # said in this door's names
            start_name, end_name = label("from"), label("to")
            reason = f"the period is empty: {end_name} must come after {start_name}, and {start_name} before now"
        raise ReportError(reason, field=label(error.field), value=shown) from None
    granularity = (granularity or "total").strip().lower()
    if granularity not in GRANULARITIES:
        raise ReportError(f"must be one of {', '.join(GRANULARITIES)}", field=label("granularity"), value=granularity)
    return ReportQuery(first, last, _groups(by, label), granularity, _filters(filters or {}, label))


def parse_time(raw: str, name: str, label: Label = cli_label, *, end: bool = False) -> datetime:
    """A date or an ISO 8601 time, in UTC (naive is UTC), from 1970 to 9000. A date as the end (`to`) includes
    its whole day."""
    text = raw.strip()
    try:
        if len(text) == 10:
            day = date.fromisoformat(text)
            moment = datetime.combine(day + timedelta(days=1 if end else 0), time(), tzinfo=UTC)
        else:
            moment = datetime.fromisoformat(text.replace("Z", "+00:00").replace(" ", "T", 1))
            moment = (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).astimezone(UTC)
    except (ValueError, OverflowError):
        raise ReportError(
            "expected a date (2026-11-01) or an ISO time (2026-11-01T08:00, naive is UTC)", field=label(name), value=raw
        ) from None
    if not EARLIEST <= moment <= LATEST:
        raise ReportError(f"must be from {EARLIEST:%Y-%m-%d} to {LATEST:%Y-%m-%d}", field=label(name), value=raw)
    return moment


def _names(values: Iterable[str], field: str) -> list[str]:
    """Names given repeated or comma-separated, blanks dropped, each once, in order (at most MAX_LIST_ITEMS)."""
    names = [name.strip() for value in values for name in str(value).split(",") if name.strip()]
    return checked_count(list(dict.fromkeys(names)), field)


def _groups(by: Iterable[str], label: Label) -> tuple[str, ...]:
    columns = []
    for name in _names(by, label("by")):
        column = GROUPS.get(name.lower().replace("_", "-"))
        if column is None:
            raise ReportError(f"must be one or more of {', '.join(GROUPS)}", field=label("by"), value=name)
        columns.append(column)
    return tuple(dict.fromkeys(columns)) or ("project",)


def _filters(filters: dict[str, Iterable[str]], label: Label) -> dict[str, tuple[str, ...]]:
    chosen = {}
    for name, values in filters.items():
        names = _names(values or (), label(name))
        if names:
            chosen[FILTERS[name]] = tuple(names)
    return chosen


# ------------------------------------------------------------------------------------------------ visibility


def restrict(query: ReportQuery, view: QuotaView) -> ReportQuery:
    """The report narrowed to the projects `view` shows (all of them for an admin): rows of other projects,
    and of work charged to no project, are left out, whatever the grouping."""
    if view.everything:
        return query
    asked = query.filters.get("project")
    projects = tuple(sorted(view.projects if asked is None else set(asked) & view.projects))
    return replace(query, filters={**query.filters, "project": projects})


# ------------------------------------------------------------------------------------------------ rows


@dataclass(frozen=True)
class Report:
    query: ReportQuery
    columns: list[str]
    rows: list[dict]
    guarantee: guarantee.Coverage | None = None  # which hours the idle guarantee knows; None: no such columns

    def page(self, offset: int, limit: int) -> list[dict]:
        return self.rows[offset : offset + limit]


def report(query: ReportQuery, view: QuotaView = EVERYTHING, now: datetime | None = None) -> Report:
    """The report's rows: the record's sums, and the idle guarantee when the grouping allows it (with a row
    for a team that was guaranteed GPUs and used nothing). Ordered by period, then GPU-hours (most first)."""
    now = now or timezone.now()
    query = restrict(query, view)
    sums: dict[tuple, list[int]] = {}
    for row in usage(query, now):
        sums[(row.period, tuple(row.group.values()))] = [
            row.gpu_seconds,
            row.cpu_milli_seconds,
            row.memory_mib_seconds,
            row.cost_micros,
            0,
            0,
        ]
    known = guarantee.coverage(query, now) if guarantee.applies(query) else None
    if known is not None:
        for key, (deserved, idle) in guarantee.idle_guarantee(query, now).items():
            sums.setdefault(key, [0, 0, 0, 0, 0, 0])[4:] = [deserved, idle]
    ordered = sorted(sums.items(), key=lambda item: (item[0][0] or query.start, -item[1][0], item[0][1]))
    known_periods = known.periods(query.granularity) if known is not None else None
    rows = [_row(query, period_start, group, values, known_periods) for (period_start, group), values in ordered]
    return Report(query, columns(query, known is not None), rows, known)


def columns(query: ReportQuery, with_guarantee: bool) -> list[str]:
    period_column = ["period"] if query.granularity != "total" else []
    return [*period_column, *query.by, *MEASURES, *(GUARANTEE if with_guarantee else ())]


def _row(query: ReportQuery, period_start, group: tuple, values: list[int], known_periods: set | None) -> dict:
    gpu, cpu, memory, cost, deserved, idle = values
    row = {"period": period_start.isoformat()} if period_start is not None else {}
    row.update(zip(query.by, group, strict=True))
    row.update(
        gpu_hours=round(gpu / 3600, 3),
        cpu_hours=round(cpu / 3_600_000, 3),
        memory_gib_hours=round(memory / (1024 * 3600), 3),
        cost_usd=round(cost / 1_000_000, 2),
    )
    if known_periods is not None and period_start not in known_periods:  # no sample: unknown, not idle
        row.update(deserved_gpu_hours=None, idle_guarantee_gpu_hours=None)
    elif known_periods is not None:
        row.update(deserved_gpu_hours=round(deserved / 3600, 3), idle_guarantee_gpu_hours=round(idle / 3600, 3))
    return row


def coverage_note(known: guarantee.Coverage | None) -> str:
    """The idle guarantee's coverage in words ("" when the report has no guarantee columns)."""
    if known is None:
        return ""
    if known.known_from is None:
        return "idle guarantee unknown: no deserved sample in this period (shown as -)"
    note = f"idle guarantee known from {known.known_from:%Y-%m-%d %H:%M} UTC"
    if known.unknown_hours:
        note += f"; {known.unknown_hours} hour(s) of the period have no deserved sample and are not counted"
    return note


def coverage_fields(result: Report) -> dict:
    """What the doors say beside the rows: from when the idle guarantee is known, and the hours it does not know
    (both None when the report has no guarantee columns)."""
    known = result.guarantee
    return {
        "guarantee_known_from": known.known_from.isoformat() if known and known.known_from else None,
        "guarantee_unknown_hours": known.unknown_hours if known else None,
    }


def as_csv(column_names: list[str], rows: Iterable[dict]) -> str:
    """Rows as CSV with a header line (the column names as JSON has them)."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=column_names, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()
