"""Scheduler filters, rule by rule: nodeName, cordon, taints, nodeSelector, node affinity."""

from __future__ import annotations

import pytest

from pools.engine.errors import EngineError
from pools.engine.placement import (
    NOT_EVALUATED,
    PodSpecView,
    PreparedPod,
    place,
    prepare_pod,
)
from pools.engine.placement_affinity import Toleration, parse_int64
from tests.unit.engine.placement_builders import (
    GPU_TAINT,
    container,
    expr,
    make_node,
    make_pod,
    required_affinity,
    verdict,
)

# ------------------------------------------------------------------------------------ taints/tolerations


TOLERATION_CASES = [
    # (toleration, taint, tolerated, why)
    (
        {"key": "nvidia.com/gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"},
        GPU_TAINT,
        True,
        "exact match",
    ),
    (
        {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"},
        GPU_TAINT,
        True,
        "empty operator is Equal",
    ),
    (
        {"key": "nvidia.com/gpu", "operator": "Equal", "value": "false", "effect": "NoSchedule"},
        GPU_TAINT,
        False,
        "value differs",
    ),
    (
        {"key": "nvidia.com/gpu", "operator": "Equal", "effect": "NoSchedule"},
        GPU_TAINT,
        False,
        "Equal with empty value vs taint value",
    ),
    (
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
        GPU_TAINT,
        True,
        "Exists ignores value",
    ),
    ({"key": "nvidia.com/gpu", "operator": "Exists"}, GPU_TAINT, True, "empty effect matches any effect"),
    (
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoExecute"},
        GPU_TAINT,
        False,
        "effect differs",
    ),
    ({"key": "other", "operator": "Exists"}, GPU_TAINT, False, "key differs"),
    ({"operator": "Exists"}, GPU_TAINT, True, "empty key with Exists matches every taint"),
    ({"operator": "Exists", "effect": "NoSchedule"}, GPU_TAINT, True, "empty key, same effect"),
    ({"operator": "Exists", "effect": "NoExecute"}, GPU_TAINT, False, "empty key, other effect"),
    (
        {"key": "gpu.count", "operator": "Gt", "value": "1", "effect": "NoSchedule"},
        {"key": "gpu.count", "value": "8", "effect": "NoSchedule"},
        False,
        "Gt needs the alpha gate: off",
    ),
    (
        {"key": "gpu.count", "operator": "Lt", "value": "9", "effect": "NoSchedule"},
        {"key": "gpu.count", "value": "8", "effect": "NoSchedule"},
        False,
        "Lt needs the alpha gate: off",
    ),
    ({"key": "nvidia.com/gpu", "operator": "Matches", "value": "true"}, GPU_TAINT, False, "unknown operator"),
    (
        {"key": "dedicated", "operator": "Equal", "effect": "NoExecute"},
        {"key": "dedicated", "effect": "NoExecute"},
        True,
        "empty value equals empty value",
    ),
    (
        {"key": "dedicated", "operator": "Equal", "value": "x", "effect": "NoExecute"},
        {"key": "dedicated", "effect": "NoExecute"},
        False,
        "value vs empty taint value",
    ),
]


@pytest.mark.parametrize(
    ("toleration", "taint", "tolerated", "why"), TOLERATION_CASES, ids=[case[3] for case in TOLERATION_CASES]
)
def test_toleration_matching(toleration, taint, tolerated, why):
    result = verdict(make_pod(tolerations=[toleration]), make_node(taints=[taint]))
    assert result.fits is tolerated, why
    if not tolerated:
        assert result.filters == ("TaintToleration",)


def test_untolerated_taint_reason_names_key_value_and_effect():
    result = verdict(make_pod(), make_node(taints=[GPU_TAINT, {"key": "maintenance", "effect": "NoExecute"}]))
    assert result.reasons == [
        "untolerated taint nvidia.com/gpu=true:NoSchedule",
        "untolerated taint maintenance:NoExecute",
    ]


@pytest.mark.parametrize("tolerations", [[], [{"key": "other", "operator": "Exists"}]])
def test_prefer_no_schedule_never_filters(tolerations):
    node = make_node(taints=[{"key": "spot", "value": "true", "effect": "PreferNoSchedule"}])
    assert verdict(make_pod(tolerations=tolerations), node).fits
    assert node.hard_taints == ()


def test_every_hard_taint_must_be_tolerated():
    node = make_node(taints=[GPU_TAINT, {"key": "pool", "value": "a", "effect": "NoExecute"}])
    only_gpu = make_pod(tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists"}])
    both = make_pod(
        tolerations=[
            {"key": "nvidia.com/gpu", "operator": "Exists"},
            {"key": "pool", "value": "a", "effect": "NoExecute", "tolerationSeconds": 30},
        ]
    )
    assert verdict(only_gpu, node).reasons == ["untolerated taint pool=a:NoExecute"]
    assert verdict(both, node).fits


def test_toleration_dataclass_directly():
    assert Toleration(operator="Exists").tolerates("any", "thing", "NoExecute")
    assert not Toleration(key="k", operator="Gt", value="1").tolerates("k", "2", "NoSchedule")


# ---------------------------------------------------------------------------------------------- cordon

CORDON_CASES = [
    ([], False),
    ([{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}], True),
    ([{"key": "node.kubernetes.io/unschedulable", "operator": "Exists"}], True),
    ([{"key": "node.kubernetes.io/unschedulable", "operator": "Equal", "effect": "NoSchedule"}], True),
    ([{"operator": "Exists"}], True),
    ([{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoExecute"}], False),
    ([{"key": "node.kubernetes.io/unschedulable", "value": "true", "effect": "NoSchedule"}], False),
]


@pytest.mark.parametrize(("tolerations", "fits"), CORDON_CASES)
def test_cordoned_node_needs_the_unschedulable_toleration(tolerations, fits):
    result = verdict(make_pod(tolerations=tolerations), make_node(unschedulable=True))
    assert result.fits is fits
    if not fits:
        assert result.reasons == ["node is cordoned (unschedulable)"]
        assert result.filters == ("NodeUnschedulable",)


# -------------------------------------------------------------------------------------------- nodeName


@pytest.mark.parametrize(("node_name", "fits"), [("node-a", True), ("node-b", False), ("", True), (None, True)])
def test_node_name_binds_to_one_node(node_name, fits):
    result = verdict(make_pod(nodeName=node_name), make_node("node-a"))
    assert result.fits is fits
    if not fits:
        assert result.filters == ("NodeName",)
        assert "node-b" in result.reasons[0]


# ---------------------------------------------------------------------------------------- nodeSelector

SELECTOR_CASES = [
    ({"gpu": "h100"}, {"gpu": "h100", "zone": "a"}, True),
    ({"gpu": "h100", "zone": "a"}, {"gpu": "h100", "zone": "a"}, True),
    ({"gpu": "h100", "zone": "b"}, {"gpu": "h100", "zone": "a"}, False),
    ({"gpu": "h100"}, {"gpu": "a100"}, False),
    ({"gpu": "h100"}, {}, False),
    ({"flag": ""}, {"flag": ""}, True),
    ({"flag": ""}, {}, False),
    ({}, {}, True),
]


@pytest.mark.parametrize(("selector", "labels", "fits"), SELECTOR_CASES)
def test_node_selector_needs_every_label(selector, labels, fits):
    assert verdict(make_pod(nodeSelector=selector), make_node(labels=labels)).fits is fits


def test_node_selector_reason_shows_the_node_value():
    pod = make_pod(nodeSelector={"nvidia.com/gpu.product": "NVIDIA-H100", "pool": "train"})
    result = verdict(pod, make_node(labels={"nvidia.com/gpu.product": "NVIDIA-A100"}))
    assert result.reasons == [
        "node(s) didn't match nodeSelector: nvidia.com/gpu.product=NVIDIA-H100 (node has NVIDIA-A100)",
        "node(s) didn't match nodeSelector: pool=train (node has no pool label)",
    ]
    assert result.filters == ("NodeAffinity",)


# ------------------------------------------------------------------------------------------ node affinity

OPERATOR_CASES = [
    # (expression, node labels, matches)
    (expr("zone", "In", "a", "b"), {"zone": "a"}, True),
    (expr("zone", "In", "a", "b"), {"zone": "c"}, False),
    (expr("zone", "In", "a"), {}, False),
    (expr("zone", "NotIn", "a"), {"zone": "b"}, True),
    (expr("zone", "NotIn", "a"), {"zone": "a"}, False),
    (expr("zone", "NotIn", "a"), {}, True),  # absent label satisfies NotIn
    (expr("zone", "Exists"), {"zone": ""}, True),
    (expr("zone", "Exists"), {}, False),
    (expr("zone", "DoesNotExist"), {}, True),
    (expr("zone", "DoesNotExist"), {"zone": "a"}, False),
    (expr("driver", "Gt", "0204"), {"driver": "0206"}, True),  # leading zeros parse as base 10
    (expr("driver", "Gt", "204"), {"driver": "0204"}, False),  # strict
    (expr("driver", "Gt", "5"), {"driver": "+7"}, True),  # ParseInt accepts a '+' on the node side
    (expr("driver", "Gt", "5"), {"driver": "v7"}, False),  # non-integer label value
    (expr("driver", "Gt", "5"), {"driver": "99999999999999999999"}, False),  # beyond int64
    (expr("driver", "Gt", "5"), {}, False),  # label must exist
    (expr("driver", "Lt", "10"), {"driver": "9"}, True),
    (expr("driver", "Lt", "10"), {"driver": "10"}, False),
    (expr("driver", "Lt", "010"), {"driver": "9"}, True),
    # invalid requirements make the term fail whatever the node has
    (expr("driver", "Gt", "abc"), {"driver": "1"}, False),
    (expr("driver", "Gt", "1", "2"), {"driver": "5"}, False),
    (expr("driver", "Gt", "-5"), {"driver": "1"}, False),  # "-5" is not a valid label value
    (expr("driver", "Gt"), {"driver": "1"}, False),
    (expr("zone", "In"), {"zone": "a"}, False),  # In needs values
    (expr("zone", "Exists", "a"), {"zone": "a"}, False),  # Exists takes no values
    (expr("zone", "In", "not valid!"), {"zone": "not valid!"}, False),  # invalid label value
    (expr("zone", "Equals", "a"), {"zone": "a"}, False),  # not a node selector operator
    (expr("bad key!", "Exists"), {"bad key!": "a"}, False),  # invalid label key
]


@pytest.mark.parametrize(("expression", "labels", "matches"), OPERATOR_CASES)
def test_affinity_operators(expression, labels, matches):
    pod = make_pod(affinity=required_affinity({"matchExpressions": [expression]}))
    result = verdict(pod, make_node(labels=labels))
    assert result.fits is matches
    if not matches:
        assert result.filters == ("NodeAffinity",)
        assert result.reasons[0].startswith("node(s) didn't match required node affinity: ")


def test_expressions_in_a_term_are_anded():
    pod = make_pod(affinity=required_affinity({"matchExpressions": [expr("zone", "In", "a"), expr("gpu", "Exists")]}))
    assert verdict(pod, make_node(labels={"zone": "a", "gpu": "1"})).fits
    result = verdict(pod, make_node(labels={"zone": "a"}))
    assert result.reasons == ["node(s) didn't match required node affinity: gpu Exists (node has no gpu label)"]


def test_terms_are_ored():
    pod = make_pod(
        affinity=required_affinity(
            {"matchExpressions": [expr("zone", "In", "a")]}, {"matchExpressions": [expr("zone", "In", "b")]}
        )
    )
    assert verdict(pod, make_node(labels={"zone": "a"})).fits
    assert verdict(pod, make_node(labels={"zone": "b"})).fits
    result = verdict(pod, make_node(labels={"zone": "c"}))
    assert result.reasons == [
        "node(s) didn't match required node affinity: no term matched: "
        "term 0: zone In [a] (node has zone=c) | term 1: zone In [b] (node has zone=c)"
    ]


def test_an_invalid_term_fails_but_another_term_can_match():
    pod = make_pod(
        affinity=required_affinity(
            {"matchExpressions": [expr("zone", "In", "bad value!")]},
            {"matchExpressions": [expr("zone", "In", "a")]},
        )
    )
    assert verdict(pod, make_node(labels={"zone": "a"})).fits
    result = verdict(pod, make_node(labels={"zone": "b"}))
    assert "term 0 is invalid" in result.reasons[0]
    assert "invalid label value 'bad value!'" in result.reasons[0]


@pytest.mark.parametrize(
    "affinity",
    [
        required_affinity(),  # empty term list
        {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {}}},  # nil term list
        {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": None}}},
        required_affinity({}),  # a term with neither expressions nor fields
        required_affinity({"matchExpressions": [], "matchFields": []}),
    ],
)
def test_empty_required_terms_match_nothing(affinity):
    result = verdict(make_pod(affinity=affinity), make_node(labels={"zone": "a"}))
    assert not result.fits
    assert "matches no node" in result.reasons[0]


@pytest.mark.parametrize(
    "affinity",
    [
        None,
        {},
        {"nodeAffinity": None},
        {"nodeAffinity": {}},
        {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": None}},
        {
            "nodeAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 10, "preference": {"matchExpressions": [expr("zone", "In", "z")]}}
                ]
            }
        },  # preferred only scores
        {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": []}},  # not evaluated
    ],
)
def test_no_required_node_affinity_is_no_constraint(affinity):
    assert verdict(make_pod(affinity=affinity), make_node(labels={"zone": "a"})).fits


MATCH_FIELDS_CASES = [
    ({"key": "metadata.name", "operator": "In", "values": ["node-a"]}, "node-a", True),
    ({"key": "metadata.name", "operator": "In", "values": ["node-b"]}, "node-a", False),
    ({"key": "metadata.name", "operator": "NotIn", "values": ["node-b"]}, "node-a", True),
    ({"key": "metadata.name", "operator": "NotIn", "values": ["node-a"]}, "node-a", False),
    (
        {"key": "metadata.name", "operator": "In", "values": ["node-a", "node-b"]},
        "node-a",
        False,
    ),  # one value only
    ({"key": "metadata.name", "operator": "Exists"}, "node-a", False),  # In/NotIn only
    (
        {"key": "metadata.uid", "operator": "In", "values": ["node-a"]},
        "node-a",
        False,
    ),  # only the name is a field
]


@pytest.mark.parametrize(("field", "node_name", "matches"), MATCH_FIELDS_CASES)
def test_match_fields_see_only_the_node_name(field, node_name, matches):
    pod = make_pod(affinity=required_affinity({"matchFields": [field]}))
    assert verdict(pod, make_node(node_name, labels={"metadata.name": "node-b"})).fits is matches


def test_label_expressions_never_see_the_node_name():
    pod = make_pod(affinity=required_affinity({"matchExpressions": [expr("metadata.name", "In", "node-a")]}))
    assert not verdict(pod, make_node("node-a")).fits


def test_match_fields_and_expressions_are_anded():
    term = {
        "matchExpressions": [expr("zone", "In", "a")],
        "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-a"]}],
    }
    pod = make_pod(affinity=required_affinity(term))
    assert verdict(pod, make_node("node-a", labels={"zone": "a"})).fits
    assert not verdict(pod, make_node("node-b", labels={"zone": "a"})).fits
    assert not verdict(pod, make_node("node-a", labels={"zone": "b"})).fits


def test_node_selector_and_required_affinity_are_anded():
    pod = make_pod(
        nodeSelector={"pool": "train"},
        affinity=required_affinity({"matchExpressions": [expr("zone", "In", "a")]}),
    )
    assert verdict(pod, make_node(labels={"pool": "train", "zone": "a"})).fits
    assert not verdict(pod, make_node(labels={"pool": "train", "zone": "b"})).fits
    assert not verdict(pod, make_node(labels={"pool": "infer", "zone": "a"})).fits


def test_affinity_memo_gives_per_node_answers():
    pod = prepare_pod(make_pod(affinity=required_affinity({"matchExpressions": [expr("zone", "In", "a")]})))
    nodes = [make_node(f"n{i}", labels={"zone": "ab"[i % 2]}) for i in range(6)]
    assert [v.fits for v in place(pod, nodes)] == [True, False] * 3
    assert [v.node for v in place(pod, nodes)] == [n.name for n in nodes]


@pytest.mark.parametrize(
    ("text", "number"),
    [
        ("0206", 206),
        ("+5", 5),
        ("-5", -5),
        ("9223372036854775807", 2**63 - 1),
        ("9223372036854775808", None),
        ("", None),
        ("1_0", None),
        ("٣", None),
        (" 1", None),
        ("-", None),
    ],
)
def test_parse_int64_follows_strconv(text, number):
    assert parse_int64(text) == number


# ------------------------------------------------------------------------------------------- prepare_pod


@pytest.mark.parametrize(
    ("spec", "field", "value"),
    [
        (
            {"containers": [container(requests={"memory": "1K"})]},
            "spec.containers[0].resources.requests.memory",
            "1K",
        ),
        (
            {"containers": [container(limits={"nvidia.com/gpu": "x"})]},
            "spec.containers[0].resources.limits[nvidia.com/gpu]",
            "x",
        ),
        (
            {"containers": [container()], "initContainers": [container(requests={"cpu": "1 "})]},
            "spec.initContainers[0].resources.requests.cpu",
            "1 ",
        ),
        ({"containers": [container()], "overhead": {"cpu": "Gi"}}, "spec.overhead.cpu", "Gi"),
    ],
)
def test_prepare_pod_names_the_bad_quantity_and_its_path(spec, field, value):
    with pytest.raises(EngineError) as caught:
        prepare_pod({"spec": spec})
    assert caught.value.field == field
    assert caught.value.value == value


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"containers": [container()], "tolerations": {"key": "a"}}, "spec.tolerations"),
        ({"containers": [container()], "tolerations": [{"key": 5}]}, "spec.tolerations[0].key"),
        ({"containers": [container()], "nodeSelector": ["a"]}, "spec.nodeSelector"),
        ({"containers": "main"}, "spec.containers"),
        ({"containers": [container()], "nodeName": 5}, "spec.nodeName"),
    ],
)
def test_prepare_pod_rejects_malformed_structure(spec, field):
    with pytest.raises(EngineError) as caught:
        prepare_pod({"spec": spec})
    assert caught.value.field == field


