"""`K8_GPU_PRODUCT` and `K8_GPU_CUDA_DRIVER` in resource rules: node variables, as OSMO classifies them.

What OSMO does with them (NVIDIA/OSMO; read, not copied):
- src/utils/job/workflow.py: `K8_TOKENS_SET` is the four `K8_<resource>` names of
  `common.ALLOCATABLE_RESOURCES_LABELS` (storage, cpu, memory, gpu) "union {'K8_GPU_PRODUCT', 'K8_GPU_CUDA_DRIVER'}";
  `split_assertion_rules` uses it only to make a rule that reads one of them a node ("k8") rule.
- The same file's `build_resource_lookup_table` gives values to the four resource names only, and
  `_validate_resource` evaluates each rule with that table | the task's tokens; `ResourceAssertion.evaluate`
  (src/utils/connectors/postgres.py) renders the operands with `jinja2.StrictUndefined`
  (src/lib/utils/jinja_sandbox.py `render_template`), so on OSMO a rule that reads either name fails every
  submission with "Jinja substitution failure: ... 'K8_GPU_PRODUCT' is undefined".
- The node's data for them is there: the `nvidia.com/gpu.product` label, and the CUDA driver that
  `BackendResource.exposed_fields` (postgres.py) shows as `cuda-driver`: the `nvidia.com/cuda.driver.major`,
  `.minor` and `.rev` labels (common.py `GPU_VERSIONED_LABELS['cuda-driver']`) joined with dots.

The portal classifies them as OSMO does and gives them those values (text; "" when the node lacks the labels),
so a rule OSMO reserves them for works instead of failing.
"""

from __future__ import annotations

import pytest

from clusters.models import Backend
from configs import store
from pools.engine.rules import CompiledRules
from pools.models import NodeMembership, Platform
from pools.services.compilation import compiled_platform
from pools.services.node_rules import capacities_for
from tests.factories import NodeFactory
from tests.integration.conftest import CLI
from tests.queries import captured_queries

pytestmark = pytest.mark.django_db

A100 = "NVIDIA-A100-SXM4-80GB"
CUDA = {
    "nvidia.com/cuda.driver.major": "535",
    "nvidia.com/cuda.driver.minor": "104",
    "nvidia.com/cuda.driver.rev": "05",
}


def rule(left, right, operator="EQ"):
    return {
        "operator": operator,
        "left_operand": left,
        "right_operand": right,
        "assert_message": "wrong {{K8_GPU_PRODUCT}}",
    }


def test_gpu_product_and_cuda_driver_come_from_the_node_labels(demo_pools):
    backend = Backend.objects.get(name="dev-cluster-01")
    a100 = NodeFactory(
        backend=backend,
        name="a100-0",
        gpu_allocatable=8,
        gpu_product=A100,
        labels={"nvidia.com/gpu.product": A100, **CUDA},
    )
    t4 = NodeFactory(
        backend=backend,
        name="t4-0",
        gpu_allocatable=4,
        gpu_product="Tesla-T4",
        labels={"nvidia.com/gpu.product": "Tesla-T4", "nvidia.com/cuda.driver.major": "550"},  # minor, rev missing
    )
    rules = [rule("{{K8_GPU_PRODUCT}}", A100), rule("{{K8_GPU_CUDA_DRIVER}}", "535.104.05")]
    store.apply("RESOURCE_VALIDATION", "gpu_model", rules, CLI)
    document = store.show("POOL", "team-development")
    document["platforms"]["small-gpu"]["resource_validations"] = ["gpu_model"]
    store.apply("POOL", "team-development", document, CLI)
    platform = Platform.objects.select_related("pool__backend").get(pool__name="team-development", name="small-gpu")
    for node in (a100, t4):
        NodeMembership.objects.create(node=node, platform=platform, pool=platform.pool)

    nodes = {node.name: node.variables() for node in capacities_for([platform])[platform.pk]}
    assert {name: (v["K8_GPU_PRODUCT"], v["K8_GPU_CUDA_DRIVER"]) for name, v in nodes.items()} == {
        "a100-0": (A100, "535.104.05"),
        "t4-0": ("Tesla-T4", ""),
    }
    ours = [r for r in compiled_platform(platform).rules.node if r.validation == "gpu_model"]
    assert len(ours) == 2  # node rules, as OSMO's split_assertion_rules makes them
    compiled = CompiledRules(node=tuple(ours))
    verdict = compiled.check_nodes(
        {}, capacities_for([platform])[platform.pk], pool="team-development", platform="small-gpu"
    )
    assert verdict.passed and verdict.passing_nodes == ["a100-0"]
    assert verdict.failures["t4-0"].message == "wrong Tesla-T4"
    assert (verdict.failures["t4-0"].left, verdict.failures["t4-0"].right) == ("Tesla-T4", A100)


def test_a_platform_whose_rules_read_no_gpu_label_reads_none(demo_pools):
    """A fleet platform has thousands of member nodes: their labels are read only for rules that use them."""
    platform = Platform.objects.select_related("pool__backend").get(pool__name="team-development", name="small-gpu")
    assert not compiled_platform(platform).rules.reads_gpu_labels
    node = NodeFactory(backend=platform.pool.backend, gpu_product=A100, labels={"nvidia.com/gpu.product": A100, **CUDA})
    NodeMembership.objects.create(node=node, platform=platform, pool=platform.pool)
    with captured_queries() as queries:
        [capacity] = capacities_for([platform])[platform.pk]
    assert (capacity.gpu_product, capacity.cuda_driver) == ("", "")
    assert not any("cuda.driver" in sql for sql in queries)
