"""Past usage of one node pool per project, for the time-based fair share (quotas.services.usage_weights).

Read from the raw attempts, not the rollups: running attempts count up to `until` (rollups hold closed ones
only) and the decay weighs each second by its own age, which hourly sums would round. One query per call;
the weighing is Python's, so it reads the same on SQLite and PostgreSQL.
"""

from __future__ import annotations

import math
from collections import defaultdict
from datetime import datetime

from django.db.models import Q

from usage.models import TaskAttempt

RESOURCE_FIELDS = (("gpu", "gpu"), ("cpu", "cpu_millis"), ("memory", "memory_bytes"))


def weighted_seconds(start: float, end: float, half_life: float | None) -> float:
    """The seconds of [start, end] (their ages, in seconds before now: start ≥ end ≥ 0), each weighted by
    0.5^(age / half_life); unweighted when `half_life` is None."""
    if half_life is None:
        return start - end
    return half_life / math.log(2) * (0.5 ** (end / half_life) - 0.5 ** (start / half_life))


def usage_by_project(
    node_pool: str, since: datetime, until: datetime, half_life_seconds: float | None = None
) -> dict[str, dict[str, float]]:
    """project → {"gpu": device-seconds, "cpu": millicore-seconds, "memory": byte-seconds} of the attempts in
    `node_pool` within [since, until] (running ones up to `until`), each second weighted by its age when
    `half_life_seconds` is set. Attempts charged to no project are under ""."""
    rows = (
        TaskAttempt.objects.filter(node_pool=node_pool, started_at__lt=until)
        .filter(Q(ended_at__isnull=True) | Q(ended_at__gt=since))
        .values_list("project", "started_at", "ended_at", *(column for _, column in RESOURCE_FIELDS))
    )
    found: dict[str, dict[str, float]] = defaultdict(lambda: {resource: 0.0 for resource, _ in RESOURCE_FIELDS})
    for project, started_at, ended_at, *amounts in rows.iterator(chunk_size=5000):
        began, ended = max(started_at, since), min(ended_at or until, until)
        if ended <= began or not any(amounts):
            continue
        seconds = weighted_seconds((until - began).total_seconds(), (until - ended).total_seconds(), half_life_seconds)
        sums = found[project]
        for (resource, _), amount in zip(RESOURCE_FIELDS, amounts, strict=True):
            sums[resource] += amount * seconds
    return dict(found)
