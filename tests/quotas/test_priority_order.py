"""A project's priority set through a door (`team update --priority`) orders the node pool's queue at the next
admission pass: the engine honours what the doors set (tests/teams/test_priority.py has the doors themselves).

Node pool a100-80gb: 2 nodes × 4 A100 = 8 GPUs, all held by vision (deserved 8); nlp and infer wait.
"""

from __future__ import annotations

from io import StringIO

from django.core.management import call_command

from quotas.models import NodePool
from quotas.services.admission_passes import admission_pass
from tests.quotas import gpu_cluster as gc
from workflows.models import Workflow, WorkflowStatus


def positions() -> dict[str, int]:
    queued = Workflow.objects.filter(status=WorkflowStatus.QUEUED)
    return {w.workflow_id.rsplit("-", 1)[0]: w.queue_reason["position"] for w in queued}


def test_raising_a_projects_priority_moves_its_work_ahead(db, django_capture_on_commit_callbacks):
    with gc.cluster(a100_80=2) as server:
        gc.configure(server, ["a100-80"])
        users = gc.teams({"research": ["vision", "nlp"], "ops": ["infer"]})
        gc.set_quotas("a100-80gb", "a100-80", {"research": 8}, {"vision": 8})
        for project, name in (("vision", "a"), ("vision", "b"), ("nlp", "first"), ("infer", "second")):
            gc.submit_gpus(users[project], name, 4, "a100-80", django_capture_on_commit_callbacks)
        assert positions() == {"first": 1, "second": 2}  # equal priorities: submission order
        call_command("team", "update", "infer", "--priority", "5", stdout=StringIO())
        admission_pass(NodePool.objects.get(name="a100-80gb"))
        assert positions() == {"first": 2, "second": 1}
