"""Pod manifest validation: strict schema from kubernetes_validate plus our semantic checks."""

from __future__ import annotations

import copy

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pools.engine.errors import EngineError
from pools.engine.schema import Violation, _checker_for, _schema_version, supported_versions, validate_pod


def typical_pod() -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "train-0",
            "namespace": "team-a",
            "labels": {"app": "train", "example.com/pool": "h100"},
            "annotations": {"example.com/owner": "alice"},
        },
        "spec": {
            "restartPolicy": "Never",
            "nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-H100"},
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {"matchExpressions": [{"key": "driver", "operator": "Gt", "values": ["0540"]}]}
                        ]
                    }
                }
            },
            "containers": [
                {
                    "name": "main",
                    "image": "nvcr.io/train:1",
                    "command": ["python", "train.py"],
                    "env": [{"name": "EPOCHS", "value": "3"}],
                    "resources": {
                        "requests": {"cpu": "8", "memory": "64Gi", "nvidia.com/gpu": "8"},
                        "limits": {"cpu": 8, "memory": "64Gi", "nvidia.com/gpu": 8},
                    },
                    "volumeMounts": [{"name": "data", "mountPath": "/data"}],
                    "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
                },
                {
                    "name": "ctrl",
                    "image": "osmo/ctrl:1",
                    "imagePullPolicy": "IfNotPresent",
                    "resources": {
                        "requests": {"cpu": "1", "memory": "1Gi"},
                        "limits": {"cpu": "1", "memory": "1Gi"},
                    },
                },
            ],
            "initContainers": [{"name": "proxy", "image": "envoy", "restartPolicy": "Always"}],
            "volumes": [{"name": "data", "emptyDir": {}}],
        },
    }


def mutate(change) -> dict:
    pod = typical_pod()
    change(pod)
    return pod


def paths(violations: list[Violation]) -> dict[str, str]:
    return {v.path: v.reason for v in violations}


def test_typical_pod_is_valid():
    assert validate_pod(typical_pod()) == []


def test_minimal_pod_is_valid():
    assert (
        validate_pod(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "x"},
                "spec": {"containers": [{"name": "c", "image": "busybox"}]},
            }
        )
        == []
    )


# (mutation, path, words the reason must contain)
SCHEMA_CASES = [
    (lambda p: p["spec"]["containers"][0].update(bogus=1), "spec.containers[0].bogus", "unknown field"),
    (lambda p: p.update(extra={}), "extra", "unknown field"),
    (lambda p: p["spec"]["containers"][1].pop("name"), "spec.containers[1].name", "required"),
    (lambda p: p["spec"].pop("containers"), "spec.containers", "required"),
    (
        lambda p: p["spec"]["containers"][0].update(command="python"),
        "spec.containers[0].command",
        "must be a list",
    ),
    (
        lambda p: p["spec"]["containers"][0]["resources"]["limits"].update(cpu=[1]),
        "spec.containers[0].resources.limits.cpu",
        "must be a string or a number",
    ),
    (lambda p: p["spec"].update(hostNetwork="yes"), "spec.hostNetwork", "must be a boolean"),
    (
        lambda p: p["spec"]["containers"][0]["ports"][0].update(containerPort="80"),
        "spec.containers[0].ports[0].containerPort",
        "must be an integer",
    ),
    (lambda p: p.update(kind="Deployment"), "kind", "must be one of: Pod"),
    (lambda p: p.update(apiVersion="apps/v1"), "apiVersion", "must be one of: v1"),
    (lambda p: p["metadata"]["labels"].update(app=1), "metadata.labels.app", "must be a string"),
]


@pytest.mark.parametrize(("change", "path", "words"), SCHEMA_CASES)
def test_schema_violations_point_at_the_field(change, path, words):
    found = paths(validate_pod(mutate(change)))
    assert path in found, found
    assert words in found[path]


def _set(path: list, value):
    def change(pod):
        target = pod
        for part in path[:-1]:
            target = target[part]
        target[path[-1]] = value

    return change


C0 = ["spec", "containers", 0]
RES = [*C0, "resources"]

