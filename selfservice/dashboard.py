"""The admin home as a dashboard (Unfold's DASHBOARD_CALLBACK, portal/settings.py; templates/admin/index.html).

Sections, each shown only to whom may view the admin list it links to (that model admin's
`has_view_permission`, which asks access.policy), and each counted over the rows that list would show
(its `get_queryset`, narrowed by the policy):

- pending access and pool requests (selfservice), with counts and the latest few;
- pools by GPU use: GPUs in use / allocatable per pool (pools.services.capacity_summary, each node once);
- key numbers (GPUs in use, workflows queued and running) with sparklines of their last 24 hours;
- workflows of the last 24 hours, per hour: submitted and still queued, and finished (completed, failed,
  cancelled);
- clusters (backends) and their inventory sync state;
- the node pools' queues (quotas.dashboard).

It lives in selfservice, the top app, because it reads all of those apps. A fixed number of queries,
whatever the number of pools, backends, requests or workflows (tests/selfservice/test_dashboard.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, timedelta
from urllib.parse import urlencode

from django.contrib import admin
from django.db.models import Count
from django.db.models.functions import TruncHour
from django.urls import reverse
from django.utils import timezone

from clusters.models import Backend
from pools.models import PoolCapacity
from pools.services import capacity_summary
from quotas import dashboard as queues_panel
from selfservice.models import AccessRequest, PoolRequest, RequestStatus
from teams.quota_visibility import sees_every_team
from usage.services import hourly_series
from workflows.models import FINISHED_WORKFLOW, Workflow, WorkflowStatus

LATEST_REQUESTS = 5  # pending requests listed by name; the count says how many more
POOLS_SHOWN = 12  # pools with bars, busiest first; the link lists them all
HOURS = 24
GPU = "nvidia.com/gpu"
FINISHED = sorted(FINISHED_WORKFLOW)
# How a workflow ended, as the chart stacks it (bottom to top), with its list's filter.
ENDED_LABELS = (("completed", "completed"), ("failed", "failed"), ("cancelled", "cancelled"))
ENDS = {
    "completed": {"status__exact": WorkflowStatus.COMPLETED},
    "failed": {"status__startswith": "FAILED"},
    "cancelled": {"status__exact": WorkflowStatus.CANCELLED},
}


def dashboard(request, context: dict) -> dict:
    sections = {
        "requests": _requests(request),
        "gpu_pools": _gpu_pools(request),
        "workflow_chart": _workflow_chart(request),
        "key_numbers": _key_numbers(request),
        "clusters": _clusters(request),
    }
    return queues_panel.dashboard(request, {**context, **{k: v for k, v in sections.items() if v is not None}})


def _admin_for(request, model):
    """The model's admin if the viewer may see its list, else None (the section is not shown)."""
    model_admin = admin.site._registry.get(model)
    return model_admin if model_admin is not None and model_admin.has_view_permission(request) else None


def _list_url(model, **filters) -> str:
    url = reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")
    return f"{url}?{urlencode(filters)}" if filters else url


# ------------------------------------------------------------------------------------------ requests


def _requests(request) -> list[dict] | None:
    queues = []
    for model, noun in ((AccessRequest, "access request"), (PoolRequest, "pool request")):
        model_admin = _admin_for(request, model)
        if model_admin is None:
            continue
        pending = model_admin.get_queryset(request).filter(status=RequestStatus.PENDING)
        related = ["requester", "pool"] if model is AccessRequest else ["requester"]
        latest = list(pending.select_related(*related).order_by("-created_at", "-id")[:LATEST_REQUESTS])
        queues.append(
            {
                "noun": noun,
                "kind": model._meta.model_name,
                "count": pending.count(),
                "latest": [
                    {"text": _request_text(item), "url": _change_url(item), "at": item.created_at} for item in latest
                ],
                "url": _list_url(model, status__exact=RequestStatus.PENDING),
            }
        )
    return queues or None


def _request_text(item) -> str:
    who = item.requester.get_username()
    if isinstance(item, AccessRequest):
        return f"{who} → {item.pool.name}"
    return f"{who}: {item.team}, {item.hardware} × {item.gpus}"


def _change_url(item) -> str:
    return reverse(f"admin:{item._meta.app_label}_{item._meta.model_name}_change", args=[item.pk])


# ------------------------------------------------------------------------------------------ GPU use


@dataclass
class PoolBar:
    name: str
    url: str
    used: int
    allocatable: int
    nodes: int

    @property
    def percent(self) -> int:
        return min(100, round(100 * self.used / self.allocatable)) if self.allocatable else 0


def _gpu_pools(request) -> dict | None:
    model_admin = _admin_for(request, PoolCapacity)
    if model_admin is None:
        return None
    pools = list(model_admin.get_queryset(request).order_by("name").values_list("pk", "name"))
    summed = capacity_summary.totals([pk for pk, _ in pools], platforms=False)
    totals = summed.pools
    bars = [
        PoolBar(
            name=name,
            url=reverse("admin:pools_poolcapacity_change", args=[pk]),
            used=totals[pk].used[GPU],
            allocatable=totals[pk].allocatable[GPU],
            nodes=totals[pk].nodes,
        )
        for pk, name in pools
    ]
    bars.sort(key=lambda bar: (-bar.percent, -bar.allocatable, bar.name))
    return {
        "bars": bars[:POOLS_SHOWN],
        "more": max(0, len(bars) - POOLS_SHOWN),
        "total": len(bars),
        "url": _list_url(PoolCapacity),
        "as_of": summed.as_of,
    }


# ------------------------------------------------------------------------------------------ workflows


