"""Node inventory of each backend, and which pools and platforms each node belongs to.

Written only by `pools.services.inventory` (sync and watch) and `pools.services.membership`. Plain
fields only (JSON, integers), so SQLite works for the embedded default.

Capacity columns hold scheduler units (cpu in millicores, memory and ephemeral storage in bytes, GPUs
in devices) so capacity sums need no quantity parsing; the JSON fields keep what the API reported.
"""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from pools.models.config import Backend, Platform, Pool

# resource name -> column suffix
CAPACITY_COLUMNS = {"cpu": "cpu", "memory": "memory", "nvidia.com/gpu": "gpu", "ephemeral-storage": "storage"}


class ResourceType(models.TextChoices):
    """OSMO's node classification (osmo-reference §6.2): how many distinct pools a node serves."""

    SHARED = "SHARED", "shared (several pools)"
    RESERVED = "RESERVED", "reserved (one pool)"
    UNUSED = "UNUSED", "unused (no pool)"


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
    platforms = models.ManyToManyField(Platform, through="NodeMembership", related_name="nodes")

    class Meta:
        ordering = ["backend_id", "name"]
        constraints = [models.UniqueConstraint(fields=["backend", "name"], name="unique_node_per_backend")]

    def __str__(self) -> str:
        return self.name

    @property
    def schedulable(self) -> bool:
        return self.ready and not self.unschedulable


class NodeMembership(models.Model):
    """Node `node` can take the pods of `platform` (of `pool`): derived by the placement engine, cached."""

    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="memberships")
    platform = models.ForeignKey(Platform, on_delete=models.CASCADE, related_name="memberships")
    pool = models.ForeignKey(Pool, on_delete=models.CASCADE, related_name="node_memberships")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["node", "platform"], name="unique_node_platform")]
        indexes = [models.Index(fields=["pool", "platform"])]

    def __str__(self) -> str:
        return f"{self.node_id} in {self.platform_id}"


class PoolCapacity(Pool):
    """The pool list as capacity figures (an admin changelist); no table of its own."""

    class Meta:
        proxy = True
        verbose_name = "pool capacity"
        verbose_name_plural = "pool capacity"
