"""A user's OSMO profile settings (`osmo profile set pool|notifications`, `GET/POST /api/profile/settings`).

The default pool is the pool a workflow goes to when its submitter names none (OSMO's profile pool). Here,
in the pools app, because it refers to a pool; the workflows app above reads it. Deleting the pool clears
it. The notification switches say whether the notifications app sends the user an email and a Slack message
when their workflow ends or has waited long in the queue (docs/self-service.md, "Notifications"); Slack goes to
the user's own incoming webhook, else to their workflow's project's (`teams.Project.slack_webhook`).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from pools.models.config import Pool
from portal.secrets import EncryptedTextField


class UserProfile(models.Model):
    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="pool_profile")
    default_pool = models.ForeignKey(Pool, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    email_notification = models.BooleanField(default=False)
    slack_notification = models.BooleanField(default=False)
    # a credential (portal.webhooks): stored encrypted, never shown back in full; "" = the project's webhook
    slack_webhook = EncryptedTextField(blank=True, default="")
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"profile of {self.user}"