SEMANTIC_CASES = [
    # quantities and resource names
    (
        _set([*RES, "requests", "memory"], "1K"),
        "spec.containers[0].resources.requests.memory",
        "lowercase 'k'",
    ),
    (
        _set([*RES, "requests", "memory"], "64 Gi"),
        "spec.containers[0].resources.requests.memory",
        "not a quantity",
    ),
    (
        _set([*RES, "limits", "cpu"], "-1"),
        "spec.containers[0].resources.limits.cpu",
        "greater than or equal to 0",
    ),
    (
        _set([*RES, "requests", "cpu"], "9"),
        "spec.containers[0].resources.requests.cpu",
        "less than or equal to cpu limit of 8",
    ),
    (
        _set([*RES, "requests", "nvidia.com/gpu"], "4"),
        "spec.containers[0].resources.requests[nvidia.com/gpu]",
        "must be equal to nvidia.com/gpu limit of 8",
    ),
    (
        _set([*RES, "limits", "nvidia.com/gpu"], "0.5"),
        "spec.containers[0].resources.limits[nvidia.com/gpu]",
        "whole number",
    ),
    (
        _set([*RES, "limits", "nvidia.com/gpu"], "500m"),
        "spec.containers[0].resources.limits[nvidia.com/gpu]",
        "whole number",
    ),
    (
        _set([*RES, "requests", "example.com/fpga"], "1"),
        "spec.containers[0].resources.limits[example.com/fpga]",
        "limit must be set",
    ),
    (
        _set([*RES, "requests", "hugepages-2Mi"], "1Gi"),
        "spec.containers[0].resources.limits.hugepages-2Mi",
        "limit must be set",
    ),
    (
        _set([*RES, "requests", "gpu"], "1"),
        "spec.containers[0].resources.requests.gpu",
        "invalid resource name",
    ),
    (
        _set([*RES, "requests", "requests.example.com/x"], "1"),
        "spec.containers[0].resources.requests[requests.example.com/x]",
        "extended resource name",
    ),
    (
        _set([*RES, "requests", "Bad Name"], "1"),
        "spec.containers[0].resources.requests[Bad Name]",
        "invalid resource name",
    ),
    (_set(["spec", "overhead"], {"cpu": "1K"}), "spec.overhead.cpu", "lowercase 'k'"),
    # names
    (_set(["metadata", "name"], "Train_0"), "metadata.name", "DNS-1123 subdomain"),
    (_set(["metadata", "name"], "a" * 254), "metadata.name", "no more than 253"),
    (_set(["metadata", "namespace"], "team.a"), "metadata.namespace", "DNS-1123 label"),
    (lambda p: p["metadata"].pop("name"), "metadata.name", "name or generateName is required"),
    (_set([*C0, "name"], "Main"), "spec.containers[0].name", "DNS-1123 label"),
    (_set([*C0, "name"], "m" * 64), "spec.containers[0].name", "no more than 63"),
    (_set(["spec", "containers", 1, "name"], "main"), "spec.containers[1].name", "duplicate container name"),
    (
        _set(["spec", "initContainers", 0, "name"], "ctrl"),
        "spec.containers[1].name",
        "duplicate container name",
    ),
    (_set(["spec", "volumes", 0, "name"], "Data"), "spec.volumes[0].name", "DNS-1123 label"),
    (
        lambda p: p["spec"]["volumes"].append({"name": "data", "emptyDir": {}}),
        "spec.volumes[1].name",
        "duplicate",
    ),
    (_set([*C0, "volumeMounts", 0, "name"], "cache"), "spec.containers[0].volumeMounts[0].name", "not found"),
    (
        _set([*C0, "ports", 0, "name"], "web-http-service-port"),
        "spec.containers[0].ports[0].name",
        "15 characters",
    ),
    (_set([*C0, "ports", 0, "name"], "8080"), "spec.containers[0].ports[0].name", "at least one letter"),
    (_set([*C0, "ports", 0, "name"], "a--b"), "spec.containers[0].ports[0].name", "consecutive hyphens"),
    (_set([*C0, "ports", 0, "name"], "HTTP"), "spec.containers[0].ports[0].name", "lowercase"),
    (
        lambda p: p["spec"]["containers"][0]["ports"].append({"name": "http", "containerPort": 9090}),
        "spec.containers[0].ports[1].name",
        "duplicate port name",
    ),
    (
        _set([*C0, "ports", 0, "containerPort"], 0),
        "spec.containers[0].ports[0].containerPort",
        "between 1 and 65535",
    ),
    (
        _set([*C0, "ports", 0, "hostPort"], 70000),
        "spec.containers[0].ports[0].hostPort",
        "between 1 and 65535",
    ),
    # labels and annotations
    (_set(["metadata", "labels", "bad key"], "x"), "metadata.labels[bad key]", "key name part"),
    (_set(["metadata", "labels", "app"], "-train"), "metadata.labels.app", "alphanumeric"),
    (_set(["metadata", "labels", "app"], "x" * 64), "metadata.labels.app", "no more than 63"),
    (_set(["metadata", "labels", "a/b/c"], "x"), "metadata.labels[a/b/c]", "qualified name"),
    (
        _set(["metadata", "annotations", "Bad_Prefix.com/x"], "y"),
        "metadata.annotations[Bad_Prefix.com/x]",
        "prefix",
    ),
    (
        _set(["spec", "nodeSelector", "nvidia.com/gpu.product"], "NVIDIA H100"),
        "spec.nodeSelector[nvidia.com/gpu.product]",
        "alphanumeric",
    ),
    # enums
    (_set(["spec", "restartPolicy"], "Sometimes"), "spec.restartPolicy", "Always, OnFailure, Never"),
    (_set(["spec", "dnsPolicy"], "Cluster"), "spec.dnsPolicy", "ClusterFirst"),
    (_set(["spec", "preemptionPolicy"], "Always"), "spec.preemptionPolicy", "PreemptLowerPriority"),
    (_set([*C0, "imagePullPolicy"], "always"), "spec.containers[0].imagePullPolicy", "IfNotPresent"),
    (_set([*C0, "terminationMessagePolicy"], "Log"), "spec.containers[0].terminationMessagePolicy", "File"),
    (_set([*C0, "ports", 0, "protocol"], "HTTP"), "spec.containers[0].ports[0].protocol", "TCP, UDP, SCTP"),
    (_set(["spec", "os"], {"name": "darwin"}), "spec.os.name", "linux"),
    # containers
    (_set([*C0, "image"], ""), "spec.containers[0].image", "image is required"),
    (_set(["spec", "containers"], []), "spec.containers", "at least one container"),
    (
        _set([*C0, "restartPolicy"], "Always"),
        "spec.containers[0].restartPolicy",
        "only be set on init containers",
    ),
    (
        _set(["spec", "initContainers", 0, "restartPolicy"], "Never"),
        "spec.initContainers[0].restartPolicy",
        "allow only Always",
    ),
    (
        _set([*C0, "volumeMounts", 0, "mountPath"], ""),
        "spec.containers[0].volumeMounts[0].mountPath",
        "empty",
    ),
    # tolerations
    (
        _set(["spec", "tolerations", 0, "operator"], "Gt"),
        "spec.tolerations[0].operator",
        "TaintTolerationComparison",
    ),
    (_set(["spec", "tolerations", 0, "operator"], "In"), "spec.tolerations[0].operator", "Equal or Exists"),
    (
        _set(["spec", "tolerations", 0, "value"], "x"),
        "spec.tolerations[0].value",
        "empty when operator is Exists",
    ),
    (
        _set(["spec", "tolerations"], [{"operator": "Equal", "value": "x"}]),
        "spec.tolerations[0].operator",
        "must be Exists when key is empty",
    ),
    (
        _set(["spec", "tolerations"], [{"key": "k", "operator": "Exists", "tolerationSeconds": 5}]),
        "spec.tolerations[0].effect",
        "NoExecute",
    ),
    (_set(["spec", "tolerations", 0, "effect"], "NoRun"), "spec.tolerations[0].effect", "NoSchedule"),
    (
        _set(["spec", "tolerations"], [{"key": "k", "value": "not valid!"}]),
        "spec.tolerations[0].value",
        "alphanumeric",
    ),
    (_set(["spec", "tolerations", 0, "key"], "bad key"), "spec.tolerations[0].key", "name part"),
]

