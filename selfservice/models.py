"""Requests researchers make and admins decide: access to an existing pool, or a new pool for a team.

A request is decided once (approved or denied, with a comment); what approval did (the role granted,
the pool created) is recorded on the request so the requester sees it, and in the audit trail.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from access import actions
from portal.resources import PolicyResources, Scope


class RequestStatus(models.TextChoices):
    PENDING = "PENDING", "pending"
    APPROVED = "APPROVED", "approved"
    DENIED = "DENIED", "denied"
    WITHDRAWN = "WITHDRAWN", "withdrawn"


class _Request(models.Model):
    requester = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    status = models.CharField(
        max_length=16, choices=RequestStatus.choices, default=RequestStatus.PENDING, db_index=True
    )
    created_at = models.DateTimeField(auto_now_add=True)
    decided_at = models.DateTimeField(null=True, blank=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    comment = models.TextField(blank=True, default="", help_text="The decision's reason, shown to the requester.")
    granted_role = models.CharField(max_length=150, blank=True, default="")

    # the request queues are `config/request` to the policy; requesters read their own requests
    policy_resources = PolicyResources(
        Scope("config", fixed="request"), owner="requester", owner_actions=(actions.CONFIG_READ,)
    )

    class Meta:
        abstract = True
        ordering = ["-created_at", "-id"]

    @property
    def is_pending(self) -> bool:
        return self.status == RequestStatus.PENDING


class AccessRequest(_Request):
    """ "Let me submit to pool X": approval grants the role that allows `workflow:Create` on the pool."""

    pool = models.ForeignKey("pools.Pool", on_delete=models.CASCADE, related_name="access_requests")
    justification = models.TextField()

    class Meta(_Request.Meta):
        constraints = [
            models.UniqueConstraint(
                fields=["requester", "pool"],
                condition=models.Q(status="PENDING"),
                name="one_pending_access_request_per_pool",
            )
        ]

    def __str__(self) -> str:
        return f"{self.requester} → {self.pool} ({self.get_status_display()})"


class PoolRequest(_Request):
    """ "My team needs a pool": approval creates the pool from a template platform of the chosen hardware,
    with its role granted to the requester."""

    team = models.CharField(max_length=40, help_text="Team name; the pool is named after it, e.g. vision-h100.")
    hardware = models.CharField(max_length=128, help_text="GPU product (node label nvidia.com/gpu.product) or 'cpu'.")
    gpus = models.PositiveIntegerField(default=0, help_text="GPUs the team needs at most (pool gpu maximum).")
    purpose = models.TextField()
    pool_name = models.CharField(
        max_length=128,
        blank=True,
        default="",
        help_text="The pool to create (proposed from team and hardware; the admin may change it).",
    )
    template = models.CharField(
        max_length=260, blank=True, default="", help_text="The pool/platform whose configuration the new pool copies."
    )
    created_pool = models.CharField(max_length=128, blank=True, default="")

    def __str__(self) -> str:
        return f"{self.team}: {self.hardware} × {self.gpus} ({self.get_status_display()})"
