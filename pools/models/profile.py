"""A user's OSMO profile settings (`osmo profile set pool|notifications`, `GET/POST /api/profile/settings`).

The default pool is the pool a workflow goes to when its submitter names none (OSMO's profile pool). Here,
in the pools app, because it refers to a pool; the workflows app above reads it. Deleting the pool clears
it. The notification switches are kept for OSMO's clients; the portal sends no notifications.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from pools.models.config import Pool


class UserProfile(models.Model):
    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="pool_profile")
    default_pool = models.ForeignKey(Pool, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    email_notification = models.BooleanField(default=False)
    slack_notification = models.BooleanField(default=False)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"profile of {self.user}"
