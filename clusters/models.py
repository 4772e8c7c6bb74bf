"""The clusters pools run on (`Backend`) and their node inventory (`Node`).

Written only by `clusters.inventory` (sync and watch) and the backend config writes. Plain fields only
(JSON, integers), so SQLite works for the embedded default.

Node capacity columns hold scheduler units (cpu in millicores, memory and ephemeral storage in bytes, GPUs
in devices) so capacity sums need no quantity parsing; the JSON fields keep what the API reported.
Which platforms a node serves (membership) is the pools app's: `Platform.nodes`, `node.platforms`.

The tables kept their rows when these models moved here from `pools` (see migrations/0001_initial.py).
"""

from __future__ import annotations

import hashlib

from django.db import models
from django.utils import timezone

from clusters.config_types import CONTROL_IMAGE_HELP, QUOTA_SCHEDULERS
from clusters.machinepools.provider_limits import ROSA_TOPOLOGIES
from clusters.machinepools.providers import registry as providers
from portal.secrets import EncryptedTextField

# resource name -> column suffix
CAPACITY_COLUMNS = {"cpu": "cpu", "memory": "memory", "nvidia.com/gpu": "gpu", "ephemeral-storage": "storage"}


class Backend(models.Model):
    """A Kubernetes cluster that pools run on.

    Connection settings are read only by `clusters.kube.connection` (the one ApiClient factory). `kubeconfig`
    and `token` are secrets: never displayed back, logged or written into revisions (snapshots show a
    `<set …>` marker), and stored encrypted (`portal.secrets`). Sync fields are written by
    `clusters.inventory`.
    """

    class Connection(models.TextChoices):
        NONE = "", "not connected"
        KUBECONFIG = "kubeconfig", "kubeconfig"
        IN_CLUSTER = "in-cluster", "in-cluster service account"
        URL = "url", "API URL (+ token, CA)"

    class SyncStatus(models.TextChoices):
        NEVER = "never", "never synced"
        OK = "ok", "ok"
        DEGRADED = "degraded", "degraded"

    name = models.CharField(max_length=128, unique=True)
    description = models.TextField(blank=True, default="")
    namespace = models.CharField(max_length=63, default="default", help_text="Namespace for workload pods.")
    scheduler_name = models.CharField(
        max_length=253, blank=True, default="", help_text="Pod schedulerName; empty uses the cluster default."
    )
    control_image = models.CharField(
        max_length=1024,
        blank=True,
        default="",
        help_text=CONTROL_IMAGE_HELP,
    )
    quota_scheduler = models.CharField(
        max_length=6,
        choices=[(name, name) for name in QUOTA_SCHEDULERS],
        default="portal",
        help_text=(
            "Who enforces quotas on this cluster: the portal (default), KAI-Scheduler (kai) or Kueue (kueue); with "
            "kai or kueue the portal writes the quotas as that scheduler's objects."
        ),
    )
    dashboard_url = models.URLField(blank=True, default="")
    grafana_url = models.URLField(blank=True, default="")
    # -- connection
    connection = models.CharField(max_length=16, choices=Connection.choices, blank=True, default="")
    api_url = models.CharField(max_length=2048, blank=True, default="", help_text="e.g. https://api.example:6443")
    token = EncryptedTextField(blank=True, default="", help_text="Bearer token (secret, stored encrypted).")
    ca_cert = models.TextField(blank=True, default="", help_text="PEM CA bundle; empty uses the system CAs.")
    verify_tls = models.BooleanField(default=True)
    kubeconfig = EncryptedTextField(blank=True, default="", help_text="kubeconfig content (secret, stored encrypted).")
    kube_context = models.CharField(max_length=253, blank=True, default="", help_text="kubeconfig context.")
    # -- inventory sync state
    sync_status = models.CharField(max_length=16, choices=SyncStatus.choices, default=SyncStatus.NEVER)
    online = models.BooleanField(default=False)
    last_sync_at = models.DateTimeField(null=True, blank=True, help_text="Last successful full sync.")
    last_error = models.TextField(blank=True, default="")
    last_error_at = models.DateTimeField(null=True, blank=True)
    server_version = models.CharField(max_length=64, blank=True, default="")
    # -- machine pools: who provisions this cluster's machines (clusters.machinepools)
    machine_provider = models.CharField(
        max_length=16,
        choices=providers.CHOICES,
        blank=True,
        default="",
        help_text="Who provisions machine pools: ROSA (OpenShift Cluster Manager) or Karpenter; empty: none.",
    )
    ocm_url = models.CharField(
        max_length=2048,
        blank=True,
        default="",
        help_text="OpenShift Cluster Manager API, e.g. https://api.openshift.com",
    )
    ocm_cluster_id = models.CharField(max_length=64, blank=True, default="", help_text="The ROSA cluster's OCM id.")
    ocm_token = EncryptedTextField(blank=True, default="", help_text="OCM access token (secret, stored encrypted).")
    karpenter_node_class = models.CharField(
        max_length=253, blank=True, default="default", help_text="The EC2NodeClass Karpenter NodePools refer to."
    )
    rosa_topology = models.CharField(
        max_length=8,
        choices=[(name, name) for name in ROSA_TOPOLOGIES],
        default="hcp",
        help_text="ROSA only: hcp (hosted control planes, up to 500 nodes) or classic (up to 249 nodes).",
    )
    aws_region = models.CharField(
        max_length=32, blank=True, default="", help_text="The cluster's AWS region, e.g. us-east-1; empty: unknown."
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:  # never the secrets
        return f"<Backend {self.name} connection={self.connection or 'none'}>"

    # What a watcher watches: the API server it reaches and the namespace. A change means another cluster (or
    # another part of it), whose resourceVersions say nothing of the one watched before.
    WATCHED_FIELDS = (
        "connection",
        "api_url",
        "token",
        "ca_cert",
        "verify_tls",
        "kubeconfig",
        "kube_context",
        "namespace",
    )

    def watched_identity(self) -> str:
        """A digest of the fields in WATCHED_FIELDS (secrets included, never shown)."""
        values = "\x00".join(str(getattr(self, name)) for name in self.WATCHED_FIELDS)
        return hashlib.sha256(values.encode()).hexdigest()


class Node(models.Model):
    backend = models.ForeignKey(Backend, on_delete=models.CASCADE, related_name="nodes")
    name = models.CharField(max_length=253)
    labels = models.JSONField(default=dict, blank=True)
    taints = models.JSONField(default=list, blank=True)
    allocatable = models.JSONField(default=dict, blank=True, help_text="status.allocatable as reported")
    capacity = models.JSONField(default=dict, blank=True, help_text="status.capacity as reported")
    conditions = models.JSONField(default=list, blank=True)
    unschedulable = models.BooleanField(default=False, help_text="cordoned (spec.unschedulable)")
    ready = models.BooleanField(default=False)
    gpu_product = models.CharField("GPU product", max_length=128, blank=True, default="", db_index=True)
    # Summed requests of non-terminal pods bound to the node (scheduler units), portal workloads apart.
    requested_workload = models.JSONField(default=dict, blank=True)
    requested_other = models.JSONField(default=dict, blank=True)
    workload_pods = models.PositiveIntegerField(default=0)
    other_pods = models.PositiveIntegerField(default=0)
    cpu_allocatable = models.BigIntegerField(default=0, help_text="millicores")
    memory_allocatable = models.BigIntegerField(default=0, help_text="bytes")
    gpu_allocatable = models.BigIntegerField(default=0)
    storage_allocatable = models.BigIntegerField(default=0, help_text="ephemeral storage, bytes")
    cpu_used = models.BigIntegerField(default=0, help_text="millicores requested by non-terminal pods")
    memory_used = models.BigIntegerField(default=0)
    gpu_used = models.BigIntegerField(default=0)
    storage_used = models.BigIntegerField(default=0)
    # Content hash of the fields taken from the Node object: an unchanged node costs no write.
    fingerprint = models.CharField(max_length=40, blank=True, default="")
    resource_version = models.CharField(max_length=32, blank=True, default="")
    first_seen = models.DateTimeField(default=timezone.now)
    last_seen = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["backend_id", "name"]
        constraints = [models.UniqueConstraint(fields=["backend", "name"], name="unique_node_per_backend")]

    def __str__(self) -> str:
        return self.name

    @property
    def schedulable(self) -> bool:
        return self.ready and not self.unschedulable


class InstanceType(models.Model):
    """An instance type an admin added, or one of the shipped catalog's that an admin corrected (a price);
    `clusters.machinepools.instance_types.catalog()` lays these over the shipped catalog."""

    name = models.CharField(max_length=64, unique=True)
    vcpu = models.PositiveIntegerField()
    memory_mib = models.PositiveBigIntegerField(help_text="MiB")
    arch = models.CharField(max_length=16, default="amd64", choices=[("amd64", "amd64"), ("arm64", "arm64")])
    gpu_count = models.PositiveIntegerField("GPU count", default=0)
    gpu_model = models.CharField("GPU model", max_length=32, blank=True, default="", help_text="e.g. T4, A10G, H100")
    gpu_product = models.CharField(
        "GPU product", max_length=128, blank=True, default="", help_text="nvidia.com/gpu.product label, e.g. Tesla-T4"
    )
    gpu_memory_mib = models.PositiveIntegerField("GPU memory (MiB)", default=0)
    hourly_price = models.DecimalField(
        max_digits=10, decimal_places=4, null=True, blank=True, help_text="On-demand USD per hour; empty: not sold"
    )
    spot_hourly_price = models.DecimalField(
        max_digits=10,
        decimal_places=4,
        null=True,
        blank=True,
        help_text="Spot USD per hour, as you pay it (empty: usage cost estimates it; docs/usage.md#cost)",
    )
    note = models.CharField(max_length=255, blank=True, default="", help_text="Where the figures come from.")
    prices_as_of = models.DateField(
        null=True, blank=True, help_text="When the prices were read from their source (shown with every cost)."
    )

    class Meta:
        ordering = ["name"]
        constraints = [  # every door: a price is positive, at most MAX_HOURLY_PRICE, spot never above on-demand
            models.CheckConstraint(
                condition=models.Q(hourly_price__isnull=True) | models.Q(hourly_price__gt=0, hourly_price__lte=1000),
                name="instance_type_price_in_range",
            ),
            models.CheckConstraint(
                condition=models.Q(spot_hourly_price__isnull=True)
                | models.Q(spot_hourly_price__gt=0, spot_hourly_price__lte=1000),
                name="instance_type_spot_price_in_range",
            ),
            models.CheckConstraint(
                condition=models.Q(hourly_price__isnull=True)
                | models.Q(spot_hourly_price__isnull=True)
                | models.Q(spot_hourly_price__lte=models.F("hourly_price")),
                name="instance_type_spot_at_most_on_demand",
            ),
        ]

    def __str__(self) -> str:
        return self.name


class MachinePool(models.Model):
    """The machines beneath a backend's nodes: an instance type, fixed replicas or autoscaling min/max,
    node labels and taints, spot or on-demand (seed 004, ROSA machine pools). The portal reconciles it to
    the backend's provider; the status fields are what the provider last answered."""

    class State(models.TextChoices):
        PENDING = "pending", "pending (not yet reconciled)"
        READY = "ready", "ready"
        SCALING = "scaling", "scaling"
        DRIFTED = "drifted", "drifted (provider differs)"
        RETRYING = "retrying", "retrying (provider unavailable)"
        FAILED = "failed", "failed (provider refused)"
        EXPORT_ONLY = "export-only", "export only (no provider)"

    backend = models.ForeignKey(Backend, on_delete=models.PROTECT, related_name="machine_pools")
    name = models.CharField(max_length=63, unique=True)
    description = models.TextField(blank=True, default="")
    instance_type = models.CharField(max_length=64)
    autoscaling = models.BooleanField(default=True)
    replicas = models.PositiveIntegerField(default=0, help_text="Node count when not autoscaling.")
    min_replicas = models.PositiveIntegerField(default=0, help_text="0 = scale to zero.")
    max_replicas = models.PositiveIntegerField(default=0)
    labels = models.JSONField(default=dict, blank=True)
    taints = models.JSONField(default=list, blank=True, help_text="[{key, value, effect}]")
    spot = models.BooleanField(default=False)
    max_price = models.DecimalField(
        max_digits=10, decimal_places=4, null=True, blank=True, help_text="Spot only; empty = on-demand price cap."
    )
    disk_size_gib = models.PositiveIntegerField(default=300, help_text="Root volume, GiB.")
    # -- placement and provider-specific settings (clusters.machinepools.provider_limits)
    availability_zones = models.JSONField(
        default=list, blank=True, help_text='e.g. ["us-east-1a"]; empty: the cluster\'s'
    )
    subnets = models.JSONField(default=list, blank=True, help_text="ROSA: one subnet id; empty: the cluster's")
    security_groups = models.JSONField(default=list, blank=True, help_text="ROSA: additional security group ids")
    aws_tags = models.JSONField(default=dict, blank=True, help_text="ROSA: AWS tags on the pool's instances")
    requirements = models.JSONField(default=list, blank=True, help_text="Karpenter: further NodePool requirements")
    limits = models.JSONField(default=dict, blank=True, help_text="Karpenter: cpu, memory, nvidia.com/gpu limits")
    disruption = models.JSONField(default=dict, blank=True, help_text="Karpenter: consolidation and budgets")
    # -- status: what the provider last answered
    state = models.CharField(max_length=16, choices=State.choices, default=State.PENDING)
    provider_id = models.CharField(max_length=253, blank=True, default="")
    nodes_now = models.PositiveIntegerField(default=0)
    nodes_ready = models.PositiveIntegerField(default=0)
    last_answer = models.TextField(blank=True, default="", help_text="The provider's last answer, in its words.")
    last_answer_at = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveIntegerField(default=0, help_text="Failed reconcile attempts in a row.")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["backend_id", "name"]

    def __str__(self) -> str:
        return self.name

    def spec(self):
        """The pure description the providers, exports and previews read."""
        from clusters.machinepools.spec import MachinePoolSpec, Taint

        return MachinePoolSpec(
            name=self.name,
            instance_type=self.instance_type,
            autoscaling=self.autoscaling,
            replicas=self.replicas,
            min_replicas=self.min_replicas,
            max_replicas=self.max_replicas,
            labels=dict(self.labels),
            taints=tuple(Taint(t["key"], t.get("value", ""), t["effect"]) for t in self.taints),
            spot=self.spot,
            max_price=self.max_price,
            disk_size_gib=self.disk_size_gib,
            availability_zones=tuple(self.availability_zones),
            subnets=tuple(self.subnets),
            security_groups=tuple(self.security_groups),
            aws_tags=dict(self.aws_tags),
            requirements=tuple(dict(r) for r in self.requirements),
            limits=dict(self.limits),
            disruption=dict(self.disruption),
        )


class WatcherHeartbeat(models.Model):
    """A watcher's sign of life for one backend (clusters.heartbeat), refreshed by its loop.

    Written only by the watcher that watches the backend (one row per watcher and backend); read by the
    watchers' probe (`manage.py watcher_health`) and `/metrics`.
    """

    watcher = models.CharField(max_length=32, help_text="the command: watch_cluster or watch_workflows")
    backend = models.ForeignKey(Backend, on_delete=models.CASCADE, related_name="heartbeats")
    beat_at = models.DateTimeField(help_text="the loop last ran with the backend's watch threads alive")
    lag_seconds = models.FloatField(
        default=0.0, help_text="longest wait, over the last beat period, from an event read to its write committed"
    )
    last_event_at = models.DateTimeField(null=True, blank=True, help_text="last event applied (since the start)")
    events = models.BigIntegerField(default=0, help_text="events applied since the watcher started")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["watcher", "backend"], name="one_heartbeat_per_watcher")]

    def __str__(self) -> str:
        return f"{self.watcher} {self.backend_id}"


