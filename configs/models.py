"""History of every configuration write, whatever door it came through.

Each revision is a full snapshot of one object in its OSMO JSON shape, numbered per (type, name):
`pool robotics-training r3`. A deletion is a revision with `deleted=True`; a rollback writes a new
revision whose snapshot equals the chosen one.

Every write is also one `Change` of its config type, numbered per type as OSMO numbers its config history
(`POOL:7`): the object revisions it wrote point at it, so the whole type as it was at change 7 is, for each
name, its latest object revision of a change numbered 7 or less (configs.changes).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from portal.resources import PolicyResources, Scope


class ConfigType(models.TextChoices):
    POOL = "POOL", "Pool"
    POD_TEMPLATE = "POD_TEMPLATE", "Pod template"
    RESOURCE_VALIDATION = "RESOURCE_VALIDATION", "Resource validation"
    BACKEND = "BACKEND", "Backend"
    ROLE = "ROLE", "Role"
    NODE_POOL = "NODE_POOL", "Node pool"
    MACHINE_POOL = "MACHINE_POOL", "Machine pool"


class Change(models.Model):
    """One write of a config type (one object, several at once, a rollback), numbered per type."""

    config_type = models.CharField(max_length=32, choices=ConfigType.choices)
    revision = models.PositiveIntegerField()
    name = models.CharField(max_length=128, blank=True, default="")  # "" = several objects / the whole type
    author = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    username = models.CharField(max_length=150, blank=True, default="")
    source = models.CharField(max_length=16, blank=True, default="")
    description = models.TextField(blank=True, default="")
    tags = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    # OSMO's `config delete TYPE:N` hides a past revision from the history; its objects' rows stay
    deleted_at = models.DateTimeField(null=True, blank=True)
    deleted_by = models.CharField(max_length=150, blank=True, default="")

    policy_resources = PolicyResources(Scope("config", field="config_type", lower=True))

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["config_type", "revision"], name="unique_change_number"),
        ]

    def __str__(self) -> str:
        return f"{self.config_type}:{self.revision}"


class Revision(models.Model):
    config_type = models.CharField(max_length=32, choices=ConfigType.choices)
    name = models.CharField(max_length=128)
    revision = models.PositiveIntegerField()
    snapshot = models.JSONField(null=True, blank=True)
    deleted = models.BooleanField(default=False)
    author = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    author_name = models.CharField(max_length=150, blank=True, default="")
    description = models.TextField(blank=True, default="")
    tags = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    change = models.ForeignKey(Change, on_delete=models.PROTECT, related_name="revisions")

    # a revision of a POOL is `config/pool` to the policy (access.policy.restrict filters the history)
    policy_resources = PolicyResources(Scope("config", field="config_type", lower=True))

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["config_type", "name", "revision"], name="unique_revision_number"),
        ]
        indexes = [models.Index(fields=["config_type", "name", "-revision"], name="pools_revis_config__5dad4f_idx")]
        db_table = "pools_revision"  # the table predates this app (moved from pools without copying rows)

    def __str__(self) -> str:
        return f"{self.config_type} {self.name} r{self.revision}"
