"""`place` and `fits` group nodes into equivalence classes; they must answer exactly as every filter run on every
node does (`place_each`, and `evaluate` with a freshly parsed pod per node: no memo shared between nodes)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pools.engine.placement import evaluate, fits, place, place_each, prepare_pod
from tests.unit.engine.placement_builders import container, expr, make_node, make_pod, required_affinity

LABEL_KEYS = ("zone", "gpu", "pool", "driver")
LABEL_VALUES = ("a", "b", "0204", "0550")
TAINTS = (
    {"key": "gpu", "value": "true", "effect": "NoSchedule"},
    {"key": "spot", "value": "true", "effect": "PreferNoSchedule"},
    {"key": "maintenance", "effect": "NoExecute"},
    {"key": "gpu", "value": "false", "effect": "NoSchedule"},
)
RESOURCES = ("cpu", "memory", "nvidia.com/gpu")

# Small domains, so that many nodes share a class and the classes differ in one detail.
labels = st.sampled_from(
    (
        {},
        {"zone": "a", "gpu": "a"},
        {"zone": "a", "gpu": "b", "driver": "0550"},
        {"zone": "b", "pool": "a", "driver": "0204"},
        {"zone": "a", "gpu": "a", "pool": "b"},
    )
)
allocatable = st.sampled_from(
    (
        {"cpu": 4, "memory": 8, "nvidia.com/gpu": 2, "pods": 4},
        {"cpu": 4, "memory": 8, "pods": 2},
        {"cpu": 8, "nvidia.com/gpu": 4, "pods": 4},
        {},
    )
)

node_specs = st.fixed_dictionaries(
    {
        "labels": labels,
        "taints": st.sampled_from(([], [TAINTS[0]], [TAINTS[1]], [TAINTS[0], TAINTS[2]], [TAINTS[3]])),
        "unschedulable": st.integers(0, 5).map(lambda n: n == 0),
        "allocatable": allocatable,
        "requested": st.dictionaries(st.sampled_from(RESOURCES), st.sampled_from((0, 1, 2)), max_size=3),
        "pod_count": st.integers(0, 2),
    }
)

expressions = st.one_of(
    st.tuples(st.sampled_from(LABEL_KEYS), st.sampled_from(("In", "NotIn")), st.sampled_from(LABEL_VALUES)).map(
        lambda t: expr(*t)
    ),
    st.tuples(st.sampled_from(LABEL_KEYS), st.sampled_from(("Exists", "DoesNotExist"))).map(lambda t: expr(*t)),
    st.tuples(st.sampled_from(LABEL_KEYS), st.sampled_from(("Gt", "Lt")), st.sampled_from(("0300", "1"))).map(
        lambda t: expr(*t)
    ),
)
name_fields = st.tuples(st.sampled_from(("In", "NotIn")), st.sampled_from(("node-0", "node-1"))).map(
    lambda t: {"key": "metadata.name", "operator": t[0], "values": [t[1]]}
)
terms = st.fixed_dictionaries(
    {"matchExpressions": st.lists(expressions, max_size=2)}, optional={"matchFields": st.lists(name_fields, max_size=1)}
)
tolerations = st.sampled_from(
    (
        {"key": "gpu", "operator": "Exists"},
        {"key": "gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"},
        {"operator": "Exists", "effect": "NoExecute"},
        {"key": "node.kubernetes.io/unschedulable", "operator": "Exists"},
    )
)


@st.composite
def pods(draw) -> dict:
    spec = {}
    if draw(st.booleans()):
        spec["nodeSelector"] = draw(st.dictionaries(st.sampled_from(LABEL_KEYS), st.sampled_from(LABEL_VALUES)))
    if draw(st.booleans()):
        spec["affinity"] = required_affinity(*draw(st.lists(terms, max_size=2)))
    spec["tolerations"] = draw(st.lists(tolerations, max_size=2))
    if draw(st.integers(0, 9)) == 0:
        spec["nodeName"] = draw(st.sampled_from(("node-0", "node-3")))
    requests = draw(st.dictionaries(st.sampled_from(RESOURCES), st.sampled_from(("0", "1", "2", "3")), max_size=3))
    return make_pod(containers=[container(requests=requests)], **spec)


def _nodes(specs: list[dict]):
    return [make_node(f"node-{index}", **spec) for index, spec in enumerate(specs)]


def _reference(pod: dict, nodes, check_resources: bool) -> list[dict]:
    return [evaluate(prepare_pod(pod), node, check_resources=check_resources).as_dict() for node in nodes]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(specs=st.lists(node_specs, max_size=30), pod=pods(), other=pods(), check_resources=st.booleans())
def test_classes_answer_as_every_node_evaluated(specs, pod, other, check_resources):
    nodes = _nodes(specs)
    for candidate in (pod, other):  # the second pod reuses the nodes' cached shapes
        expected = _reference(candidate, nodes, check_resources)
        assert [v.as_dict() for v in place(candidate, nodes, check_resources=check_resources)] == expected
        assert [v.as_dict() for v in place_each(candidate, nodes, check_resources=check_resources)] == expected
        assert fits(candidate, nodes, check_resources=check_resources) == [v["fits"] for v in expected]


def test_nodes_of_one_class_get_their_own_names_and_reasons():
    nodes = [make_node(f"node-{i}", labels={"zone": "b", "kubernetes.io/hostname": f"node-{i}"}) for i in range(3)]
    pod = make_pod(nodeSelector={"zone": "a"})
    verdicts = place(pod, nodes)
    assert [v.node for v in verdicts] == ["node-0", "node-1", "node-2"]
    verdicts[0].reasons.append("changed by a caller")
    assert verdicts[1].reasons == verdicts[2].reasons == ["node(s) didn't match nodeSelector: zone=a (node has b)"]