class WatcherReplica(models.Model):
    """One running watcher process that takes leases (clusters.leases): its sign of life.

    Live replicas (`expires_at` ahead of the database's clock) are what a fair share is counted over. The
    name is the replica's (the pod's name by default); a process that starts under a name already live
    takes the name over (a new `nonce`), and the older process stops at its next beat.
    """

    watcher = models.CharField(max_length=32, help_text="the command: watch_cluster or watch_workflows")
    name = models.CharField(max_length=253, help_text="the replica's name (--replica; the host name by default)")
    nonce = models.CharField(max_length=32, help_text="the process that holds the name now")
    host = models.CharField(max_length=253, blank=True, default="")
    pid = models.PositiveIntegerField(default=0)
    started_at = models.DateTimeField(default=timezone.now)
    beat_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField(help_text="counted as live until then (database clock)")

    class Meta:
        ordering = ["watcher", "name"]
        constraints = [models.UniqueConstraint(fields=["watcher", "name"], name="one_replica_per_name")]

    def __str__(self) -> str:
        return f"{self.watcher} {self.name}"


class WatcherLease(models.Model):
    """Which replica of a watcher acts on a backend (clusters.leases): one row per watcher and backend.

    Taken and kept by conditional UPDATEs only (so it works alike on PostgreSQL and SQLite). `token` grows
    by one at every acquisition: the fence every write of the holder checks, with the holder and the
    expiry, in the write's own transaction; `versions` is the last resourceVersion applied per stream,
    written in that same transaction, from which the next holder resumes.
    """

    watcher = models.CharField(max_length=32, help_text="the command: watch_cluster or watch_workflows")
    backend = models.ForeignKey(Backend, on_delete=models.CASCADE, related_name="watcher_leases")
    holder = models.CharField(max_length=253, blank=True, default="", help_text="replica name; empty: free")
    token = models.BigIntegerField(default=0, help_text="fencing token: one more at every acquisition")
    acquired_at = models.DateTimeField(null=True, blank=True)
    renewed_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True, help_text="free for another replica from then on")
    versions = models.JSONField(default=dict, blank=True, help_text="last resourceVersion applied, per stream")
    applied_at = models.DateTimeField(null=True, blank=True, help_text="last write under the lease")

    class Meta:
        ordering = ["watcher", "backend_id"]
        constraints = [models.UniqueConstraint(fields=["watcher", "backend"], name="one_lease_per_watcher")]

    def __str__(self) -> str:
        return f"{self.watcher} {self.backend_id} → {self.holder or 'free'}"