def test_prepare_pod_rejects_a_pod_without_spec():
    with pytest.raises(EngineError):
        prepare_pod({"metadata": {"name": "x"}})


def test_prepared_pod_is_reusable_and_place_accepts_both_forms():
    pod = make_pod(nodeSelector={"zone": "a"})
    prepared = prepare_pod(pod)
    assert prepare_pod(prepared) is prepared
    assert PodSpecView is PreparedPod
    nodes = [make_node("x", labels={"zone": "a"}), make_node("y", labels={"zone": "b"})]
    assert [v.fits for v in place(pod, nodes)] == [v.fits for v in place(prepared, nodes)] == [True, False]


def test_verdict_reports_every_failing_filter_and_serialises():
    node = make_node(
        "n1",
        labels={"zone": "b"},
        taints=[GPU_TAINT],
        unschedulable=True,
        allocatable={"cpu": 1000, "pods": 10},
    )
    pod = make_pod(nodeName="n2", nodeSelector={"zone": "a"}, containers=[container(requests={"cpu": "2"})])
    result = verdict(pod, node)
    assert result.filters == (
        "NodeName",
        "NodeUnschedulable",
        "TaintToleration",
        "NodeAffinity",
        "NodeResourcesFit",
    )
    assert result.as_dict() == {
        "node": "n1",
        "fits": False,
        "reasons": result.reasons,
        "filters": list(result.filters),
    }
    assert len(result.reasons) == 5


def test_not_evaluated_lists_the_out_of_scope_rules():
    joined = " ".join(NOT_EVALUATED)
    for topic in (
        "inter-pod affinity",
        "topology spread",
        "volumes",
        "host ports",
        "dynamic resource allocation",
        "readiness",
    ):
        assert topic in joined
