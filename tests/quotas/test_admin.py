"""The node pool admin: per resource, the departments' deserved sum against the capacity of usable nodes, a flag
when the guarantees exceed it, the NODE_POOL document on the read-only page; constant queries."""

from __future__ import annotations

from django.urls import reverse

from clusters.models import Backend
from configs import store
from quotas.models import NodePool
from quotas.services import overview, quotas
from tests.factories import NodeFactory
from tests.queries import assert_constant_queries
from tests.quotas.conftest import CLI


def test_the_list_flags_a_node_pool_whose_guarantees_exceed_its_nodes(carved, admin_client):
    quotas.set_quota(None, "h100", "department", "research", "gpu", deserved=40)  # 4 nodes × 8 GPUs = 32
    quotas.set_quota(None, "a100", "department", "ops", "gpu", deserved=8)
    quotas.set_quota(None, "a100", "department", "ops", "memory", deserved="64Gi")
    totals = {p.name: p for p in overview.with_totals()}
    assert (totals["h100"].deserved_gpu, totals["h100"].capacity_gpu, totals["h100"].node_count) == (40, 32, 4)
    assert overview.overcommitted(totals["h100"]) == ["gpu"] and overview.overcommitted(totals["a100"]) == []
    page = admin_client.get(reverse("admin:quotas_nodepool_changelist"))
    assert page.status_code == 200
    text = page.content.decode()
    assert "40 / 32" in text and "over-committed: gpu" in text and "64Gi / " in text
    assert "label nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3" in text and "platform train/a100" in text
    detail = admin_client.get(reverse("admin:quotas_nodepool_change", args=[NodePool.objects.get(name="h100").pk]))
    assert detail.status_code == 200 and "&quot;deserved&quot;: 40" in detail.content.decode()


def test_the_list_takes_constant_queries(carved, admin_client):
    url = reverse("admin:quotas_nodepool_changelist")
    backend = Backend.objects.get(name="sim")

    def grow():
        for index in range(4):
            NodeFactory(backend=backend, name=f"more-{index}", gpu_allocatable=4, labels={"rack": str(index)})
            store.apply(
                "NODE_POOL",
                f"rack-{index}",
                {"backend": "sim", "selector": {"label": {"key": "rack", "value": str(index)}}},
                CLI,
            )
            quotas.set_quota(None, f"rack-{index}", "department", "ops", "gpu", deserved=index)

    assert_constant_queries(lambda: admin_client.get(url), grow)
