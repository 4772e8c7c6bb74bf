"""Workflows whose tasks use several node pools (docs/admission.md, "Workflows across node pools"): each node
pool's pass decides about its own part, and needs to know, for the workflows it touches, which of them are
gangs (more than one part) and which of their parts still wait. One query, whatever the number of workflows;
single-part workflows (the usual case) return nothing.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from django.db.models import Exists, OuterRef

from workflows.models import WorkflowPart


@dataclass(frozen=True)
class Part:
    node_pool: str
    admitted: bool  # admitted (a reservation while the workflow waits)


def gangs(workflow_pks) -> dict[int, list[Part]]:
    """workflow pk → its parts by node pool name, for those of `workflow_pks` with more than one part."""
    sibling = WorkflowPart.objects.filter(workflow_id=OuterRef("workflow_id")).exclude(pk=OuterRef("pk"))
    rows = (
        WorkflowPart.objects.filter(workflow_id__in=list(workflow_pks))
        .filter(Exists(sibling))
        .order_by("workflow_id", "node_pool")
        .values_list("workflow_id", "node_pool", "admitted_at")
    )
    found: dict[int, list[Part]] = defaultdict(list)
    for pk, node_pool, admitted_at in rows:
        found[pk].append(Part(node_pool, admitted_at is not None))
    return dict(found)


def speaks_for(parts: list[Part], node_pool: str) -> bool:
    """Whether `node_pool`'s pass writes why the gang waits: its first waiting part (by node pool name)."""
    return next((p.node_pool for p in parts if not p.admitted), node_pool) == node_pool