AFFINITY = ["spec", "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution"]
REQ_PATH = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
EXPR = [*AFFINITY, "nodeSelectorTerms", 0, "matchExpressions", 0]
EXPR_PATH = f"{REQ_PATH}.nodeSelectorTerms[0].matchExpressions[0]"
SEMANTIC_CASES += [
    (
        _set([*AFFINITY, "nodeSelectorTerms"], []),
        f"{REQ_PATH}.nodeSelectorTerms",
        "at least one node selector term",
    ),
    (_set(EXPR, {"key": "zone", "operator": "In", "values": []}), f"{EXPR_PATH}.values", "must be specified"),
    (
        _set(EXPR, {"key": "zone", "operator": "Exists", "values": ["a"]}),
        f"{EXPR_PATH}.values",
        "may not be specified",
    ),
    (
        _set(EXPR, {"key": "zone", "operator": "Gt", "values": ["a"]}),
        f"{EXPR_PATH}.values[0]",
        "must be an integer",
    ),
    (
        _set(EXPR, {"key": "zone", "operator": "Lt", "values": ["1", "2"]}),
        f"{EXPR_PATH}.values",
        "single value",
    ),
    (
        _set(EXPR, {"key": "zone", "operator": "Matches", "values": ["a"]}),
        f"{EXPR_PATH}.operator",
        "In, NotIn",
    ),
    (_set(EXPR, {"key": "bad key", "operator": "Exists"}), f"{EXPR_PATH}.key", "name part"),
    (
        _set(
            [*AFFINITY, "nodeSelectorTerms", 0],
            {"matchFields": [{"key": "spec.nodeName", "operator": "In", "values": ["a"]}]},
        ),
        f"{REQ_PATH}.nodeSelectorTerms[0].matchFields[0].key",
        "metadata.name",
    ),
    (
        _set(
            [*AFFINITY, "nodeSelectorTerms", 0],
            {"matchFields": [{"key": "metadata.name", "operator": "Exists"}]},
        ),
        f"{REQ_PATH}.nodeSelectorTerms[0].matchFields[0].operator",
        "In or NotIn",
    ),
    (
        _set(
            [*AFFINITY, "nodeSelectorTerms", 0],
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["a", "b"]}]},
        ),
        f"{REQ_PATH}.nodeSelectorTerms[0].matchFields[0].values",
        "exactly one value",
    ),
    (
        _set(
            ["spec", "affinity", "nodeAffinity", "preferredDuringSchedulingIgnoredDuringExecution"],
            [{"weight": 0, "preference": {"matchExpressions": [{"key": "z", "operator": "Exists"}]}}],
        ),
        "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight",
        "1-100",
    ),
]


