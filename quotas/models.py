"""Node pools and team quotas, as Run:ai has them (docs/quotas.md).

A `NodePool` is a set of nodes of one backend, chosen by a label (key = value) or by an OSMO platform's
membership; the backend's Default node pool (`<backend>-default`) holds every node no other node pool
claims. `NodePoolMember` says which node pool each node is in: exactly one, so no node is counted twice
(quotas.services.membership). A `Quota` is one (node pool, department or project, resource) row:
deserved (guaranteed), limit (hard cap, None = none), over-quota weight and whether its unused deserved is
lent to others (`lend`, "never lend" when False). Units: gpu = devices,
cpu = millicores, memory = bytes (the inventory's scheduler units).

Every row is written through the NODE_POOL config type (quotas.config_types), so every change has a
revision; only the zero rows that follow a new project or department are written directly (they change
no document: a zero quota is what an absent entry means).
"""

from __future__ import annotations

from django.db import models

from clusters.models import Backend, Node
from clusters.schedulers.routing import DEFAULT_NODE_POOL_SUFFIX
from portal.resources import PolicyResources, Scope
from teams.models import Department, Project

DEFAULT_SUFFIX = DEFAULT_NODE_POOL_SUFFIX  # pod routing finds the Default by name (clusters.schedulers)


class Resource(models.TextChoices):
    GPU = "gpu", "GPU (devices)"
    CPU = "cpu", "CPU (millicores)"
    MEMORY = "memory", "memory (bytes)"


RESOURCES = tuple(Resource.values)  # the order documents and tables show them in


class SelectorKind(models.TextChoices):
    DEFAULT = "default", "Default (every node no other node pool claims)"
    LABEL = "label", "node label"
    PLATFORM = "platform", "OSMO platform membership"


def default_name(backend_name: str) -> str:
    """The name of a backend's Default node pool."""
    return f"{backend_name}{DEFAULT_SUFFIX}"


def _protect_unless_default(collector, field, sub_objs, using):
    """A backend's Default node pool goes with the backend; any other node pool keeps it from being deleted."""
    defaults = [pool for pool in sub_objs if pool.selector_kind == SelectorKind.DEFAULT]
    others = [pool for pool in sub_objs if pool.selector_kind != SelectorKind.DEFAULT]
    if others:
        models.PROTECT(collector, field, others, using)
    if defaults:
        models.CASCADE(collector, field, defaults, using)


class NodePool(models.Model):
    # `config/node_pool` to the config actions: quota writes need config:Update on it (quotas.services.quotas)
    policy_resources = PolicyResources(Scope("config", fixed="node_pool"))

    name = models.CharField(max_length=128, unique=True)
    backend = models.ForeignKey(Backend, on_delete=_protect_unless_default, related_name="node_pools")
    selector_kind = models.CharField(max_length=8, choices=SelectorKind.choices, default=SelectorKind.DEFAULT)
    label_key = models.CharField(max_length=317, blank=True, default="")  # prefix (253) + "/" + name (63)
    label_value = models.CharField(max_length=63, blank=True, default="")
    pool_name = models.CharField(max_length=128, blank=True, default="")  # an OSMO pool of the same backend
    platform_name = models.CharField(max_length=128, blank=True, default="")  # one of that pool's platforms
    over_quota = models.BooleanField(default=True, help_text="Projects may borrow idle capacity beyond deserved.")
    # Null: the settings' QUOTA_ADMISSION_SECONDS / QUOTA_MIN_RUNTIME_SECONDS (bounds: quotas.config_types).
    admission_seconds = models.PositiveIntegerField(
        null=True, blank=True, help_text="Seconds between periodic admission passes; empty: the settings' default."
    )
    min_runtime_seconds = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="Reclaim spares workflows admitted more recently; empty: the settings' default.",
    )
    # Time-based fair share (NODE_POOL `time_based_fair_share`, bounds: quotas.config_types): all null = off.
    fair_share_window_days = models.PositiveSmallIntegerField(
        null=True, blank=True, help_text="Days of past usage that move the over-quota split; empty: off."
    )
    fair_share_half_life_hours = models.PositiveIntegerField(
        null=True, blank=True, help_text="Usage this many hours old counts half; empty: no decay."
    )
    fair_share_k = models.DecimalField(
        max_digits=4, decimal_places=2, null=True, blank=True, help_text="How strongly past usage moves the weights."
    )
    description = models.TextField(blank=True, default="")
    nodes = models.ManyToManyField(Node, through="NodePoolMember", related_name="node_pools")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            # one Default per backend
            models.UniqueConstraint(
                fields=["backend"], condition=models.Q(selector_kind="default"), name="one_default_node_pool"
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def is_default(self) -> bool:
        return self.selector_kind == SelectorKind.DEFAULT

    @property
    def time_based_fair_share(self) -> bool:
        """Past usage moves this node pool's over-quota split (the block is set)."""
        return self.fair_share_window_days is not None


class AdmissionPass(models.Model):
    """When a node pool's last admission pass ran (the periodic pass visits it once its period has elapsed).
    A row of its own, not a NodePool column: a pass every few seconds must not move the config generation."""

    node_pool = models.OneToOneField(NodePool, on_delete=models.CASCADE, primary_key=True, related_name="last_pass")
    at = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.node_pool_id} at {self.at:%Y-%m-%d %H:%M:%S}"


