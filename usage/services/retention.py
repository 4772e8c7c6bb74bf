"""Retention (docs/usage.md, "Retention"): raw records for `USAGE_RAW_RETENTION_DAYS` (90 by default), rollups and
deserved samples for `USAGE_ROLLUP_RETENTION_DAYS` (730). A raw record goes once it ended that long ago; its hours
stay in the rollups, which are never recomputed before the raw horizon (`usage.services.rollup.raw_horizon`: an
attempt that outlived the retention is added to its old hours, not recomputed with them). An attempt the rollup job
has not counted yet stays until it has (else its hours, and the metrics' counters, would lose it). Nothing here
touches `UsageTotal`: the counters outlive what they count."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.utils import timezone

from usage.models import DeservedSample, TaskAttempt, UsageRollup, WorkflowRecord


def prune(now: datetime | None = None) -> dict[str, int]:
    now = now or timezone.now()
    raw = now - timedelta(days=settings.USAGE_RAW_RETENTION_DAYS)
    rolled = now - timedelta(days=settings.USAGE_ROLLUP_RETENTION_DAYS)
    return {
        "attempts": TaskAttempt.objects.filter(ended_at__lt=raw, rolled_up=True).delete()[0],
        "workflows": WorkflowRecord.objects.filter(finished_at__lt=raw).delete()[0],
        "rollups": UsageRollup.objects.filter(period_start__lt=rolled).delete()[0],
        "deserved samples": DeservedSample.objects.filter(hour__lt=rolled).delete()[0],
    }