@pytest.mark.parametrize(("change", "path", "words"), SEMANTIC_CASES)
def test_semantic_violations_point_at_the_field(change, path, words):
    found = paths(validate_pod(mutate(change)))
    assert path in found, found
    assert words in found[path]


@pytest.mark.parametrize(
    "change",
    [
        _set([*RES, "limits", "nvidia.com/gpu"], "8"),  # string vs int, same value
        _set([*RES, "requests", "cpu"], "7500m"),  # below the limit
        _set([*RES, "limits", "example.com/foo"], "2"),  # limit only: defaulting copies it
        _set([*RES, "limits", "hugepages-2Mi"], "1Gi"),
        _set(["metadata", "labels", "empty"], ""),
        _set(["spec", "tolerations"], [{"operator": "Exists"}]),
        _set(
            ["spec", "tolerations"],
            [{"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 1}],
        ),
        # API validation allows a negative Gt/Lt value; only the scheduler rejects it (invalid label value)
        _set(EXPR, {"key": "driver", "operator": "Lt", "values": ["-5"]}),
        _set([*C0, "ports", 0, "hostPort"], 0),
        lambda p: p["metadata"].pop("name") and p["metadata"].update(generateName="train-"),
    ],
)
def test_valid_variants_have_no_violations(change):
    assert validate_pod(mutate(change)) == []


def test_missing_top_level_fields():
    found = paths(validate_pod({}))
    assert {"apiVersion", "kind", "metadata", "spec"} <= set(found)


def test_several_problems_are_all_reported_once():
    def change(pod):
        pod["spec"]["containers"][0]["bogus"] = True
        pod["spec"]["containers"][0]["resources"]["requests"]["memory"] = "1K"
        pod["metadata"]["name"] = "Bad"

    found = validate_pod(mutate(change))
    assert len(found) == len(set(found)) == 3


def test_wrong_types_do_not_crash_semantic_checks():
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": "x",
        "spec": {
            "containers": [5, {"name": 3, "resources": "lots", "ports": "80"}],
            "tolerations": [None],
            "volumes": {"a": 1},
            "affinity": {
                "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": "x"}}
            },
        },
    }
    found = validate_pod(pod)
    assert found and all(isinstance(v, Violation) for v in found)


