"""Usage records made directly (the record's own tests build them from the simulated cluster)."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

from usage.models import Outcome, TaskAttempt

_SEQUENCE = itertools.count(1)
T0 = datetime(2026, 11, 1, tzinfo=UTC)


def attempt_row(**values) -> TaskAttempt:
    """A saved attempt: 1 GPU for an hour from T0 in project `train`, node pool `a100`, unless told otherwise."""
    number = next(_SEQUENCE)
    started = values.pop("started_at", T0)
    defaults = {
        "task_pk": 10_000_000 + number,
        "attempt": 0,
        "workflow_id": f"wf-{number}",
        "task": "t0",
        "project": "train",
        "department": "rnd",
        "pool": "research",
        "platform": "a100",
        "node_pool": "a100",
        "backend": "sim",
        "node": "a100-node-0",
        "instance_type": "p4de.24xlarge",
        "gpu": 1,
        "cpu_millis": 1000,
        "memory_bytes": 1 << 30,
        "started_at": started,
        "ended_at": started + timedelta(hours=1),
        "outcome": Outcome.COMPLETED,
        "hourly_cost_micros": 5_000_000,
    }
    defaults.update(values)
    if defaults["ended_at"] is None:
        defaults["outcome"] = Outcome.RUNNING
    return TaskAttempt.objects.create(**defaults)
