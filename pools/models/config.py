"""Configuration objects, shaped after OSMO's (NVIDIA/OSMO's `src/utils/connectors/postgres.py`: `Pool`,
`Platform`, `PodTemplate`, `ResourceAssertion`).

Template and validation lists are ordered references (through models with a `position`), because order
is meaning: templates merge in order, validations concatenate in order. References use PROTECT so the
database itself refuses to drop an object that is still referenced.
"""

from __future__ import annotations

from django.db import models

from clusters.models import Backend
from portal.resources import PolicyResources, Scope


class PodTemplate(models.Model):
    """A partial Pod manifest with `{{VARIABLE}}` placeholders, merged in order into a platform's pod."""

    name = models.CharField(max_length=128, unique=True)
    body = models.JSONField(default=dict)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class ResourceValidation(models.Model):
    """A named list of rules such as `USER_GPU LE K8_GPU`."""

    name = models.CharField(max_length=128, unique=True)
    rules = models.JSONField(default=list)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Pool(models.Model):
    name = models.CharField(max_length=128, unique=True)
    description = models.TextField(blank=True, default="")
    backend = models.ForeignKey(Backend, on_delete=models.PROTECT, related_name="pools")
    default_platform = models.CharField(max_length=128, blank=True, default="")
    download_type = models.CharField(max_length=32, blank=True, default="")
    default_exec_timeout = models.CharField(max_length=32, blank=True, default="")
    default_queue_timeout = models.CharField(max_length=32, blank=True, default="")
    max_exec_timeout = models.CharField(max_length=32, blank=True, default="")
    max_queue_timeout = models.CharField(max_length=32, blank=True, default="")
    default_exit_actions = models.JSONField(default=dict, blank=True)
    gpu_guarantee = models.IntegerField(null=True, blank=True, help_text="-1 = no guarantee")
    gpu_maximum = models.IntegerField(null=True, blank=True, help_text="-1 = unlimited")
    gpu_weight = models.IntegerField(null=True, blank=True)
    enable_maintenance = models.BooleanField(default=False)
    common_default_variables = models.JSONField(default=dict, blank=True)
    topology_keys = models.JSONField(default=list, blank=True)
    templates = models.ManyToManyField(PodTemplate, through="PoolTemplate", related_name="pools")
    validations = models.ManyToManyField(ResourceValidation, through="PoolValidation", related_name="pools")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    # a pool is `pool/<name>` to workflow and pool actions, `config/pool` to config actions (access.policy)
    policy_resources = PolicyResources(Scope("pool", field="name", lists=True), Scope("config", fixed="pool"))

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @property
    def status(self) -> str:
        """OSMO's pool status: MAINTENANCE if set; OFFLINE when its cluster's last inventory sync failed."""
        if self.enable_maintenance:
            return "MAINTENANCE"
        return "OFFLINE" if self.backend.sync_status == Backend.SyncStatus.DEGRADED else "ONLINE"


class Platform(models.Model):
    """Hardware-specific settings inside a pool."""

    pool = models.ForeignKey(Pool, on_delete=models.CASCADE, related_name="platforms")
    name = models.CharField(max_length=128)
    description = models.TextField(blank=True, default="")
    host_network_allowed = models.BooleanField(default=False)
    privileged_allowed = models.BooleanField(default=False)
    default_variables = models.JSONField(default=dict, blank=True)
    allowed_mounts = models.JSONField(default=list, blank=True)
    templates = models.ManyToManyField(PodTemplate, through="PlatformTemplate", related_name="platforms")
    validations = models.ManyToManyField(ResourceValidation, through="PlatformValidation", related_name="platforms")
    # The inventory's nodes this platform's pods can be placed on (`pools.services.membership`).
    nodes = models.ManyToManyField("clusters.Node", through="NodeMembership", related_name="platforms")
    # The merged template and rule list, computed when config is saved (never per submission).
    compiled = models.JSONField(default=dict, blank=True, editable=False)

    policy_resources = PolicyResources(Scope("config", fixed="pool"))  # part of its pool's config

    class Meta:
        ordering = ["pool__name", "name"]
        constraints = [models.UniqueConstraint(fields=["pool", "name"], name="unique_platform_name_per_pool")]

    def __str__(self) -> str:
        return f"{self.pool.name}/{self.name}" if self.pool_id else self.name


class _OrderedReference(models.Model):
    position = models.PositiveIntegerField(default=0)

    class Meta:
        abstract = True
        ordering = ["position", "id"]


class PoolTemplate(_OrderedReference):
    pool = models.ForeignKey(Pool, on_delete=models.CASCADE, related_name="template_refs")
    template = models.ForeignKey(PodTemplate, on_delete=models.PROTECT, related_name="pool_refs")

    class Meta(_OrderedReference.Meta):
        verbose_name = "common pod template"

    def __str__(self) -> str:
        return f"{self.position}: {self.template_id}"


class PoolValidation(_OrderedReference):
    pool = models.ForeignKey(Pool, on_delete=models.CASCADE, related_name="validation_refs")
    validation = models.ForeignKey(ResourceValidation, on_delete=models.PROTECT, related_name="pool_refs")

    class Meta(_OrderedReference.Meta):
        verbose_name = "common resource validation"

    def __str__(self) -> str:
        return f"{self.position}: {self.validation_id}"


class PlatformTemplate(_OrderedReference):
    platform = models.ForeignKey(Platform, on_delete=models.CASCADE, related_name="template_refs")
    template = models.ForeignKey(PodTemplate, on_delete=models.PROTECT, related_name="platform_refs")

    class Meta(_OrderedReference.Meta):
        verbose_name = "override pod template"

    def __str__(self) -> str:
        return f"{self.position}: {self.template_id}"


class PlatformValidation(_OrderedReference):
    platform = models.ForeignKey(Platform, on_delete=models.CASCADE, related_name="validation_refs")
    validation = models.ForeignKey(ResourceValidation, on_delete=models.PROTECT, related_name="platform_refs")

    class Meta(_OrderedReference.Meta):
        verbose_name = "platform resource validation"

    def __str__(self) -> str:
        return f"{self.position}: {self.validation_id}"
