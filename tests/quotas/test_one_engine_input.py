"""The pages, `quota show` and the admission pass read one engine input (quotas.services.state,
`NodePoolState.engine_state`), so what they say cannot disagree: with a workflow charged to no project and a
resource no quota manages (CPU, here), what `quota show` and the fair-share page predict is what the pass does.

Node pool a100-80gb: 2 nodes × 4 A100 = 8 GPUs, 191 CPUs. GPU quotas only: research 4 (vision 4); ops (infer)
deserves none. A user of no project runs 4 GPUs (admitted into spare capacity, preemptible); vision runs two
workflows of 1 GPU and 95 CPUs.
"""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command

from access.services import roles
from quotas.models import NodePool
from quotas.services.admission_passes import admission_pass
from quotas.services.fairshare_view import fairshare_page
from quotas.services.state import state
from tests.factories import UserFactory
from tests.quotas import gpu_cluster as gc
from workflows.models import Workflow, WorkflowStatus
from workflows.services import SubmitRequest, submit


@pytest.fixture
def server(db):
    with gc.cluster(a100_80=2) as server:
        gc.configure(server, ["a100-80"])
        yield server


def submit_cpus(user, name: str, gpus: int, cpus: int, capture, *, queued: bool = False) -> Workflow:
    """Submit; `queued`: leave it QUEUED (the pass the submission asks for after commit is not run)."""
    spec = gc.spec(name, gpus, "a100-80")
    spec["workflow"]["resources"]["default"]["cpu"] = cpus
    with capture(execute=not queued):
        result = submit(SubmitRequest(pool="gpu", spec=spec, who=user))
    return Workflow.objects.get(workflow_id=result.workflow_id)


def quota_show(node_pool: str) -> dict:
    out = StringIO()
    call_command("quota", "show", node_pool, "--format", "json", stdout=out)
    return json.loads(out.getvalue())


def test_the_pages_and_quota_show_predict_what_the_pass_does(server, django_capture_on_commit_callbacks):
    users = gc.teams({"research": ["vision"], "ops": ["infer"]})
    gc.set_quotas("a100-80gb", "a100-80", {"research": 4}, {"vision": 4})
    nobody = UserFactory(username="nobody")
    roles.update_user_roles(nobody, add=["osmo-gpu", "osmo-user"], actor=gc.CLI)
    running = gc.submit_gpus(nobody, "no-project", 4, "a100-80", django_capture_on_commit_callbacks)
    assert (running.status, running.project_id, running.preemptible) == (WorkflowStatus.WAITING, None, True)
    for name in ("a", "b"):
        submit_cpus(users["vision"], name, 1, 95, django_capture_on_commit_callbacks)
    # queued, no pass yet: CPU (unmanaged) above what is free, and GPUs held by the no-project work
    queued = [
        submit_cpus(users["vision"], "more-cpu", 2, 10, django_capture_on_commit_callbacks, queued=True),
        submit_cpus(users["infer"], "borrower", 4, 1, django_capture_on_commit_callbacks, queued=True),
    ]
    assert all(w.status == WorkflowStatus.QUEUED for w in queued)
    node_pool = NodePool.objects.get(name="a100-80gb")

    seen = state(node_pool)
    predicted = {
        "admitted": sorted(a.workflow for a in seen.result.admitted),
        "held": sorted(h.workflow for h in seen.result.held),
        "preempted": sorted(v.workflow for v in seen.result.preempted),
    }
    shown = quota_show("a100-80gb")["projects"]
    page = fairshare_page(node_pool, "gpu")
    report = admission_pass(node_pool)
    done = {key: sorted(getattr(report, key)) for key in predicted}

    assert done == predicted  # the prediction the pages read is the pass's decision
    assert done["admitted"] == [queued[0].workflow_id]  # CPU is no quota's business: it does not hold
    assert done["preempted"] == [] and done["held"] == [queued[1].workflow_id]  # room only in the spare
    shares = seen.result.shares
    for row in shown:  # quota show's fair shares are those the pass computed
        assert row["fair_share"] == shares[row["resource"]].projects[row["project"]].fair_share, row
    assert {row["resource"]: row["fair_share"] for row in shown if row["project"] == "vision"}["cpu"] == 0
    by_project = {bars.project: bars for bars in page.projects}
    assert set(by_project) == {"vision", "infer", "no project"}  # the page shows who uses the spare capacity
    assert [loan.borrower for loan in page.loans] == ["no project"]
