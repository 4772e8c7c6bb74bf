"""Each project's deserved GPUs per node pool, sampled once an hour into the usage record
(`usage.models.DeservedSample`), so the idle guarantee of a past hour is what was guaranteed then, not what is
guaranteed now (docs/usage.md, "Idle guarantee"). The periodic job (`quotas.tasks.sample_deserved`) runs more
often than hourly; the first run of an hour writes it and later runs of that hour write nothing. An hour with
no run (the portal was down) has no sample, and no idle guarantee."""

from __future__ import annotations

from datetime import datetime

from django.utils import timezone

from quotas.models import Quota, Resource
from usage.models import DeservedSample
from usage.services.rollup import floor_hour


def sample_deserved(now: datetime | None = None) -> int:
    """Write this hour's samples (one query to read, one INSERT); returns how many rows were new."""
    hour = floor_hour(now or timezone.now())
    quotas = (
        Quota.objects.filter(resource=Resource.GPU, project__isnull=False, deserved__gt=0)
        .values_list("node_pool__name", "project__name", "project__department__name", "deserved")
        .order_by()
    )
    rows = [
        DeservedSample(hour=hour, node_pool=pool, project=project, department=department or "", gpu_deserved=deserved)
        for pool, project, department, deserved in quotas
    ]
    before = DeservedSample.objects.filter(hour=hour).count()
    DeservedSample.objects.bulk_create(rows, ignore_conflicts=True, batch_size=2000)
    return DeservedSample.objects.filter(hour=hour).count() - before
