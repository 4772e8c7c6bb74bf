"""Which pools and platforms each node of the inventory (`clusters.models.Node`) belongs to.

Written only by `pools.services.membership` (on config changes, and on `clusters.signals.nodes_changed`
when the inventory changes).
"""

from __future__ import annotations

from django.db import models

from clusters.models import Node
from pools.models.config import Platform, Pool


class ResourceType(models.TextChoices):
    """OSMO's node classification (NVIDIA/OSMO's `src/service/core/config/helpers.py:update_node_pool_platform`):
    how many distinct pools a node serves."""

    SHARED = "SHARED", "shared (several pools)"
    RESERVED = "RESERVED", "reserved (one pool)"
    UNUSED = "UNUSED", "unused (no pool)"


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


class CapacitySummary(models.Model):
    """One pool's capacity as the catalog shows it, summed by `pools.services.capacity_summary.refresh` (a
    periodic job, `CAPACITY_SUMMARY_SECONDS`): read by key instead of summed over every node per request."""

    pool = models.OneToOneField(Pool, on_delete=models.CASCADE, primary_key=True, related_name="capacity_summary")
    figures = models.JSONField()  # pools.services.capacity.Figures.as_dict(): each member node once
    platforms = models.JSONField()  # str(platform id) → {"figures": Figures.as_dict(), "products": [GPU product]}
    # its machine pools now and at maximum, as the catalog prints them: machine_pool_capacity.PoolGrowthLines.as_dict()
    growth = models.JSONField(default=dict)
    computed_at = models.DateTimeField()  # when the sums were started: the figures are at least this fresh

    def __str__(self) -> str:
        return f"capacity of pool {self.pool_id} at {self.computed_at:%Y-%m-%d %H:%M:%S}"
