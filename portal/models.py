"""Counters shared by every process of the deployment (`portal.metrics.SharedCounter`), one row per label set.

Plain fields, so SQLite works for the embedded default.
"""

from __future__ import annotations

from django.db import models


class SharedCount(models.Model):
    name = models.CharField(max_length=100)
    labels = models.CharField(max_length=500, help_text="the label values as canonical JSON (sorted keys)")
    value = models.BigIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["name", "labels"], name="unique_shared_count")]

    def __str__(self) -> str:
        return f"{self.name}{self.labels} {self.value}"
