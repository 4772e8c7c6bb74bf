"""A platform whose templates contradict the node pool it is charged to is refused at save, at the POOL and the
POD_TEMPLATE door alike, naming the node pool and leaving nothing written (docs/quotas.md, "Confinement").
Fixture `carved`: node pools h100 (label), a100 (platform train/a100), sim-default (tests/quotas/conftest.py)."""

from __future__ import annotations

import pytest

from configs import store
from configs.errors import ConfigError
from quotas.models import NodePool, SelectorKind
from quotas.services.confinement_checks import contradiction
from tests.quotas.conftest import CLI, H100_PRODUCT

PRODUCT = "nvidia.com/gpu.product"
H100 = NodePool(pk=1, name="h100", selector_kind=SelectorKind.LABEL, label_key=PRODUCT, label_value=H100_PRODUCT)
DEFAULT = NodePool(pk=2, name="sim-default", selector_kind=SelectorKind.DEFAULT)


def affinity(*expressions: dict) -> dict:
    terms = [{"matchExpressions": [expression]} for expression in expressions]
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}}


@pytest.mark.parametrize(
    ("spec", "charged", "refused"),
    [
        ({}, H100, ""),
        ({"nodeSelector": {PRODUCT: H100_PRODUCT}}, H100, ""),
        ({"nodeSelector": {PRODUCT: "NVIDIA-A100"}}, H100, "excludes nvidia.com/gpu.product=NVIDIA-H100"),
        ({"nodeSelector": {PRODUCT: "{{GPU_PRODUCT}}"}}, H100, ""),  # filled per task: not decidable
        ({"affinity": affinity({"key": PRODUCT, "operator": "NotIn", "values": [H100_PRODUCT]})}, H100, "excludes"),
        ({"affinity": affinity({"key": PRODUCT, "operator": "DoesNotExist"})}, H100, "excludes"),
        (  # one of two ORed terms admits it
            {
                "affinity": affinity(
                    {"key": PRODUCT, "operator": "In", "values": ["A100"]},
                    {"key": PRODUCT, "operator": "In", "values": [H100_PRODUCT, "A100"]},
                )
            },
            H100,
            "",
        ),
        ({"nodeSelector": {PRODUCT: H100_PRODUCT}}, DEFAULT, "the nodes of node pool h100"),
        (
            {"affinity": affinity({"key": PRODUCT, "operator": "In", "values": [H100_PRODUCT]})},
            DEFAULT,
            "node pool h100",
        ),
        ({"affinity": affinity({"key": PRODUCT, "operator": "Exists"})}, DEFAULT, ""),  # other nodes may have it
        ({"nodeSelector": {"pool-portal/node-pool": "h100"}}, DEFAULT, "excludes pool-portal/node-pool=sim-default"),
    ],
)
def test_what_contradicts_a_node_pool(spec, charged, refused):
    found = contradiction(spec, charged, [H100])
    assert (refused in found) if refused else found == ""
    assert bool(found) == bool(refused)


def test_a_template_that_leaves_its_node_pool_is_refused_at_the_pod_template_door(carved):
    # batch/cpu is charged to the Default; an H100 selector added to its template points at h100's nodes
    before = store.show("POD_TEMPLATE", "cpu")
    body = {"spec": {"nodeSelector": {"hive.openshift.io/machine-pool": "cpu", PRODUCT: H100_PRODUCT}}}
    with pytest.raises(ConfigError) as refused:
        store.apply("POD_TEMPLATE", "cpu", body, CLI)
    assert refused.value.field == "platforms.cpu"
    assert refused.value.reason.startswith(
        f"platform cpu of pool batch: its template selects {PRODUCT}={H100_PRODUCT}, the nodes of node pool h100, "
        "but it is charged to node pool sim-default"
    )
    assert store.show("POD_TEMPLATE", "cpu") == before  # nothing written


def test_a_platform_node_pools_platform_selecting_another_node_pool_is_refused_at_the_pool_door(carved):
    # node pool a100 names train/a100; pointing that platform at the H100s would confine its pods to nodes
    # it can never run on
    train = store.show("POOL", "train")
    moved = {**train, "platforms": {**train["platforms"], "a100": {"override_pod_template": ["a100", "h100"]}}}
    with pytest.raises(ConfigError) as refused:
        store.apply("POOL", "train", moved, CLI)
    assert refused.value.field == "platforms.a100" and refused.value.value == {PRODUCT: H100_PRODUCT}
    assert "the nodes of node pool h100, but it is charged to node pool a100" in refused.value.reason
    assert store.show("POOL", "train") == train