@pytest.mark.parametrize("manifest", [None, [], "pod"])
def test_non_object_manifest(manifest):
    assert validate_pod(manifest) == [Violation("", f"manifest must be an object, not {type(manifest).__name__}")]


def test_violation_serialises():
    violation = Violation("spec.containers[0].name", "required field is missing")
    assert violation.as_dict() == {"path": "spec.containers[0].name", "reason": "required field is missing"}
    assert str(violation) == "spec.containers[0].name: required field is missing"


# ---------------------------------------------------------------------------------------------- versions


@pytest.mark.parametrize(
    ("given", "resolved"), [("1.33", (1, 33)), ("v1.33", (1, 33)), ("1.33.4", (1, 33)), ("1.25", (1, 25))]
)
def test_version_resolution(given, resolved):
    assert _schema_version(given) == resolved


@pytest.mark.parametrize("version", ["1.99", "1.10", "latest", ""])
def test_unsupported_versions_raise(version):
    with pytest.raises(EngineError) as caught:
        validate_pod(typical_pod(), version)
    assert caught.value.field == "version"


def test_supported_versions_include_the_default():
    assert "1.33" in supported_versions()
    assert supported_versions() == sorted(supported_versions(), key=lambda v: tuple(map(int, v.split("."))))


def test_checker_is_built_once_per_version():
    assert _checker_for((1, 33)) is _checker_for((1, 33))


def test_schema_follows_the_requested_version():
    # sidecar containers (initContainers[].restartPolicy) arrived in 1.28
    assert paths(validate_pod(typical_pod(), "1.25")) == {"spec.initContainers[0].restartPolicy": "unknown field"}
    assert validate_pod(typical_pod(), "1.28") == []


# ------------------------------------------------------------- the fast checker agrees with jsonschema


def _jsonschema_valid(manifest) -> bool:
    checker = _checker_for((1, 33))
    return not any(True for _ in checker._jsonschema().iter_errors(manifest))


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-3, 70000)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from(["", "a", "Always", "8", "1Gi", "TCP", "v1", "Pod"]),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["name", "image", "x", "cpu"]), inner, max_size=3)
    ),
    max_leaves=6,
)


def _locations(value, prefix=()):
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _locations(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _locations(item, (*prefix, index))


LOCATIONS = [loc for loc in _locations(typical_pod()) if loc]


@settings(max_examples=300, deadline=None)
@given(location=st.sampled_from(LOCATIONS), value=JSON_VALUES, add_key=st.booleans())
def test_fast_checker_agrees_with_jsonschema(location, value, add_key):
    pod = typical_pod()
    target = pod
    for part in location[:-1]:
        target = target[part]
    if add_key and isinstance(target[location[-1]], dict):
        target[location[-1]]["name"] = value
    else:
        target[location[-1]] = value
    assert _checker_for((1, 33)).is_valid(pod) is _jsonschema_valid(pod)


def test_fast_checker_agrees_on_the_schema_cases():
    for change, _, _ in SCHEMA_CASES:
        pod = mutate(change)
        assert _checker_for((1, 33)).is_valid(pod) is _jsonschema_valid(pod) is False
    assert _checker_for((1, 33)).is_valid(typical_pod()) is _jsonschema_valid(typical_pod()) is True


def test_bundled_schema_loads_with_jsonschema():
    assert isinstance(_checker_for((1, 33))._jsonschema(), jsonschema.Draft202012Validator)


def test_typical_pod_is_not_modified():
    pod = typical_pod()
    before = copy.deepcopy(pod)
    validate_pod(pod)
    assert pod == before
