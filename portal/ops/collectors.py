"""What `/metrics` serves: the process's counters (portal.metrics, django-prometheus) and, read from the
database at scrape time, the queue depth per pool, the watchers' heartbeats and lag per backend, which
watcher replica holds which backend's lease and how many replicas are live (clusters.leases), the
counters the Celery workers keep there (`portal.metrics.SharedCounter`; docs/operations.md), and the usage
record's GPU-seconds and cost per project and node pool (usage.services.meters).

Nine queries per scrape (two for the usage record, two for the leases), whatever the number of pools,
backends, replicas, workflows and attempts. With
PROMETHEUS_MULTIPROC_DIR set (gunicorn workers) the process counters are those of every process writing there.
"""

from __future__ import annotations

import os

from django.db.models import Count, Max
from django.utils import timezone
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, generate_latest, multiprocess
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from clusters.models import Backend, WatcherHeartbeat, WatcherLease, WatcherReplica
from pools.models import Pool
from portal import metrics, shared_metrics
from usage.services import meters as usage_meters
from workflows.models import Workflow, WorkflowStatus

WAITING_STATUSES = (WorkflowStatus.QUEUED, WorkflowStatus.PENDING)


class DatabaseCollector:
    def collect(self):
        yield self._queue_depth()
        yield from self._backend_sync()
        yield from self._heartbeats()
        yield from self._leases()
        yield from self._shared_counters()
        yield from self._usage()

    def _queue_depth(self) -> GaugeMetricFamily:
        family = GaugeMetricFamily(
            "portal_pool_queue_depth",
            "Workflows waiting in a pool: QUEUED (for admission) and PENDING (for their pods).",
            labels=["pool", "status"],
        )
        counts = {
            (row["pool__name"], row["status"]): row["n"]
            for row in Workflow.objects.filter(status__in=WAITING_STATUSES)
            .values("pool__name", "status")
            .annotate(n=Count("id"))
            .order_by()
        }
        for pool in Pool.objects.order_by("name").values_list("name", flat=True):
            for status in WAITING_STATUSES:
                family.add_metric([pool, str(status)], counts.get((pool, status), 0))
        return family

    def _backend_sync(self):
        sync_age = GaugeMetricFamily(
            "portal_backend_sync_age_seconds",
            "Seconds since the backend's last successful full sync.",
            labels=["backend"],
        )
        event_age = GaugeMetricFamily(
            "portal_backend_event_age_seconds",
            "Seconds since the inventory last wrote one of the backend's nodes (a sync or a watch event).",
            labels=["backend"],
        )
        online = GaugeMetricFamily(
            "portal_backend_online", "1 when the backend answered last time.", labels=["backend"]
        )
        now = timezone.now()
        rows = Backend.objects.exclude(connection="").annotate(last_event=Max("nodes__last_seen")).order_by("name")
        for name, last_sync, last_event, is_online in rows.values_list("name", "last_sync_at", "last_event", "online"):
            if last_sync is not None:
                sync_age.add_metric([name], (now - last_sync).total_seconds())
            if last_event is not None:
                event_age.add_metric([name], (now - last_event).total_seconds())
            online.add_metric([name], 1 if is_online else 0)
        yield from (sync_age, event_age, online)

    def _heartbeats(self):
        labels = ["watcher", "backend"]
        beat_age = GaugeMetricFamily(
            "portal_watcher_heartbeat_age_seconds",
            "Seconds since the watcher's loop last beat for the backend (its watch threads alive).",
            labels=labels,
        )
        lag = GaugeMetricFamily(
            "portal_watcher_lag_seconds",
            "Longest wait, over the last heartbeat period, between the watcher reading an event and its write.",
            labels=labels,
        )
        event_age = GaugeMetricFamily(
            "portal_watcher_event_age_seconds",
            "Seconds since the watcher last applied an event of the backend (absent: none since it started).",
            labels=labels,
        )
        events = CounterMetricFamily(
            "portal_watcher_events", "Events the watcher applied since it started.", labels=labels
        )
        now = timezone.now()
        rows = WatcherHeartbeat.objects.order_by("watcher", "backend__name").values_list(
            "watcher", "backend__name", "beat_at", "lag_seconds", "last_event_at", "events"
        )
        for watcher, backend, beat_at, lag_seconds, last_event_at, applied in rows:
            beat_age.add_metric([watcher, backend], (now - beat_at).total_seconds())
            lag.add_metric([watcher, backend], lag_seconds)
            if last_event_at is not None:
                event_age.add_metric([watcher, backend], (now - last_event_at).total_seconds())
            events.add_metric([watcher, backend], applied)
        yield from (beat_age, lag, event_age, events)

    def _leases(self):
        """1 per (watcher, backend, replica) whose lease is live; live replicas per watcher (two queries)."""
        held = GaugeMetricFamily(
            "portal_watcher_lease_held",
            "1 for the replica that holds the backend's lease for the watcher now (absent: nobody holds it).",
            labels=["watcher", "backend", "replica"],
        )
        replicas = GaugeMetricFamily(
            "portal_watcher_replicas", "Live replicas of the watcher (beating within the lease).", labels=["watcher"]
        )
        now = timezone.now()
        rows = (
            WatcherLease.objects.exclude(holder="")
            .filter(expires_at__gt=now)
            .order_by("watcher", "backend__name")
            .values_list("watcher", "backend__name", "holder")
        )
        for watcher, backend, holder in rows:
            held.add_metric([watcher, backend, holder], 1)
        live = WatcherReplica.objects.filter(expires_at__gt=now).values("watcher").annotate(n=Count("id"))
        for row in live.order_by("watcher"):
            replicas.add_metric([row["watcher"]], row["n"])
        yield from (held, replicas)

    def _shared_counters(self):
        yield from shared_metrics.collect(metrics.SHARED)

    def _usage(self):
        """The usage record per project and node pool (usage.services.meters): the closed attempts as counters,
        the running ones as gauges; counter + gauge = the usage report's total."""
        labels = ["project", "node_pool"]
        families = {
            "gpu_seconds": CounterMetricFamily(
                "portal_usage_gpu_seconds", "GPU-seconds of ended task attempts (the usage record).", labels=labels
            ),
            "cost": CounterMetricFamily(
                "portal_usage_cost_dollars", "Cost in USD of ended task attempts (the usage record).", labels=labels
            ),
            "running_gpu_seconds": GaugeMetricFamily(
                "portal_usage_running_gpu_seconds",
                "GPU-seconds so far of the task attempts still running.",
                labels=labels,
            ),
            "running_cost": GaugeMetricFamily(
                "portal_usage_running_cost_dollars",
                "Cost so far in USD of the task attempts still running.",
                labels=labels,
            ),
            "running_gpus": GaugeMetricFamily(
                "portal_usage_running_gpus", "GPUs requested by the task attempts running now.", labels=labels
            ),
        }
        for (project, node_pool), meter in usage_meters.meters().items():
            values = [project, node_pool]
            families["gpu_seconds"].add_metric(values, meter.gpu_seconds)
            families["cost"].add_metric(values, meter.cost_micros / 1_000_000)
            families["running_gpu_seconds"].add_metric(values, meter.running_gpu_seconds)
            families["running_cost"].add_metric(values, meter.running_cost_micros / 1_000_000)
            families["running_gpus"].add_metric(values, meter.running_gpus)
        yield from families.values()


class _Scrape:
    """Several collectors as one registry for `generate_latest` (nothing registered globally)."""

    def __init__(self, *sources) -> None:
        self.sources = sources

    def collect(self):
        for source in self.sources:
            yield from source.collect()


def metrics_page() -> tuple[bytes, str]:
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        process_metrics = CollectorRegistry()
        multiprocess.MultiProcessCollector(process_metrics)
    else:
        process_metrics = REGISTRY
    return generate_latest(_Scrape(process_metrics, DatabaseCollector())), CONTENT_TYPE_LATEST
