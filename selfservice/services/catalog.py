"""What the catalog and the pool page show: pools, their platforms, capacity and recent use.

Every pool is listed (so a researcher can ask for access); whether the viewer may *use* a pool comes
from `access.policy` only. Query cost is constant in the number of pools, platforms and nodes: the
viewer's roles (1), the usable pools (1), pools with platforms (2), the pools' capacity summaries with their
machine pools at maximum (pools.services.capacity_summary: 1, and up to 10 more when some pool's summary is
missing or stale: its sums and pools.services.machine_pool_capacity's), pending requests (1), and for a viewer in
some project, the quota panels (selfservice.services.quota_panels: 6)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db.models import Count, Prefetch
from django.utils import timezone

from access import actions, policy, usable_pools
from clusters.units import show
from pools.errors import PoolNotFound
from pools.models import Platform, Pool
from pools.services import capacity as capacity_service
from pools.services import capacity_summary
from pools.services.capacity import Figures, NodeFigures
from pools.services.machine_pool_capacity import Growth, GrowthLines, PoolGrowthLines, growth
from selfservice.models import AccessRequest, RequestStatus
from selfservice.services.quota_panels import QuotaPanel, panels_for
from workflows.models import FINISHED_TASK, Task, Workflow

GPU = "nvidia.com/gpu"
CREATE = actions.WORKFLOW_CREATE


@dataclass
class Gauge:
    """free/total of one resource, with the share in use for a bar."""

    free: int
    total: int
    name: str = GPU

    @property
    def used(self) -> int:
        return max(0, self.total - self.free)

    @property
    def percent_used(self) -> int:
        return round(100 * self.used / self.total) if self.total else 0

    @property
    def percent_free(self) -> int:
        return 100 - self.percent_used if self.total else 0

    @property
    def text(self) -> str:
        return f"{show(self.name, self.free)} free of {show(self.name, self.total)}"

    @classmethod
    def of(cls, figures: Figures | NodeFigures | None, name: str = GPU) -> Gauge:
        if figures is None:
            return cls(0, 0, name)
        return cls(figures.free[name], figures.allocatable[name], name)


@dataclass
class PlatformCard:
    name: str
    description: str
    default: bool
    nodes: int
    gpu: Gauge
    products: list[str] = field(default_factory=list)
    growth: GrowthLines = GrowthLines()  # its machine pools: now and at maximum, cost, spot


@dataclass
class PoolCard:
    name: str
    description: str
    backend: str
    maintenance: bool
    status: str
    usable: bool
    requested: bool  # an access request of the viewer is pending
    platforms: list[PlatformCard]
    gpu: Gauge
    nodes: int
    quota: list[QuotaPanel] = field(default_factory=list)  # the viewer's projects in the charged node pools
    growth: GrowthLines = GrowthLines()


@dataclass
class Catalog:
    cards: list[PoolCard]
    capacity_as_of: datetime | None  # when the oldest figure shown was summed (None: no pool)


def catalog(who) -> Catalog:
    """Every pool, usable ones first, with per-platform GPU free/total."""
    subject = policy.principal(who)
    usable = usable_pools.allowed_pools(subject)
    pools = list(
        Pool.objects.select_related("backend")
        .prefetch_related(
            Prefetch(
                "platforms", queryset=Platform.objects.order_by("name").only("id", "pool_id", "name", "description")
            )
        )
        .order_by("name")
    )
    ids = [pool.pk for pool in pools]
    summed = capacity_summary.totals(ids, backend_ids={pool.backend_id for pool in pools})
    totals, per_platform, products = summed.pools, summed.platforms, summed.products
    pending = set()
    if subject.user.is_authenticated:
        pending = set(
            AccessRequest.objects.filter(requester=subject.user.pk, status=RequestStatus.PENDING).values_list(
                "pool_id", flat=True
            )
        )
    cards = [
        _card(pool, totals, per_platform, products, pool.name in usable, pool.pk in pending, summed.growth[pool.pk])
        for pool in pools
    ]
    quota = panels_for(pools, subject)
    for card in cards:
        card.quota = quota.get(card.name, [])
    cards.sort(key=lambda card: (not card.usable, card.name))
    return Catalog(cards, summed.as_of if cards else None)


def _card(
    pool: Pool,
    totals: dict[int, Figures],
    per_platform: dict[int, Figures],
    products: dict[int, set[str]],
    usable: bool,
    requested: bool,
    grown: PoolGrowthLines,
) -> PoolCard:
    figures = totals.get(pool.pk)
    platforms = [
        PlatformCard(
            p.name,
            p.description,
            p.name == pool.default_platform,
            per_platform[p.pk].nodes if p.pk in per_platform else 0,
            Gauge.of(per_platform.get(p.pk)),
            sorted(product or "CPU only" for product in products.get(p.pk, ())),
            grown.platforms.get(p.name) or GrowthLines(),
        )
        for p in pool.platforms.all()
    ]
    return PoolCard(
        pool.name,
        pool.description,
        pool.backend.name,
        pool.enable_maintenance,
        pool.status,
        usable,
        requested,
        platforms,
        Gauge.of(figures),
        figures.nodes if figures else 0,
        growth=grown.total,
    )


# --------------------------------------------------------------------------------------- pool page


@dataclass
class NodeRow:
    name: str
    gpu_product: str
    schedulable: bool
    cpu: Gauge
    memory: Gauge
    gpu: Gauge


@dataclass
class PlatformDetail:
    name: str
    description: str
    default: bool
    nodes: list[NodeRow]
    cpu: Gauge
    memory: Gauge
    gpu: Gauge
    growth: Growth = field(default_factory=Growth)


@dataclass
class PoolPage:
    pool: Pool
    usable: bool
    submit_allowed: bool
    submit_because: list[str]
    requested: bool
    platforms: list[PlatformDetail]
    cpu: Gauge
    memory: Gauge
    gpu: Gauge
    nodes: int
    workflows_24h: int
    workflows_24h_by_status: dict[str, int]
    running_tasks: int
    active_tasks: int
    quota: list[QuotaPanel] = field(default_factory=list)
    growth: Growth = field(default_factory=Growth)


def get_pool(name: str) -> Pool:
    # no pool has a NUL in its name (PostgreSQL refuses NUL in text: it would be a database error)
    pool = None if "\x00" in name else Pool.objects.select_related("backend").filter(name=name).first()
    if pool is None:
        raise PoolNotFound.named(name)
    return pool


def pool_page(name: str, who) -> PoolPage:
    subject = policy.principal(who)
    pool = get_pool(name)
    decision = subject.decide(CREATE, actions.pool(pool.name))
    report = capacity_service.capacity([pool.name])
    entry = report.pools.get(pool.name) or {"figures": Figures(), "platforms": {}}
    by_platform: dict[str, list[NodeRow]] = {}
    for node in report.nodes:
        for platform in node.pools.get(pool.name, ()):
            by_platform.setdefault(platform, []).append(
                NodeRow(
                    node.name,
                    node.gpu_product,
                    node.schedulable,
                    Gauge.of(node, "cpu"),
                    Gauge.of(node, "memory"),
                    Gauge.of(node),
                )
            )
    grown = growth([pool.pk], {pool.backend_id})[pool.pk]
    platforms = []
    for platform in pool.platforms.order_by("name").only("name", "description"):
        figures = entry["platforms"].get(platform.name)
        platforms.append(
            PlatformDetail(
                platform.name,
                platform.description,
                platform.name == pool.default_platform,
                by_platform.get(platform.name, []),
                Gauge.of(figures, "cpu"),
                Gauge.of(figures, "memory"),
                Gauge.of(figures),
                grown.platforms.get(platform.name) or Growth(),
            )
        )
    since = timezone.now() - timedelta(hours=24)
    by_status = dict(
        Workflow.objects.filter(pool=pool, created_at__gte=since)
        .values_list("status")
        .annotate(n=Count("pk"))
        .order_by("status")
    )
    tasks = Task.objects.filter(workflow__pool=pool).exclude(status__in=FINISHED_TASK).values_list("status")
    task_counts = dict(tasks.annotate(n=Count("pk")).order_by("status"))
    requested = (
        subject.user.is_authenticated
        and AccessRequest.objects.filter(requester=subject.user.pk, pool=pool, status=RequestStatus.PENDING).exists()
    )
    figures = entry["figures"]
    return PoolPage(
        pool,
        pool.name in usable_pools.allowed_pools(subject),
        decision.allowed,
        list(decision.because),
        requested,
        platforms,
        Gauge.of(figures, "cpu"),
        Gauge.of(figures, "memory"),
        Gauge.of(figures),
        figures.nodes,
        sum(by_status.values()),
        by_status,
        task_counts.get("RUNNING", 0),
        sum(task_counts.values()),
        panels_for([pool], subject).get(pool.name, []),
        grown.total,
    )
