"""The clusters pools run on (`Backend`) and their node inventory (`Node`).

Written only by `clusters.inventory` (sync and watch) and the backend config writes. Plain fields only
(JSON, integers), so SQLite works for the embedded default.

Node capacity columns hold scheduler units (cpu in millicores, memory and ephemeral storage in bytes, GPUs
in devices) so capacity sums need no quantity parsing; the JSON fields keep what the API reported.
Which platforms a node serves (membership) is the pools app's: `Platform.nodes`, `node.platforms`.

The tables kept their rows when these models moved here from `pools` (see migrations/0001_initial.py).
"""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from clusters.config_types import BACKEND
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
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:  # never the secrets
        return f"<Backend {self.name} connection={self.connection or 'none'}>"


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
    gpu_product = models.CharField(max_length=128, blank=True, default="", db_index=True)
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


# Described fields the model above does not declare get their columns from the description.
BACKEND.add_columns(Backend)


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