def _workflow_chart(request) -> dict | None:
    """Per hour: workflows submitted and still queued (by submission), and workflows that finished, by how they
    ended (completed, failed, cancelled: every finished status, by their end)."""
    model_admin = _admin_for(request, Workflow)
    if model_admin is None:
        return None
    now = timezone.now().astimezone(UTC)
    first = now.replace(minute=0, second=0, microsecond=0) - timedelta(hours=HOURS - 1)
    rows = model_admin.get_queryset(request).order_by()
    queued = _per_hour(rows.filter(status=WorkflowStatus.QUEUED, created_at__gte=first), "created_at")
    ended = _per_hour_and_status(rows.filter(status__in=FINISHED, finished_at__gte=first), "finished_at")
    hours = [first + timedelta(hours=index) for index in range(HOURS)]
    peak = max([1, *queued.values(), *(sum(by_end.values()) for by_end in ended.values())])
    since = first.isoformat()
    totals = {end: sum(by_end.get(end, 0) for by_end in ended.values()) for end in ENDS}
    queued_total = sum(queued.values())
    return {
        "hours": [_hour(hour, queued.get(hour, 0), ended.get(hour, {}), peak) for hour in hours],
        "peak": peak,
        "queued": queued_total,
        "ends": [
            {
                "end": end,
                "label": label,
                "count": totals[end],
                "url": _list_url(Workflow, **ENDS[end], finished_at__gte=since),
            }
            for end, label in ENDED_LABELS
        ],
        "failed": totals["failed"],
        "finished": sum(totals.values()),
        "total": queued_total + sum(totals.values()),
        "queued_url": _list_url(Workflow, status__exact=WorkflowStatus.QUEUED),
        "failed_url": _list_url(Workflow, status__startswith="FAILED", finished_at__gte=since),
        "url": _list_url(Workflow),
    }


def _hour(hour, queued: int, ended: dict[str, int], peak: int) -> dict:
    return {
        "hour": hour,
        "queued": queued,
        "queued_height": round(100 * queued / peak),
        "finished": sum(ended.values()),
        "ends": [
            {"end": end, "count": ended.get(end, 0), "height": round(100 * ended.get(end, 0) / peak)}
            for end, _ in ENDED_LABELS
        ],
        **{end: ended.get(end, 0) for end in ENDS},
    }


def _end_of(status: str) -> str:
    if status == WorkflowStatus.COMPLETED:
        return "completed"
    return "cancelled" if status == WorkflowStatus.CANCELLED else "failed"


def _per_hour_and_status(rows, column: str) -> dict:
    """{start of the hour (UTC): {completed|failed|cancelled: count}} in one query."""
    counted = rows.annotate(hour=TruncHour(column, tzinfo=UTC)).values("hour", "status").annotate(n=Count("pk"))
    found: dict = {}
    for hour, status, n in counted.values_list("hour", "status", "n"):
        by_end = found.setdefault(hour, {})
        by_end[_end_of(status)] = by_end.get(_end_of(status), 0) + n
    return found


def _key_numbers(request) -> dict | None:
    """GPUs in use, workflows queued and running: now, and their last 24 hours as sparklines
    (usage.services.hourly_series). Portal-wide figures: shown to who may list workflows and see every team."""
    if _admin_for(request, Workflow) is None or not sees_every_team(request):
        return None
    now = timezone.now()
    gpus = hourly_series.gpus_in_use(now)[()]
    flows = hourly_series.workflows(now)
    return {
        "numbers": [
            {
                "key": "gpus",
                "label": "GPUs in use",
                "value": hourly_series.gpus_running()[()],
                "series": gpus,
                "meaning": "average GPUs held by running pods, per hour",
            },
            {
                "key": "queued",
                "label": "workflows queued",
                "value": flows.queued[-1],
                "series": flows.queued,
                "meaning": "workflows waiting for admission at the end of each hour",
                "url": _list_url(Workflow, status__exact=WorkflowStatus.QUEUED),
            },
            {
                "key": "running",
                "label": "workflows running",
                "value": flows.running[-1],
                "series": flows.running,
                "meaning": "workflows with a task running at the end of each hour",
                "url": _list_url(Workflow, status__exact=WorkflowStatus.RUNNING),
            },
        ],
        "since": hourly_series.hours(now)[0],
    }


def _per_hour(rows, column: str) -> dict:
    """{start of the hour (UTC): count} in one query."""
    counted = rows.annotate(hour=TruncHour(column, tzinfo=UTC)).values("hour").annotate(n=Count("pk"))
    return dict(counted.values_list("hour", "n"))


# ------------------------------------------------------------------------------------------ clusters


def _clusters(request) -> dict | None:
    model_admin = _admin_for(request, Backend)
    if model_admin is None:
        return None
    visible = model_admin.get_queryset(request).values("pk")
    backends = Backend.objects.filter(pk__in=visible).annotate(node_total=Count("nodes")).order_by("name")
    rows = list(
        backends.values_list(
            "pk", "name", "sync_status", "online", "last_sync_at", "last_error", "last_error_at", "node_total"
        )
    )
    return {
        "backends": [
            {
                "name": name,
                "url": reverse("admin:clusters_backend_change", args=[pk]),
                "status": status,
                "status_label": Backend.SyncStatus(status).label if status in Backend.SyncStatus.values else status,
                "online": online,
                "last_sync_at": last_sync_at,
                "last_error": last_error,
                "last_error_at": last_error_at,
                "nodes": nodes,
            }
            for pk, name, status, online, last_sync_at, last_error, last_error_at, nodes in rows
        ],
        "url": _list_url(Backend),
        "degraded": sum(1 for row in rows if row[2] == Backend.SyncStatus.DEGRADED),
        "degraded_url": _list_url(Backend, sync_status__exact=Backend.SyncStatus.DEGRADED),
    }