class NodePoolMember(models.Model):
    """The node pool a node is in: one per node (quotas.services.membership keeps it current)."""

    node_pool = models.ForeignKey(NodePool, on_delete=models.CASCADE, related_name="members")
    node = models.OneToOneField(Node, on_delete=models.CASCADE, related_name="node_pool_member")

    def __str__(self) -> str:
        return f"{self.node_id} in {self.node_pool_id}"


class Quota(models.Model):
    """One team's quota of one resource in one node pool; exactly one of department and project is set."""

    node_pool = models.ForeignKey(NodePool, on_delete=models.CASCADE, related_name="quotas")
    department = models.ForeignKey(Department, on_delete=models.CASCADE, null=True, blank=True, related_name="quotas")
    project = models.ForeignKey(Project, on_delete=models.CASCADE, null=True, blank=True, related_name="quotas")
    resource = models.CharField(max_length=8, choices=Resource.choices)
    deserved = models.BigIntegerField(default=0, help_text="guaranteed; gpu devices, cpu millicores, memory bytes")
    limit = models.BigIntegerField(null=True, blank=True, help_text="hard cap (≥ deserved); empty = none")
    weight = models.PositiveIntegerField(default=1, help_text="share of the over-quota surplus")
    lend = models.BooleanField(
        default=True,
        help_text="lend unused deserved to other teams (off: kept idle for this team; Kueue lendingLimit 0)",
    )

    class Meta:
        ordering = ["node_pool_id", "department_id", "project_id", "resource"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(department__isnull=False, project__isnull=True)
                | models.Q(department__isnull=True, project__isnull=False),
                name="quota_one_team",
            ),
            models.CheckConstraint(condition=models.Q(deserved__gte=0), name="quota_deserved_not_negative"),
            models.CheckConstraint(
                condition=models.Q(limit__isnull=True) | models.Q(limit__gte=models.F("deserved")),
                name="quota_limit_covers_deserved",
            ),
            models.UniqueConstraint(
                fields=["node_pool", "department", "resource"],
                condition=models.Q(department__isnull=False),
                name="unique_department_quota",
            ),
            models.UniqueConstraint(
                fields=["node_pool", "project", "resource"],
                condition=models.Q(project__isnull=False),
                name="unique_project_quota",
            ),
        ]

    def __str__(self) -> str:
        team = f"department {self.department_id}" if self.department_id else f"project {self.project_id}"
        return f"{team} {self.resource} in {self.node_pool_id}"

    @property
    def is_zero(self) -> bool:
        """What an absent document entry means: nothing guaranteed, no cap, weight 1, lent when unused."""
        return self.deserved == 0 and self.limit is None and self.weight == 1 and self.lend
