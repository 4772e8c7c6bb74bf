"""The portal's memory (docs/usage.md): what ran where, for how long, at what cost, and how long it waited.

Records name what they are about by name (project, node pool, node…), never by foreign key: they outlive the
workflows, projects and nodes they describe (renames, deletes, archiving), and a report over last year must not
change because a project was renamed today.

- `TaskAttempt`: one row per attempt of a task that ran (a pod that started), written as the pod starts and
  closed once as it ends, with the cluster's own times. Rows are never rewritten after their end; retention
  removes them after `USAGE_RAW_RETENTION_DAYS`.
- `WorkflowRecord`: one row per finished workflow: its queue wait (submitted → admitted → running), what it
  asked for per node pool, and how it ended (reports of waits and the what-if replay read these).
- `UsageRollup`: sums of the closed attempts per hour and per day and per (project, department, node pool,
  pool, platform, backend, instance type, capacity type), built incrementally by `usage.services.rollup`.
- `UsageTotal`: what every attempt ever rolled up added, per (project, node pool), never pruned: the base of the
  Prometheus counters (usage.services.meters), so a scrape reads this small table, not the record.
- `DeservedSample`: each project's deserved GPUs per node pool, sampled every hour (idle guarantee).
- `PriceOverride`: an admin's price for an instance type on one backend (on-demand and spot).
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q
from django.utils import timezone


class Outcome(models.TextChoices):
    RUNNING = "running", "running"  # not ended yet: counts up to now in reports, never in rollups
    COMPLETED = "completed", "completed"
    FAILED = "failed", "failed"
    PREEMPTED = "preempted", "preempted"
    SPOT_INTERRUPTION = "spot-interruption", "spot interruption"
    CANCELLED = "cancelled", "cancelled"


class CapacityType(models.TextChoices):
    ON_DEMAND = "on-demand", "on-demand"
    SPOT = "spot", "spot"


class TaskAttempt(models.Model):
    task_pk = models.BigIntegerField()  # workflows.Task's id (no foreign key: see the module docstring)
    attempt = models.PositiveIntegerField()  # the task's retry id when this pod ran
    workflow_id = models.CharField(max_length=80)
    task = models.CharField(max_length=63)
    pod = models.CharField(max_length=253, blank=True, default="")
    project = models.CharField(max_length=123, blank=True, default="")  # "" when charged to no project
    department = models.CharField(max_length=123, blank=True, default="")
    pool = models.CharField(max_length=128)
    platform = models.CharField(max_length=128)
    node_pool = models.CharField(max_length=128, blank=True, default="")
    backend = models.CharField(max_length=128)
    node = models.CharField(max_length=253, blank=True, default="")
    instance_type = models.CharField(max_length=64, blank=True, default="")
    capacity_type = models.CharField(max_length=16, choices=CapacityType.choices, default=CapacityType.ON_DEMAND)
    gpu = models.PositiveIntegerField(default=0)  # requested devices
    cpu_millis = models.BigIntegerField(default=0)  # requested millicores
    memory_bytes = models.BigIntegerField(default=0)  # requested bytes
    started_at = models.DateTimeField()  # the container's start, as the cluster reported it
    ended_at = models.DateTimeField(null=True, blank=True)  # its end (cluster's time where it has one); null: running
    outcome = models.CharField(max_length=20, choices=Outcome.choices, default=Outcome.RUNNING)
    # This attempt's share of its node's price, in micro-dollars per hour, and where the price came from
    # (usage.services.prices); fixed when the attempt starts, so a rebuild gives the same cost.
    hourly_cost_micros = models.BigIntegerField(default=0)
    price_source = models.CharField(max_length=255, blank=True, default="")
    recorded_at = models.DateTimeField(default=timezone.now)
    # In the rollups: set by the rollup job in the transaction that wrote the rollups it is counted in; a
    # closed attempt not rolled up yet is added by reports from the raw record (usage.services.report).
    rolled_up = models.BooleanField(default=False)

    class Meta:
        ordering = ["started_at", "id"]
        constraints = [models.UniqueConstraint(fields=["task_pk", "attempt"], name="usage_one_row_per_attempt")]
        indexes = [
            models.Index(fields=["started_at"]),
            models.Index(fields=["ended_at"]),
            models.Index(fields=["outcome"]),
            models.Index(fields=["node_pool", "ended_at"]),  # a node pool's past usage (time-based fair share)
            # the attempts not in the rollups yet (running, or closed since the job last ran): few, read by every
            # report and by the rollup job
            models.Index(fields=["started_at"], name="usage_attempt_not_rolled_up", condition=Q(rolled_up=False)),
        ]

    def __str__(self) -> str:
        return f"{self.workflow_id}/{self.task} attempt {self.attempt}"


class WorkflowRecord(models.Model):
    workflow_id = models.CharField(max_length=80, unique=True)
    project = models.CharField(max_length=123, blank=True, default="")
    department = models.CharField(max_length=123, blank=True, default="")
    pool = models.CharField(max_length=128)
    node_pool = models.CharField(max_length=128, blank=True, default="")  # the lead task's
    backend = models.CharField(max_length=128, blank=True, default="")
    priority = models.CharField(max_length=8)
    # What it asked for, summed over its tasks: {"gpu", "cpu", "memory"} (scheduler units), and per node pool.
    requests = models.JSONField(default=dict, blank=True)
    parts = models.JSONField(default=dict, blank=True)  # {node pool: {"gpu", "cpu", "memory"}}
    submitted_at = models.DateTimeField(db_index=True)
    admitted_at = models.DateTimeField(null=True, blank=True)
    running_at = models.DateTimeField(null=True, blank=True)  # its first task's start
    finished_at = models.DateTimeField(null=True, blank=True, db_index=True)
    status = models.CharField(max_length=24)  # the workflow's finished status
    preemptible = models.BooleanField(default=False)
    preemptions = models.PositiveIntegerField(default=0)
    recorded_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["submitted_at", "id"]
        indexes = [models.Index(fields=["project", "submitted_at"])]

    def __str__(self) -> str:
        return self.workflow_id


class Granularity(models.TextChoices):
    HOUR = "hour", "hour"
    DAY = "day", "day"


DIMENSIONS = ("project", "department", "node_pool", "pool", "platform", "backend", "instance_type", "capacity_type")


class UsageRollup(models.Model):
    granularity = models.CharField(max_length=4, choices=Granularity.choices)
    period_start = models.DateTimeField()  # UTC hour or day
    project = models.CharField(max_length=123, blank=True, default="")
    department = models.CharField(max_length=123, blank=True, default="")
    node_pool = models.CharField(max_length=128, blank=True, default="")
    pool = models.CharField(max_length=128, blank=True, default="")
    platform = models.CharField(max_length=128, blank=True, default="")
    backend = models.CharField(max_length=128, blank=True, default="")
    instance_type = models.CharField(max_length=64, blank=True, default="")
    capacity_type = models.CharField(max_length=16, blank=True, default="")
    gpu_seconds = models.BigIntegerField(default=0)
    cpu_milli_seconds = models.BigIntegerField(default=0)
    memory_mib_seconds = models.BigIntegerField(default=0)
    cost_micros = models.BigIntegerField(default=0)
    # per hour, the attempts that ran in it; per day, the sum over its hours (an attempt counts in each hour it ran)
    attempts = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["period_start", "id"]
        # the admin lists it as the usage page (selfservice.usage_admin): "Usage › Usage and cost"
        verbose_name, verbose_name_plural = "usage and cost", "usage and cost"
        indexes = [
            models.Index(fields=["granularity", "period_start"]),
            models.Index(fields=["granularity", "project", "period_start"]),
        ]

    def __str__(self) -> str:
        return f"{self.granularity} {self.period_start:%Y-%m-%d %H:00} {self.project}"


class UsageTotal(models.Model):
    """Cumulative sums of the attempts rolled up so far, added in the rollup job's transaction that marks them
    (usage.services.rollup); retention never removes them, so they only grow."""

    project = models.CharField(max_length=123, blank=True, default="")
    node_pool = models.CharField(max_length=128, blank=True, default="")
    gpu_seconds = models.BigIntegerField(default=0)
    cost_micros = models.BigIntegerField(default=0)

    class Meta:
        ordering = ["project", "node_pool"]
        constraints = [models.UniqueConstraint(fields=["project", "node_pool"], name="usage_one_total_per_group")]

    def __str__(self) -> str:
        return f"{self.project}/{self.node_pool}: {self.gpu_seconds} GPU-s"


class DeservedSample(models.Model):
    hour = models.DateTimeField()
    node_pool = models.CharField(max_length=128)
    project = models.CharField(max_length=123)
    department = models.CharField(max_length=123, blank=True, default="")
    gpu_deserved = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["hour", "node_pool", "project"]
        constraints = [
            models.UniqueConstraint(fields=["hour", "node_pool", "project"], name="usage_one_sample_per_hour")
        ]

    def __str__(self) -> str:
        return f"{self.hour:%Y-%m-%d %H:00} {self.node_pool}/{self.project}: {self.gpu_deserved}"


class PriceOverride(models.Model):
    backend = models.ForeignKey("clusters.Backend", on_delete=models.CASCADE, related_name="price_overrides")
    instance_type = models.CharField(max_length=64)
    on_demand_hourly = models.DecimalField(
        max_digits=10, decimal_places=4, null=True, blank=True, help_text="USD per node-hour; empty: the catalog's"
    )
    spot_hourly = models.DecimalField(
        max_digits=10, decimal_places=4, null=True, blank=True, help_text="USD per node-hour; empty: the catalog's"
    )
    note = models.CharField(max_length=255, blank=True, default="", help_text="Where the price comes from.")
    as_of = models.DateField(null=True, blank=True, help_text="When the prices were read from their source.")

    class Meta:
        ordering = ["backend__name", "instance_type"]
        constraints = [
            models.UniqueConstraint(fields=["backend", "instance_type"], name="usage_one_price_per_backend_type"),
            # every door: a price is positive, at most clusters.machinepools.pricing.MAX_HOURLY_PRICE, spot never
            # above on-demand (AWS charges at most the On-Demand price)
            models.CheckConstraint(
                condition=models.Q(on_demand_hourly__isnull=True)
                | models.Q(on_demand_hourly__gt=0, on_demand_hourly__lte=1000),
                name="usage_override_price_in_range",
            ),
            models.CheckConstraint(
                condition=models.Q(spot_hourly__isnull=True) | models.Q(spot_hourly__gt=0, spot_hourly__lte=1000),
                name="usage_override_spot_price_in_range",
            ),
            models.CheckConstraint(
                condition=models.Q(on_demand_hourly__isnull=True)
                | models.Q(spot_hourly__isnull=True)
                | models.Q(spot_hourly__lte=models.F("on_demand_hourly")),
                name="usage_override_spot_at_most_on_demand",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.backend} {self.instance_type}"
