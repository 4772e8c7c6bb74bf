"""Placement preview and pool membership over a 5,000-node synthetic cluster (the Kubernetes envelope),
also with the would-be nodes of 20 scale-from-zero machine pools (docs/machine-pool-platforms.md).

Nodes mix GPU products, pool labels, GPU taints, spot taints, a few cordoned nodes and partly used
capacity, built deterministically (seeded) from `kubectl get nodes -o json`-shaped dicts.
"""

from __future__ import annotations

import random

from bench.harness import Row, measure
from clusters.machinepools.catalog import shipped
from clusters.machinepools.spec import MachinePoolSpec, Taint
from pools.engine.placement import NodeInfo, evaluate, fits, place, place_each, prepare_pod
from pools.engine.schema import validate_pod
from pools.services.scale_from_zero_node import WouldBeNode

NODE_COUNT = 5_000
PLATFORM_COUNT = 20
SCALE_FROM_ZERO_COUNT = 20
PRODUCTS = ("NVIDIA-H100-80GB-HBM3", "NVIDIA-A100-SXM4-80GB", "NVIDIA-L40S", "NVIDIA-GB200")
POOLS = ("training", "inference", "research", "shared", "batch")


def synthetic_node(index: int, rng: random.Random) -> dict:
    product = rng.choice(PRODUCTS)
    gpus = 8 if "L40S" not in product else 4
    taints = [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}]
    if rng.random() < 0.2:
        taints.append({"key": "cloud.example.com/spot", "value": "true", "effect": "PreferNoSchedule"})
    if rng.random() < 0.05:
        taints.append({"key": "maintenance", "effect": "NoExecute"})
    return {
        "metadata": {
            "name": f"gpu-node-{index:05d}",
            "labels": {
                "kubernetes.io/hostname": f"gpu-node-{index:05d}",
                "topology.kubernetes.io/zone": f"zone-{index % 3}",
                "nvidia.com/gpu.product": product,
                "nvidia.com/gpu.count": str(gpus),
                "nvidia.com/cuda.driver.major": rng.choice(("0535", "0550", "0570")),
                "pool.example.com/name": rng.choice(POOLS),
            },
        },
        "spec": {"taints": taints, "unschedulable": rng.random() < 0.02},
        "status": {
            "allocatable": {
                "cpu": "190",
                "memory": "1900Gi",
                "ephemeral-storage": "3500G",
                "nvidia.com/gpu": str(gpus),
                "pods": "110",
            }
        },
    }


def synthetic_pods_on(node: dict, rng: random.Random) -> list[dict]:
    used = rng.randint(0, 4)
    return [
        {
            "metadata": {"name": f"{node['metadata']['name']}-w{i}"},
            "status": {"phase": "Running"},
            "spec": {
                "nodeName": node["metadata"]["name"],
                "containers": [
                    {
                        "name": "main",
                        "resources": {
                            "requests": {"cpu": "20", "memory": "200Gi"},
                            "limits": {"nvidia.com/gpu": "2"},
                        },
                    }
                ],
            },
        }
        for i in range(used)
    ]


def synthetic_cluster(count: int = NODE_COUNT, seed: int = 7) -> list[NodeInfo]:
    rng = random.Random(seed)
    nodes = []
    for index in range(count):
        node = synthetic_node(index, rng)
        nodes.append(NodeInfo.from_k8s(node, synthetic_pods_on(node, rng)))
    return nodes


def training_pod() -> dict:
    return {
        "metadata": {"name": "train-0"},
        "spec": {
            "nodeSelector": {"pool.example.com/name": "training"},
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {
                                        "key": "nvidia.com/gpu.product",
                                        "operator": "In",
                                        "values": ["NVIDIA-H100-80GB-HBM3", "NVIDIA-GB200"],
                                    },
                                    {
                                        "key": "nvidia.com/cuda.driver.major",
                                        "operator": "Gt",
                                        "values": ["0540"],
                                    },
                                ]
                            }
                        ]
                    }
                }
            },
            "initContainers": [{"name": "fetch", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}],
            "containers": [
                {
                    "name": "main",
                    "image": "nvcr.io/train",
                    "resources": {
                        "requests": {"cpu": "32", "memory": "500Gi"},
                        "limits": {"nvidia.com/gpu": "4"},
                    },
                },
                {
                    "name": "ctrl",
                    "image": "osmo/ctrl",
                    "resources": {"requests": {"cpu": "1", "memory": "1Gi"}},
                },
            ],
        },
    }


def scale_from_zero_pools(count: int = SCALE_FROM_ZERO_COUNT) -> list[WouldBeNode]:
    """Autoscaled machine pools with no node yet (GPU types of the shipped catalog, spot or not, GPU taints,
    the seed's `node-type: gpu` label on some): placement adds the node each would add."""
    catalog = shipped()
    gpu_types = sorted(name for name, instance in catalog.items() if instance.gpu_count)
    pools = []
    for index in range(count):
        instance = catalog[gpu_types[index % len(gpu_types)]]
        taints = [Taint("nvidia.com/gpu", "true", "NoSchedule")]
        if index % 2:
            taints.append(Taint("spot", "true", "PreferNoSchedule"))
        spec = MachinePoolSpec(
            name=f"zero-{index:02d}",
            instance_type=instance.name,
            max_replicas=3,
            labels={"node-type": "gpu"} if index % 4 == 0 else {"team": f"t{index}"},
            taints=tuple(taints),
            spot=bool(index % 2),
        )
        pools.append(WouldBeNode(spec, instance))
    return pools


