"""Teams as first-class objects, after Run:ai's organisation units: a `Department` groups `Project`s.

A project *is* a team in OSMO's sense: its members are the holders of its role `osmo-<project>`
(NVIDIA/OSMO's `src/cli/config.py:create_role`; docs/access.md), and the identity-provider groups that
grant that role at sign-in are the role's own name plus its `external_roles` (access.models.Role). Both stay
on the role, where the IdP sync and the policy read them; a project only points at its role, so nothing is
stored twice.

Workflows record the project they are charged to (`workflows.models.Workflow.project`). Quotas per
(project or department, node pool) hang off these two models in the quotas app (docs/quotas.md).
"""

from __future__ import annotations

from django.db import models

from portal.resources import PolicyResources, Scope
from portal.secrets import EncryptedTextField

ROLE_PREFIX = "osmo-"


class Department(models.Model):
    # Teams are one config type to the policy (`config/team`); a department is also the `department/<name>`
    # resource, so `access explain USER department/NAME` finds its object rights (department admins).
    policy_resources = PolicyResources(Scope("config", fixed="team"), Scope("department", field="name", lists=True))

    name = models.CharField(max_length=123, unique=True)
    description = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        # Held per department (guardian): its admins (registered in `TeamsConfig.ready`, read by access.policy).
        permissions = [("manage_department", "Can manage the department and its projects")]

    def __str__(self) -> str:
        return self.name


class Project(models.Model):
    policy_resources = PolicyResources(Scope("config", fixed="team"))

    name = models.CharField(max_length=123, unique=True)  # its role `osmo-<name>` fits a 128-character name
    department = models.ForeignKey(Department, on_delete=models.PROTECT, related_name="projects")
    description = models.TextField(blank=True, default="")
    # Run:ai's project rank: higher is served first when the over-quota surplus is shared (docs/quotas.md).
    priority = models.IntegerField(default=0, help_text="Higher is served first for over-quota capacity.")
    # The role whose holders are the project's members; always named `osmo-<project name>`.
    role = models.OneToOneField("access.Role", on_delete=models.PROTECT, related_name="project")
    # Where its members' Slack notifications go when they set no webhook of their own (portal.webhooks: a
    # credential, stored encrypted, never shown back in full).
    slack_webhook = EncryptedTextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @property
    def idp_groups(self) -> list[str]:
        """IdP group or role names that grant membership at sign-in: the role's name and its external names."""
        return [self.role.name, *self.role.external_roles]


def role_name(project_name: str) -> str:
    return f"{ROLE_PREFIX}{project_name}"
