"""Identity and authorization records, after OSMO's (NVIDIA/OSMO: `src/lib/utils/role.py`, `postgres.py:Role`).

A `Role` wraps a Django `Group` of the same name: a user holds a role by being in its group, so Django's
own user/group admin and `user.groups` keep working. What a role allows is only in its `policies`,
evaluated by `access.policy` (the single decision point), never by Django model permissions.
"""

from __future__ import annotations

from axes.models import AccessAttempt
from django.conf import settings
from django.contrib.auth.models import Group
from django.db import models

from portal.resources import PolicyResources, Scope
from portal.secrets import EncryptedTextField


class SyncMode(models.TextChoices):
    IMPORT = "import", "import (IdP adds, never removes)"
    FORCE = "force", "force (IdP adds and removes)"
    IGNORE = "ignore", "ignore (IdP never touches it)"


class Role(models.Model):
    group = models.OneToOneField(Group, on_delete=models.CASCADE, related_name="role")
    name = models.CharField(max_length=150, unique=True)
    description = models.TextField(blank=True, default="")
    # OSMO 6.2 semantic policies:
    # [{"effect": "Allow"|"Deny", "actions": ["workflow:Create"], "resources": ["pool/team*"]}]
    policies = models.JSONField(default=list, blank=True)
    immutable = models.BooleanField(default=False)
    sync_mode = models.CharField(max_length=8, choices=SyncMode.choices, default=SyncMode.IMPORT)
    # IdP group / realm-role names that grant this role at login (besides the role's own name).
    external_roles = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Identity(models.Model):
    """Links a portal user to an OIDC subject. Users are matched on (issuer, sub), never on email."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="identity")
    issuer = models.CharField(max_length=500)
    subject = models.CharField(max_length=255)
    created_at = models.DateTimeField(auto_now_add=True)
    last_login_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["issuer", "subject"], name="unique_oidc_subject")]

    def __str__(self) -> str:
        return f"{self.subject} @ {self.issuer}"


class APIToken(models.Model):
    """A personal API token: stored hashed, expiring, carrying a subset of its owner's roles."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=128)
    description = models.TextField(blank=True, default="")
    token_hash = models.CharField(max_length=64, unique=True)  # sha256 hex of the secret
    prefix = models.CharField(max_length=16)  # first characters, to recognise a token in lists
    roles = models.ManyToManyField(Role, blank=True, related_name="tokens")
    expires_at = models.DateTimeField()
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [models.UniqueConstraint(fields=["user", "name"], name="unique_token_name_per_user")]
        verbose_name, verbose_name_plural = "API token", "API tokens"  # not Django's "Api tokens"

    def __str__(self) -> str:
        return f"{self.user} / {self.name}"


class CredentialType(models.TextChoices):
    REGISTRY = "REGISTRY"
    DATA = "DATA"
    GENERIC = "GENERIC"


class Credential(models.Model):
    """A user's secret, in OSMO's three types (`osmo credential set`; docs/credentials.md).

    `payload` holds the secret key/value pairs as JSON, encrypted with the field-encryption keys; `keys` their
    names in the clear (the list shows them); `profile` OSMO's: a REGISTRY credential's registry host, a DATA
    credential's endpoint, empty for GENERIC."""

    policy_resources = PolicyResources(Scope("credentials", field="user__username"))

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="credentials")
    name = models.CharField(max_length=63)
    cred_type = models.CharField(max_length=16, choices=CredentialType.choices)
    profile = models.CharField(max_length=253, blank=True, default="")
    keys = models.JSONField(default=list)
    payload = EncryptedTextField()
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["user", "name"]
        constraints = [models.UniqueConstraint(fields=["user", "name"], name="unique_credential_name_per_user")]

    def __str__(self) -> str:
        return f"{self.user} / {self.name} ({self.cred_type})"


class AuditEvent(models.Model):
    """Who did what, when, from where: config writes, role changes, tokens, denied requests."""

    at = models.DateTimeField(auto_now_add=True, db_index=True)
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    actor_name = models.CharField(max_length=150, blank=True, default="")
    action = models.CharField(max_length=64, db_index=True)  # e.g. config.update, role.change, token.create
    target = models.CharField(max_length=300, blank=True, default="")
    outcome = models.CharField(max_length=16, default="ok")  # ok | denied | error
    source = models.CharField(max_length=16, blank=True, default="")  # cli | api | admin | page | oidc
    remote_addr = models.GenericIPAddressField(null=True, blank=True)
    detail = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-at", "-id"]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M:%S} {self.actor_name} {self.action} {self.target} ({self.outcome})"


class AccessEpoch(models.Model):
    """One row whose `value` changes with anything that decides access (see access.epoch)."""

    value = models.BigIntegerField()

    class Meta:
        verbose_name = "access epoch"

    def __str__(self) -> str:
        return f"access epoch {self.value}"


class LoginAttempt(AccessAttempt):
    """django-axes' record of failed password sign-ins (access/throttle.py), shown in the admin under Access as
    "Login attempts" rather than under the library's name ("Axes › Access attempts"). A proxy: no table."""

    class Meta:
        proxy = True
        verbose_name, verbose_name_plural = "login attempt", "login attempts"