def seed_gpu_job_pod() -> dict:
    """The seed's ML-training Job's pod (tolerations, `node-type: gpu`, one GPU), plus a CPU request."""
    return {
        "metadata": {"name": "ml-training"},
        "spec": {
            "tolerations": [
                {"key": "nvidia.com/gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"},
                {"key": "spot", "operator": "Equal", "value": "true", "effect": "PreferNoSchedule"},
            ],
            "nodeSelector": {"node-type": "gpu"},
            "containers": [
                {"name": "training", "image": "my-ml-image", "resources": {"limits": {"nvidia.com/gpu": "1"}}}
            ],
        },
    }


def platform_pods(count: int = PLATFORM_COUNT) -> list[dict]:
    """One membership probe per platform: pool label x GPU product, tolerating the GPU taint."""
    pods = []
    for index in range(count):
        pool, product = POOLS[index % len(POOLS)], PRODUCTS[index % len(PRODUCTS)]
        pods.append(
            {
                "metadata": {"name": f"platform-{index}"},
                "spec": {
                    "nodeSelector": {"pool.example.com/name": pool},
                    "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}],
                    "affinity": {
                        "nodeAffinity": {
                            "requiredDuringSchedulingIgnoredDuringExecution": {
                                "nodeSelectorTerms": [
                                    {
                                        "matchExpressions": [
                                            {
                                                "key": "nvidia.com/gpu.product",
                                                "operator": "In",
                                                "values": [product],
                                            }
                                        ]
                                    }
                                ]
                            }
                        }
                    },
                    "containers": [{"name": "probe", "image": "pause"}],
                },
            }
        )
    return pods


def manifest_pod() -> dict:
    """A resolved two-container pod as the portal submits it."""
    pod = training_pod()
    pod.update(apiVersion="v1", kind="Pod")
    pod["metadata"].update(namespace="team-a", labels={"app": "train", "example.com/pool": "training"})
    pod["spec"]["restartPolicy"] = "Never"
    main = pod["spec"]["containers"][0]
    main["resources"]["limits"].update(cpu="32", memory="500Gi")
    main.update(
        env=[{"name": "EPOCHS", "value": "3"}],
        volumeMounts=[{"name": "data", "mountPath": "/data"}],
        ports=[{"name": "http", "containerPort": 8080}],
    )
    pod["spec"]["volumes"] = [{"name": "data", "emptyDir": {}}]
    return pod


def run() -> list[Row]:
    nodes = synthetic_cluster()
    pod = prepare_pod(training_pod())
    platforms = [prepare_pod(p) for p in platform_pods()]
    fitting = sum(v.fits for v in place(pod, nodes))
    members = sum(evaluate(p, n, check_resources=False).fits for p in platforms for n in nodes)

    def membership() -> None:  # as pools.services.membership does: only whether each node fits
        for platform in platforms:
            fits(platform, nodes, check_resources=False)

    def membership_each() -> None:
        for platform in platforms:
            place_each(platform, nodes, check_resources=False)

    classes = len({(v.fits, tuple(v.reasons)) for v in place(pod, nodes)})
    would_be = scale_from_zero_pools()
    gpu_job = prepare_pod(seed_gpu_job_pod())

    def place_with_would_be(prepared) -> list:  # as pools.services.placement_nodes: would-be nodes built per call
        return place(prepared, nodes + [pool.node_info() for pool in would_be])

    landing = [v.node for v in place_with_would_be(gpu_job) if v.fits and v.would_be]
    return [
        measure(
            f"placement: 1 pod over {NODE_COUNT:,} nodes + {SCALE_FROM_ZERO_COUNT} scale-from-zero machine pools",
            lambda: place_with_would_be(pod),
            runs=30,
            target="≤ 50 ms per pod",
        ),
        measure(
            "  same, the seed's ML-training Job's pod",
            lambda: place_with_would_be(gpu_job),
            runs=30,
            target="≤ 50 ms per pod",
            note=f"lands on {len(landing)} would-be nodes",
        ),
        measure(
            f"placement: 1 pod over {NODE_COUNT:,} nodes (equivalence classes)",
            lambda: place(pod, nodes),
            runs=30,
            target="≤ 20 ms, p99 ≤ 50 ms",
            note=f"{fitting} nodes fit, {classes} distinct verdicts",
        ),
        measure(
            "  same, every filter on every node (place_each, the reference)",
            lambda: place_each(pod, nodes),
            runs=30,
        ),
        measure(
            f"membership: {PLATFORM_COUNT} platforms × {NODE_COUNT:,} nodes",
            membership,
            runs=5,
            target="≤ 2 s",
            note=f"{members} memberships",
        ),
        measure("  same, every filter on every node (place_each)", membership_each, runs=5),
        measure("prepare_pod: training pod", lambda: prepare_pod(training_pod()), runs=200),
        _schema_row(),
    ]


def _schema_row() -> Row:
    pod = manifest_pod()
    problems = validate_pod(pod)  # also loads and compiles the 1.33 schema once
    return measure(
        "schema: validate a 2-container pod",
        lambda: validate_pod(pod),
        runs=500,
        target="≤ 0.5 ms",
        note=f"{len(problems)} violations",
    )
