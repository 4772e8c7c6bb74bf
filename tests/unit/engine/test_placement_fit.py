"""NodeResourcesFit and node/pod parsing from kubectl output (Kubernetes'
`pkg/scheduler/framework/plugins/noderesources/fit.go`)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pools.engine.errors import EngineError
from pools.engine.placement import NodeInfo, nodes_from_kubectl, place, pod_requests, prepare_pod
from tests.unit.engine.placement_builders import GPU_TAINT, GiB, container, make_node, make_pod, verdict

# ---------------------------------------------------------------------------------------------- resources


def test_pod_fits_when_resources_are_free_and_equality_fits():
    node = make_node(allocatable={"cpu": 8000, "memory": 16 * GiB, "pods": 10}, requested={"cpu": 4000})
    assert verdict(make_pod(containers=[container(requests={"cpu": "4", "memory": "16Gi"})]), node).fits
    result = verdict(make_pod(containers=[container(requests={"cpu": "4001m"})]), node)
    assert result.reasons == ["Insufficient cpu: requested 4.001, free 4 of 8"]
    assert result.filters == ("NodeResourcesFit",)


def test_all_failing_resources_are_reported_with_units():
    node = make_node(
        allocatable={"cpu": 2000, "memory": 8 * GiB, "nvidia.com/gpu": 8, "pods": 10},
        requested={"nvidia.com/gpu": 4, "memory": 4 * GiB},
    )
    pod = make_pod(containers=[container(requests={"cpu": "2500m", "memory": "6Gi"}, limits={"nvidia.com/gpu": "8"})])
    assert verdict(pod, node).reasons == [
        "Insufficient cpu: requested 2.5, free 2 of 2",
        "Insufficient memory: requested 6Gi, free 4Gi of 8Gi",
        "Insufficient nvidia.com/gpu: requested 8, free 4 of 8",
    ]


def test_extended_resource_missing_on_node_counts_as_zero():
    node = make_node(allocatable={"cpu": 8000, "pods": 10})
    result = verdict(make_pod(containers=[container(limits={"example.com/fpga": "1"})]), node)
    assert result.reasons == ["Insufficient example.com/fpga: requested 1, free 0 of 0"]


def test_zero_requests_are_skipped():
    node = make_node(allocatable={"cpu": 1000, "pods": 10})
    assert verdict(
        make_pod(containers=[container(requests={"nvidia.com/gpu": "0"}, limits={"nvidia.com/gpu": "0"})]),
        node,
    ).fits


@pytest.mark.parametrize(("pod_count", "allowed", "fits"), [(9, 10, True), (10, 10, False), (0, 0, False)])
def test_pod_count_is_checked_first_even_for_an_empty_pod(pod_count, allowed, fits):
    node = make_node(allocatable={"cpu": 1000, "pods": allowed}, pod_count=pod_count)
    result = verdict(make_pod(), node)
    assert result.fits is fits
    if not fits:
        assert result.reasons == [f"Too many pods: {pod_count} of {allowed} allowed pods already on the node"]


def test_a_pod_requesting_nothing_fits_a_full_node():
    node = make_node(allocatable={"cpu": 1000, "memory": GiB, "pods": 10}, requested={"cpu": 1000, "memory": GiB})
    assert verdict(make_pod(), node).fits


def test_check_resources_false_ignores_resources_and_pod_count():
    node = make_node(allocatable={"pods": 0})
    pod = make_pod(containers=[container(requests={"cpu": "100"})])
    assert not verdict(pod, node).fits
    assert verdict(pod, node, check_resources=False).fits


def test_negative_free_capacity_still_reports():
    node = make_node(allocatable={"cpu": 1000, "pods": 10}, requested={"cpu": 1500})
    assert verdict(make_pod(containers=[container(requests={"cpu": "1m"})]), node).reasons == [
        "Insufficient cpu: requested 1m, free -0.5 of 1"
    ]


REQUEST_CASES = [
    # (spec fields, expected pod_requests)
    (
        {
            "containers": [
                container(requests={"cpu": "1", "memory": "1Gi"}),
                container("b", requests={"cpu": "500m"}),
            ]
        },
        {"cpu": 1500, "memory": GiB},
    ),
    # limits are copied into unset requests; a set request wins over its limit
    (
        {"containers": [container(requests={"cpu": "1"}, limits={"cpu": "2", "memory": "2Gi", "nvidia.com/gpu": "1"})]},
        {"cpu": 1000, "memory": 2 * GiB, "nvidia.com/gpu": 1},
    ),
    # init container larger than the sum of app containers
    (
        {
            "initContainers": [container("init", requests={"cpu": "4"})],
            "containers": [container(requests={"cpu": "1", "memory": "1Gi"})],
        },
        {"cpu": 4000, "memory": GiB},
    ),
    # init container smaller than the sum
    (
        {
            "initContainers": [container("init", requests={"cpu": "500m", "memory": "4Gi"})],
            "containers": [
                container(requests={"cpu": "1", "memory": "1Gi"}),
                container("b", requests={"cpu": "1"}),
            ],
        },
        {"cpu": 2000, "memory": 4 * GiB},
    ),
    # sidecar (restartPolicy Always) is added to the app sum and to later init containers
    (
        {
            "initContainers": [
                container("sidecar", requests={"cpu": "1"}, restartPolicy="Always"),
                container("init", requests={"cpu": "3"}),
            ],
            "containers": [container(requests={"cpu": "1"})],
        },
        {"cpu": 4000},
    ),
    (
        {
            "initContainers": [
                container("init", requests={"cpu": "3"}),
                container("sidecar", requests={"cpu": "1"}, restartPolicy="Always"),
            ],
            "containers": [container(requests={"cpu": "1"})],
        },
        {"cpu": 3000},
    ),
    # overhead is added on top
    (
        {
            "containers": [container(requests={"cpu": "1", "memory": "1Gi"})],
            "overhead": {"cpu": "250m", "memory": "120Mi"},
        },
        {"cpu": 1250, "memory": GiB + 120 * 2**20},
    ),
    # summed exactly, then rounded up once: 3 x 0.1m = 0.3m -> 1 millicore
    ({"containers": [container(str(i), requests={"cpu": "0.1m"}) for i in "abc"]}, {"cpu": 1}),
    ({"containers": [container(requests={"memory": "1.5"})]}, {"memory": 2}),
    # pod-level resources replace the aggregate for cpu and memory
    (
        {
            "containers": [container(requests={"cpu": "1", "nvidia.com/gpu": "1"}, limits={"nvidia.com/gpu": "1"})],
            "resources": {"requests": {"cpu": "3"}},
        },
        {"cpu": 3000, "nvidia.com/gpu": 1},
    ),
    ({"containers": [container()]}, {}),
]


@pytest.mark.parametrize(("spec", "expected"), REQUEST_CASES)
def test_pod_requests(spec, expected):
    assert pod_requests({"spec": spec}) == expected


def test_pod_requests_accepts_a_bare_spec():
    assert pod_requests({"containers": [container(requests={"cpu": "2"})]}) == {"cpu": 2000}


def test_sidecars_decide_fit():
    node = make_node(allocatable={"cpu": 2000, "pods": 10})
    with_sidecar = make_pod(
        initContainers=[container("proxy", requests={"cpu": "1"}, restartPolicy="Always")],
        containers=[container(requests={"cpu": "1500m"})],
    )
    assert verdict(with_sidecar, node).reasons == ["Insufficient cpu: requested 2.5, free 2 of 2"]


@pytest.mark.parametrize("name", ["hugepages-2Mi", "ephemeral-storage"])
def test_storage_and_hugepages_are_checked(name):
    node = make_node(allocatable={name: 2 * GiB, "pods": 10})
    result = verdict(make_pod(containers=[container(requests={name: "4Gi"}, limits={name: "4Gi"})]), node)
    assert result.reasons == [f"Insufficient {name}: requested 4Gi, free 2Gi of 2Gi"]


def test_resources_the_scheduler_does_not_compare_are_ignored():
    prepared = prepare_pod(make_pod(containers=[container(requests={"storage": "1Ti", "cpu": "1"})]))
    assert prepared.requests == {"cpu": 1000}


@given(request=st.integers(0, 10_000), allocatable=st.integers(0, 10_000), used=st.integers(0, 10_000))
def test_fit_is_request_at_most_free(request, allocatable, used):
    node = make_node(allocatable={"example.com/dev": allocatable, "pods": 10}, requested={"example.com/dev": used})
    pod = make_pod(containers=[container(limits={"example.com/dev": str(request)})])
    assert verdict(pod, node).fits is (request == 0 or request <= allocatable - used)


# ------------------------------------------------------------------------------------ nodes from kubectl


def k8s_node(name, *, allocatable=None, labels=None, taints=None, unschedulable=None) -> dict:
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {},
        "status": {
            "allocatable": allocatable
            or {
                "cpu": "3500m",
                "memory": "16Gi",
                "pods": "110",
                "nvidia.com/gpu": "8",
                "ephemeral-storage": "100G",
            },
            "capacity": {"cpu": "4"},
        },
    }
    if taints is not None:
        node["spec"]["taints"] = taints
    if unschedulable is not None:
        node["spec"]["unschedulable"] = unschedulable
    return node


def k8s_pod(name, node_name, phase="Running", *, cpu="1", gpu=None, init_cpu=None) -> dict:
    limits = {"nvidia.com/gpu": gpu} if gpu else None
    spec = {"nodeName": node_name, "containers": [container(requests={"cpu": cpu}, limits=limits)]}
    if init_cpu:
        spec["initContainers"] = [container("init", requests={"cpu": init_cpu})]
    return {"metadata": {"name": name, "namespace": "team"}, "spec": spec, "status": {"phase": phase}}


def test_node_info_from_k8s_parses_units_and_skips_terminal_pods():
    node = k8s_node(
        "gpu-1",
        labels={"zone": "a"},
        unschedulable=True,
        taints=[GPU_TAINT, {"key": "spot", "effect": "PreferNoSchedule"}],
    )
    pods = [
        k8s_pod("a", "gpu-1", cpu="500m", gpu="2"),
        k8s_pod("b", "gpu-1", "Pending", cpu="1", init_cpu="2"),
        k8s_pod("done", "gpu-1", "Succeeded", cpu="100"),
        k8s_pod("bad", "gpu-1", "Failed", cpu="100"),
    ]
    info = NodeInfo.from_k8s(node, pods)
    assert info.name == "gpu-1"
    assert info.labels == {"zone": "a"}
    assert info.unschedulable is True
    assert info.allocatable == {
        "cpu": 3500,
        "memory": 16 * GiB,
        "pods": 110,
        "nvidia.com/gpu": 8,
        "ephemeral-storage": 100 * 10**9,
    }
    assert info.requested == {"cpu": 2500, "nvidia.com/gpu": 2}
    assert info.pod_count == 2
    assert info.hard_taints == (("nvidia.com/gpu", "true", "NoSchedule"),)


def test_node_info_from_k8s_defaults():
    info = NodeInfo.from_k8s({"metadata": {"name": "bare"}})
    assert (
        info.labels,
        info.taints,
        info.unschedulable,
        info.allocatable,
        info.requested,
        info.pod_count,
    ) == ({}, [], False, {}, {}, 0)
    assert verdict(make_pod(), info).reasons[0].startswith("Too many pods")  # no allocatable pods


@pytest.mark.parametrize(
    ("node", "pods", "in_message"),
    [
        ({"metadata": {}}, [], "metadata.name"),
        (k8s_node("n", allocatable={"cpu": "1K"}), [], "node n"),
        (k8s_node("n"), [k8s_pod("x", "n", cpu="one")], "pod team/x on node n"),
    ],
)
def test_node_info_from_k8s_errors_name_the_culprit(node, pods, in_message):
    with pytest.raises(EngineError) as caught:
        NodeInfo.from_k8s(node, pods)
    assert in_message in str(caught.value)


def test_malformed_taints_are_refused_not_ignored():
    with pytest.raises(EngineError, match="every taint must be an object"):
        NodeInfo.from_k8s({"metadata": {"name": "n"}, "spec": {"taints": ["gpu:NoSchedule"]}})


def test_nodes_from_kubectl_joins_pods_by_node_name():
    nodes_json = {"kind": "List", "items": [k8s_node("a"), k8s_node("b")]}
    pods_json = {
        "kind": "List",
        "items": [
            k8s_pod("p1", "a", cpu="1"),
            k8s_pod("p2", "a", cpu="2"),
            k8s_pod("p3", "b", gpu="8", cpu="0"),
            {
                "metadata": {"name": "pending"},
                "spec": {"containers": [container(requests={"cpu": "9"})]},
                "status": {"phase": "Pending"},
            },
            k8s_pod("gone", "a", "Succeeded", cpu="50"),
            k8s_pod("elsewhere", "c", cpu="1"),
        ],
    }
    a, b = nodes_from_kubectl(nodes_json, pods_json)
    assert (a.name, a.requested, a.pod_count) == ("a", {"cpu": 3000}, 2)
    assert (b.name, b.requested, b.pod_count) == ("b", {"cpu": 0, "nvidia.com/gpu": 8}, 1)
    gpu_pod = make_pod(containers=[container(limits={"nvidia.com/gpu": "1"})])
    assert [v.fits for v in place(gpu_pod, [a, b])] == [True, False]
    assert nodes_from_kubectl(nodes_json)[0].requested == {}


@pytest.mark.parametrize("document", [{}, {"items": None}, {"items": ["x"]}, []])
def test_nodes_from_kubectl_rejects_non_lists(document):
    with pytest.raises(EngineError):
        nodes_from_kubectl(document)


def test_a_byte_amount_that_is_no_whole_unit_is_shown_in_binary_units_with_one_decimal():
    from pools.engine.placement_fit import show_amount

    assert show_amount("ephemeral-storage", 482098327716) == "449Gi"  # a node's real capacity
    assert show_amount("memory", 5 * 1024**4 + 7) == "5Ti"
    assert show_amount("memory", 1500) == "1.5Ki"
    assert show_amount("memory", 1023) == "1023"
    assert show_amount("memory", 2 * 1024**3) == "2Gi"


def test_a_request_above_the_free_amount_never_reads_as_equal_to_it():
    node = make_node(allocatable={"memory": 482098327716, "pods": 10}, requested={})
    pod = make_pod(containers=[container(requests={"memory": "482098328716"})])
    assert verdict(pod, node).reasons == ["Insufficient memory: requested 482098328716, free 482098327716 of 449Gi"]
    pod = make_pod(containers=[container(requests={"memory": "500Gi"})])
    assert verdict(pod, node).reasons == ["Insufficient memory: requested 500Gi, free 449Gi of 449Gi"]
