"""The quota pages in a real browser at 1440 px and 390 px: a researcher's pool page with a quota, the catalog
and a queued workflow; the admin's fair-share page, the quota grids (per node pool, and projects × node pools)
and admin home. No page-level horizontal scroll, no
script or resource errors. Screenshots go to var/screenshots/quota-*.png (printed)."""

from __future__ import annotations

import pytest
from django.utils import timezone

from access.services import roles
from pools.models import Pool
from quotas.models import NodePool
from quotas.services import quotas
from tests.e2e.looks import SHOTS, collect_failures, sign_in_admin, walk
from tests.e2e.test_submit_preview import sign_in
from tests.factories import WorkflowFactory
from tests.quotas.conftest import (  # noqa: F401  (fixtures)
    backend,
    carved,
    kube_server,
    pools_config,
    synced,
    teams,
)
from tests.selfservice.conftest import person
from workflows.models import WorkflowStatus

GIB = 2**30
REASON = {
    "code": "NO_CAPACITY",
    "text": "project vision: 8 of 8 guaranteed GPUs in use; 0 free to borrow; position 2 in the queue",
    "position": 2,
}


def quota_world(teams):  # noqa: F811
    roles.ensure_builtin_roles()  # a transactional test's flush removed the migration's roles
    quotas.set_quota(None, "h100", "department", "research", "gpu", deserved=16)
    quotas.set_quota(None, "h100", "department", "research", "cpu", deserved="64")
    for name in ("vision", "speech"):
        quotas.set_quotas(None, "h100", "project", name, {"gpu": {"deserved": 8}, "cpu": {"deserved": "32"}})
    vera = person("vera", "osmo-user", "osmo-vision")
    person("boss", "osmo-admin")
    train = Pool.objects.get(name="train")

    def workflow(project, gpus, status=WorkflowStatus.RUNNING, **fields):
        return WorkflowFactory(
            pool=train,
            project=teams[project],
            submitted_by=vera,
            node_pool="h100",
            status=status,
            requests={"gpu": gpus, "cpu": gpus * 4000, "memory": gpus * 32 * GIB},
            admitted_at=None if status == WorkflowStatus.QUEUED else timezone.now(),
            **fields,
        )

    workflow("vision", 8)
    workflow("speech", 12, preemptible=True)
    workflow("speech", 4, preemptible=True)
    queued = workflow("vision", 4, WorkflowStatus.QUEUED, queue_reason=REASON)
    workflow("vision", 2, WorkflowStatus.QUEUED, queue_reason={**REASON, "position": 3})
    return queued


@pytest.mark.django_db(transaction=True)
def test_quota_pages_fit_a_phone_and_a_desktop(page, new_page, live_server, carved, teams):  # noqa: F811
    base = live_server.url
    queued = quota_world(teams)
    h100 = NodePool.objects.get(name="h100")
    print(f"screenshots in {SHOTS}")
    admin = new_page()
    failures = collect_failures(page, admin)
    sign_in(page, base, "vera")
    sign_in_admin(admin, base, "boss")

    pages = [
        (page, "quota-catalog", "/", "#pool-train .quota"),
        (page, "quota-pool", "/pools/train/", "#quota"),
        (page, "quota-queued", f"/workflows/{queued.workflow_id}/", "#quota-note"),
        (page, "quota-workflows", "/workflows/", ".quota-why"),
        (admin, "quota-fairshare", f"/admin/quotas/nodepool/{h100.pk}/fairshare/", "#loans"),
        (admin, "quota-fairshare-cpu", f"/admin/quotas/nodepool/{h100.pk}/fairshare/?resource=cpu", "#fairshare-chart"),
        (admin, "quota-admin-home", "/admin/", "#queues-growing"),
        (admin, "quota-grid", f"/admin/quotas/nodepool/{h100.pk}/quotas/", "#quota-totals"),
        (admin, "quota-projects-grid", "/admin/quotas/nodepool/projects/", "#project-grid"),
    ]
    # our content in Unfold's frame
    ours_in_the_admin = {"quota-fairshare", "quota-fairshare-cpu", "quota-grid", "quota-projects-grid"}
    # Unfold's own layout (its home, its lists) is not ours to fix; our pages and admin pages are
    too_wide = walk(base, pages, ours=lambda who, name: who is page or name in ours_in_the_admin)
    page.goto(f"{base}/pools/train/")
    # 32 GPUs, 24 in use: 8 free, and vision's fair share asking for all (8 + half the 16 surplus) allows 8 more
    assert "8 GPUs deserved · 8 in use · 8 to borrow now" in " ".join(page.text_content("#quota").split())
    assert too_wide == {}
    assert failures == []
