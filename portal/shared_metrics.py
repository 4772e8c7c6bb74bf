"""Counters and histograms kept in the database (`portal.models.SharedCount`), for what other processes count.

Celery workers and the watchers run in their own pods, the workers often as several prefork children:
metrics in their memory reach no `/metrics` that Prometheus scrapes (PROMETHEUS_MULTIPROC_DIR adds up the
processes of one pod only). So what they count is one row per series, incremented by an upsert (atomic
across processes and pods), and the web's collector (`portal.ops.collectors`) reads the rows at scrape
time. The write waits for the commit of the transaction it is counted in (no row stays locked meanwhile;
a rolled-back transaction counts nothing), except with `after_commit=False`, for what is counted outside
the work's transactions (a Celery task's outcome). A database that refuses the write loses the count,
never the work (inside a transaction, the write is a savepoint). Values are integers: a histogram's sum
is kept in microseconds. Within a Celery task (`hold` at its start, `release` at its end: portal.celery) what
would be written on its own is held and written once, after the task: a task's counts (a pod created, the
task's outcome) are one transaction instead of one each.
"""

from __future__ import annotations

import json
import logging
import math
import threading
from collections import Counter
from collections.abc import Sequence

log = logging.getLogger(__name__)
Row = tuple[str, str, int]  # (series name, labels as canonical JSON, amount)
_held = threading.local()  # .rows: a Counter of (name, labels) → amount while a task holds its counts


def hold() -> None:
    """A worker task starts: hold what it counts outside a transaction until `release`."""
    _held.rows = Counter()


def release() -> None:
    """The task ended: write what it held, in one statement."""
    rows, _held.rows = getattr(_held, "rows", None), None
    if rows:
        _add([(name, labels, amount) for (name, labels), amount in rows.items()])


def _labels(names: Sequence[str], values: Sequence[str], **extra: str) -> str:
    return json.dumps({**dict(zip(names, map(str, values), strict=True)), **extra}, sort_keys=True)


def _add_after_commit(rows: list[Row]) -> None:
    from django.db import transaction

    if rows:
        transaction.on_commit(lambda: _add(rows), robust=True)  # at once outside a transaction


def _add(rows: list[Row]) -> None:
    """One statement for all the rows (a histogram's observation is several series)."""
    from django.db import DatabaseError, connection, transaction

    from portal.models import SharedCount

    held = getattr(_held, "rows", None)
    if held is not None and not connection.in_atomic_block:
        for name, labels, amount in rows:
            held[name, labels] += amount
        return
    table = connection.ops.quote_name(SharedCount._meta.db_table)
    values = ", ".join(["(%s, %s, %s)"] * len(rows))
    own_transaction = not connection.in_atomic_block  # else a savepoint: our failure is not the caller's
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            if own_transaction and connection.vendor == "postgresql":
                # a count lost in a server crash is fine; waiting for the WAL flush on every count is not
                cursor.execute("SET LOCAL synchronous_commit TO OFF")
            cursor.execute(
                f"INSERT INTO {table} (name, labels, value) VALUES {values} "  # noqa: S608 (our table name)
                f"ON CONFLICT (name, labels) DO UPDATE SET value = {table}.value + excluded.value",
                [part for row in rows for part in row],
            )
    except DatabaseError as error:
        log.warning("metrics %s not written: %s", sorted({row[0] for row in rows}), error)


class SharedCounter:
    def __init__(self, name: str, documentation: str, labelnames: Sequence[str], *, after_commit: bool = True) -> None:
        self.name, self.documentation, self.labelnames = name, documentation, tuple(labelnames)
        self.after_commit = after_commit

    def labels(self, *values: str) -> _CounterChild:
        return _CounterChild(self, _labels(self.labelnames, values))


class _CounterChild:
    def __init__(self, counter: SharedCounter, labels: str) -> None:
        self.counter, self.labels = counter, labels

    def inc(self, amount: int = 1) -> None:
        if amount:
            rows = [(self.counter.name, self.labels, amount)]
            if self.counter.after_commit:
                _add_after_commit(rows)
            else:
                _add(rows)


class SharedHistogram:
    """Series `<name>_bucket` (with `le`, cumulative), `<name>_count` and `<name>_sum_us` (microseconds)."""

    def __init__(self, name: str, documentation: str, labelnames: Sequence[str], buckets: Sequence[float]) -> None:
        self.name, self.documentation, self.labelnames = name, documentation, tuple(labelnames)
        self.buckets = (*sorted(buckets), math.inf)

    def labels(self, *values: str) -> _HistogramChild:
        return _HistogramChild(self, tuple(map(str, values)))


class _HistogramChild:
    def __init__(self, histogram: SharedHistogram, values: tuple[str, ...]) -> None:
        self.histogram, self.values = histogram, values

    def observe(self, seconds: float) -> None:
        h, plain = self.histogram, _labels(self.histogram.labelnames, self.values)
        rows = [
            (f"{h.name}_bucket", _labels(h.labelnames, self.values, le=le_text(le)), 1)
            for le in h.buckets
            if seconds <= le
        ]
        rows += [(f"{h.name}_count", plain, 1), (f"{h.name}_sum_us", plain, round(seconds * 1_000_000))]
        _add_after_commit(rows)


def collect(shared: Sequence[SharedCounter | SharedHistogram]):
    """The metric families of `shared`, from every row in one query (series with no row: no sample)."""
    from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily

    from portal.models import SharedCount

    series: dict[str, dict[str, int]] = {}
    for name, labels, value in SharedCount.objects.order_by("name", "labels").values_list("name", "labels", "value"):
        series.setdefault(name, {})[labels] = value
    for metric in shared:
        if isinstance(metric, SharedCounter):
            family = CounterMetricFamily(metric.name, metric.documentation, labels=metric.labelnames)
            for labels, value in series.get(metric.name, {}).items():
                family.add_metric(_values(metric.labelnames, labels), value)
        else:
            family = HistogramMetricFamily(metric.name, metric.documentation, labels=metric.labelnames)
            buckets = series.get(f"{metric.name}_bucket", {})
            sums = series.get(f"{metric.name}_sum_us", {})
            for labels in series.get(f"{metric.name}_count", {}):
                values = json.loads(labels)
                counts = [
                    (le_text(le), buckets.get(json.dumps({**values, "le": le_text(le)}, sort_keys=True), 0))
                    for le in metric.buckets
                ]
                family.add_metric(_values(metric.labelnames, labels), counts, sums.get(labels, 0) / 1_000_000)
        yield family


def _values(names: Sequence[str], labels: str) -> list[str]:
    values = json.loads(labels)
    return [values.get(name, "") for name in names]


def le_text(bound: float) -> str:
    """Prometheus's spelling of a bucket bound (`0.5`, `1.0`, `+Inf`)."""
    return "+Inf" if bound == math.inf else repr(float(bound))
