"""Simulated fleets: the demo cluster behind the dev server, and big synthetic ones for benchmarks.

Pod templates select nodes with the label constants below; keep them in sync with the portal.

Demo machine pools (node names are ``<pool>-node-<i>``; both ``MACHINE_POOL_LABEL=<pool>`` and
``MACHINEPOOL_LABEL=<pool>``, the label the ROSA machine-pools seed selects on)::

    pool         nodes  product (GPU_PRODUCT_LABEL)  gpus/node  arch   instance type        taints
    h100         4      NVIDIA-H100-80GB-HBM3        8          amd64  p5.48xlarge          gpu
    a100         3      NVIDIA-A100-SXM4-80GB        8          amd64  p4de.24xlarge        gpu  (a100-node-2 cordoned)
    gb200        2      NVIDIA-GB200                 4          arm64  p6e-gb200.36xlarge   gpu
    l40s         4      NVIDIA-L40S                  4          amd64  g6e.12xlarge         gpu
    l40          3      NVIDIA-L40                   4          amd64  l40.x4.24xlarge      gpu
    t4-spot      3      Tesla-T4                     1          amd64  g4dn.xlarge          gpu + spot
    jetson-thor  2      NVIDIA-Jetson-Thor           1          arm64  jetson-agx-thor      gpu
    cpu          4      -                            0          amd64  m6i.8xlarge          -
    additional   2      -                            0          amd64  m5.xlarge            batch
    ml-training  2      Tesla-T4                     1          amd64  g4dn.xlarge          gpu + spot

``gpu`` = ``nvidia.com/gpu=true:NoSchedule`` (GPU_TAINT); ``spot`` = ``spot=true:PreferNoSchedule``
(SPOT_TAINT); ``batch`` = ``workload-type=batch:NoSchedule`` (BATCH_TAINT). ``additional`` and
``ml-training`` are the ROSA machine-pools seed's two pools, with its labels (POOL_LABELS: ``workload-type``
/ ``team``; ``node-type=gpu`` / ``ml-framework``) so its example Jobs place unchanged
(docs/examples/placement/rosa-*.yaml). The cordoned node also carries the
``node.kubernetes.io/unschedulable:NoSchedule`` taint the node controller adds.

With machine pools (``python -m kubesim --fleet demo --machine-pools demo``, what ``make dev`` runs), those two
are machine pools of the cloud instead (DEMO_MACHINE_POOLS in the OCM store, cluster DEMO_OCM_CLUSTER_ID):
``additional`` keeps 2 nodes (autoscaling 2-5) and ``ml-training`` starts at 0 nodes (0-3, spot) and grows
when a pod that tolerates its taints waits for a T4 (kubesim.autoscaler); their nodes are named
``<pool>-<5 random characters>`` and carry the machine-pool labels (kubesim.machinepools), not the static ones.

The demo's clusters (``python -m kubesim --fleet demo-clusters``, what ``make dev`` runs): each demo backend
(pools/demo/backends.yaml) is its own simulated cluster, under ``/clusters/<backend>``, holding the nodes its pools'
platforms select (DEMO_CLUSTERS; node names stay unique across them, a pool's indices continuing)::

    cluster               nodes
    gpu-cluster-01        h100-node-0..3, a100-node-0..2 (a100-node-2 cordoned), gb200-node-0..1
    graphics-cluster-01   l40s-node-0..3, l40-node-0..2
    inference-cluster-01  t4-spot-node-0..2, jetson-thor-node-0..1, cpu-node-0..3
    dev-cluster-01        cpu-node-4..5, t4-spot-node-3
    default               l40s-node-4, a100-node-3
    rosa-cluster-01       the machine pools additional (2 nodes) and ml-training (0, grows for a T4 pod)
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterable
from typing import Any

# --------------------------------------------------------------------------- label keys
GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"
GPU_COUNT_LABEL = "nvidia.com/gpu.count"
GPU_MEMORY_LABEL = "nvidia.com/gpu.memory"  # MiB per GPU, as GPU feature discovery writes it
GPU_FAMILY_LABEL = "nvidia.com/gpu.family"
GPU_PRESENT_LABEL = "nvidia.com/gpu.present"
GPU_RESOURCE = "nvidia.com/gpu"
MACHINE_POOL_LABEL = "hive.openshift.io/machine-pool"
MACHINEPOOL_LABEL = "node.kubernetes.io/machinepool"  # what ROSA's machine-pool docs select on
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
ARCH_LABEL = "kubernetes.io/arch"
OS_LABEL = "kubernetes.io/os"
HOSTNAME_LABEL = "kubernetes.io/hostname"
ZONE_LABEL = "topology.kubernetes.io/zone"
REGION_LABEL = "topology.kubernetes.io/region"
CAPACITY_TYPE_LABEL = "node.kubernetes.io/capacity-type"  # "spot" | "on-demand"
WORKER_ROLE_LABEL = "node-role.kubernetes.io/worker"

# --------------------------------------------------------------------------- label values
GPU_PRODUCTS: dict[str, str] = {  # short name -> GPU_PRODUCT_LABEL value
    "H100": "NVIDIA-H100-80GB-HBM3",
    "A100": "NVIDIA-A100-SXM4-80GB",
    "GB200": "NVIDIA-GB200",
    "L40S": "NVIDIA-L40S",
    "L40": "NVIDIA-L40",
    "T4": "Tesla-T4",
    "JETSON_THOR": "NVIDIA-Jetson-Thor",
}
GPU_MEMORY_MIB: dict[str, int] = {
    "H100": 81559,
    "A100": 81920,
    "GB200": 189471,
    "L40S": 46068,
    "L40": 46068,
    "T4": 15360,
    "JETSON_THOR": 131072,
}
GPU_FAMILIES: dict[str, str] = {
    "H100": "hopper",
    "A100": "ampere",
    "GB200": "blackwell",
    "L40S": "ada-lovelace",
    "L40": "ada-lovelace",
    "T4": "turing",
    "JETSON_THOR": "blackwell",
}
REGION = "us-east-1"
ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")

# --------------------------------------------------------------------------- taints
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}
SPOT_TAINT = {"key": "spot", "value": "true", "effect": "PreferNoSchedule"}
BATCH_TAINT = {"key": "workload-type", "value": "batch", "effect": "NoSchedule"}
UNSCHEDULABLE_TAINT = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
SPOT_TOLERATION = {"key": "spot", "operator": "Equal", "value": "true", "effect": "PreferNoSchedule"}
BATCH_TOLERATION = {"key": "workload-type", "operator": "Equal", "value": "batch", "effect": "NoSchedule"}

# --------------------------------------------------------------------------- machine pools
# name: (gpu short name or None, nodes, gpus/node, arch, instance type, cpu, memory GiB, spot)
MACHINE_POOLS: dict[str, tuple[str | None, int, int, str, str, int, int, bool]] = {
    "h100": ("H100", 4, 8, "amd64", "p5.48xlarge", 192, 2048, False),
    "a100": ("A100", 3, 8, "amd64", "p4de.24xlarge", 96, 1152, False),
    "gb200": ("GB200", 2, 4, "arm64", "p6e-gb200.36xlarge", 144, 960, False),
    "l40s": ("L40S", 4, 4, "amd64", "g6e.12xlarge", 48, 384, False),
    "l40": ("L40", 3, 4, "amd64", "l40.x4.24xlarge", 96, 512, False),
    "t4-spot": ("T4", 3, 1, "amd64", "g4dn.xlarge", 4, 16, True),
    "jetson-thor": ("JETSON_THOR", 2, 1, "arm64", "jetson-agx-thor", 14, 128, False),
    "cpu": (None, 4, 0, "amd64", "m6i.8xlarge", 32, 128, False),
    "additional": (None, 2, 0, "amd64", "m5.xlarge", 4, 16, False),
    "ml-training": ("T4", 2, 1, "amd64", "g4dn.xlarge", 4, 16, True),
}
# The ROSA machine-pools seed's labels and taints beyond the GPU / spot ones every pool gets from its flags.
POOL_LABELS: dict[str, dict[str, str]] = {
    "additional": {"workload-type": "batch", "team": "data-engineering"},
    "ml-training": {"node-type": "gpu", "ml-framework": "pytorch"},
}
POOL_TAINTS: dict[str, list[dict[str, str]]] = {"additional": [BATCH_TAINT]}
POOL_TOLERATIONS: dict[str, list[dict[str, str]]] = {"additional": [BATCH_TOLERATION]}
CORDONED_NODE = "a100-node-2"
# Multi-GPU training nodes carry their instance's local NVMe as the kubelet's ephemeral storage (a RAID0 volume,
# as GPU node setups on EKS and ROSA mount it), so the training seed's default task (500Gi of storage) fits
# them; the others keep a 500Gi root volume (449Gi allocatable).
LOCAL_NVME = {"h100", "a100", "gb200", "l40s", "l40"}
NVME_CAPACITY, NVME_ALLOCATABLE = "3500Gi", "3300Gi"


def node_manifest(
    pool: str, index: int, *, name: str | None = None, zone: str | None = None, created: str = "2025-01-01T00:00:00Z"
) -> dict[str, Any]:
    """One Node of machine pool ``pool`` (a key of MACHINE_POOLS), as a ROSA worker reports it."""
    gpu, _, gpus, arch, instance, cpu, mem_gib, spot = MACHINE_POOLS[pool]
    name = name or f"{pool}-node-{index}"
    zone = zone or ZONES[index % len(ZONES)]
    labels = {
        ARCH_LABEL: arch,
        OS_LABEL: "linux",
        HOSTNAME_LABEL: name,
        INSTANCE_TYPE_LABEL: instance,
        MACHINE_POOL_LABEL: pool,
        MACHINEPOOL_LABEL: pool,
        ZONE_LABEL: zone,
        REGION_LABEL: REGION,
        WORKER_ROLE_LABEL: "",
        CAPACITY_TYPE_LABEL: "spot" if spot else "on-demand",
        **POOL_LABELS.get(pool, {}),
    }
    taints: list[dict[str, str]] = [dict(taint) for taint in POOL_TAINTS.get(pool, ())]
    capacity = {
        "cpu": str(cpu),
        "memory": f"{mem_gib * 1024 * 1024}Ki",
        "pods": "250" if cpu >= 32 else "110",
        "ephemeral-storage": NVME_CAPACITY if pool in LOCAL_NVME else "524275692Ki",
        "hugepages-1Gi": "0",
        "hugepages-2Mi": "0",
    }
    allocatable = {
        "cpu": f"{cpu * 1000 - 500}m",
        "memory": f"{(mem_gib - 2) * 1024 * 1024}Ki",
        "pods": capacity["pods"],
        "ephemeral-storage": NVME_ALLOCATABLE if pool in LOCAL_NVME else "482098327716",
        "hugepages-1Gi": "0",
        "hugepages-2Mi": "0",
    }
    if gpu:
        labels.update(
            {
                GPU_PRODUCT_LABEL: GPU_PRODUCTS[gpu],
                GPU_COUNT_LABEL: str(gpus),
                GPU_MEMORY_LABEL: str(GPU_MEMORY_MIB[gpu]),
                GPU_FAMILY_LABEL: GPU_FAMILIES[gpu],
                GPU_PRESENT_LABEL: "true",
            }
        )
        capacity[GPU_RESOURCE] = allocatable[GPU_RESOURCE] = str(gpus)
        taints.append(dict(GPU_TAINT))
    if spot:
        taints.append(dict(SPOT_TAINT))
    spec: dict[str, Any] = {"providerID": f"aws:///{zone}/i-{uuid.uuid5(uuid.NAMESPACE_DNS, name).hex[:17]}"}
    if name == CORDONED_NODE:
        spec["unschedulable"] = True
        taints.append(dict(UNSCHEDULABLE_TAINT))
    if taints:
        spec["taints"] = taints
    ip = f"10.0.{index % 250}.{(sum(map(ord, name)) % 250) + 2}"
    conditions = [
        {
            "type": t,
            "status": "False",
            "reason": f"KubeletHasSufficient{r}",
            "message": m,
            "lastHeartbeatTime": created,
            "lastTransitionTime": created,
        }
        for t, r, m in (
            ("MemoryPressure", "Memory", "kubelet has sufficient memory available"),
            ("DiskPressure", "Disk", "kubelet has no disk pressure"),
            ("PIDPressure", "PID", "kubelet has sufficient PID available"),
        )
    ] + [
        {
            "type": "Ready",
            "status": "True",
            "reason": "KubeletReady",
            "message": "kubelet is posting ready status",
            "lastHeartbeatTime": created,
            "lastTransitionTime": created,
        }
    ]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": labels,
            "creationTimestamp": created,
            "annotations": {"machine.openshift.io/machine": f"openshift-machine-api/{name}"},
        },
        "spec": spec,
        "status": {
            "capacity": capacity,
            "allocatable": allocatable,
            "conditions": conditions,
            "addresses": [{"type": "InternalIP", "address": ip}, {"type": "Hostname", "address": name}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": node_info(
                arch, uuid.uuid5(uuid.NAMESPACE_URL, name).hex, name, str(uuid.uuid5(uuid.NAMESPACE_OID, name))
            ),
        },
    }


def node_info(arch: str, machine_id: str, system_uuid: str, boot_id: str) -> dict[str, str]:
    """status.nodeInfo as the kubelet of a ROSA worker reports it."""
    return {
        "architecture": arch,
        "operatingSystem": "linux",
        "kubeletVersion": "v1.33.0",
        "kubeProxyVersion": "",
        "containerRuntimeVersion": "cri-o://1.33.0",
        "osImage": "Red Hat Enterprise Linux CoreOS 9.6",
        "kernelVersion": "5.14.0-570.el9.x86_64",
        "machineID": machine_id,
        "systemUUID": system_uuid,
        "bootID": boot_id,
    }


def demo_fleet(machine_pools: bool = False) -> list[dict[str, Any]]:
    """The 29 nodes of MACHINE_POOLS, with exactly one cordoned node (CORDONED_NODE); ``machine_pools``: without
    the nodes of DEMO_MACHINE_POOLS (the cloud makes those)."""
    skip = set(DEMO_MACHINE_POOLS) if machine_pools else set()
    return [node_manifest(pool, i) for pool, spec in MACHINE_POOLS.items() if pool not in skip for i in range(spec[1])]


# --------------------------------------------------------------------------- the demo's cloud machine pools
DEMO_OCM_CLUSTER_ID = "pool-portal-demo"  # the OCM cluster id a demo backend names (Backend.ocm_cluster_id)


def _ocm_pool(pool_id: str, instance_type: str, low: int, high: int, spot: bool) -> dict[str, Any]:
    pool: dict[str, Any] = {
        "kind": "MachinePool",
        "id": pool_id,
        "href": f"/api/clusters_mgmt/v1/clusters/{DEMO_OCM_CLUSTER_ID}/machine_pools/{pool_id}",
        "instance_type": instance_type,
        "autoscaling": {"min_replicas": low, "max_replicas": high},
        # made by the portal (its demo backend rosa-cluster-01), which marks the pools it manages
        "labels": {**POOL_LABELS[pool_id], "app.kubernetes.io/managed-by": "pool-portal"},
        "taints": [dict(t) for t in POOL_TAINTS.get(pool_id, ())],
        "root_volume": {"aws": {"size": 300}},
        "status": {"current_replicas": 0},
    }
    if spot:
        pool["taints"] += [dict(GPU_TAINT), dict(SPOT_TAINT)]
        pool["aws"] = {"spot_market_options": {}}  # no max price: capped at the on-demand price
    return pool


DEMO_MACHINE_POOLS: dict[str, dict[str, Any]] = {  # OCM MachinePool JSON by id (the seed's two pools)
    "additional": _ocm_pool("additional", "m5.xlarge", 2, 5, spot=False),
    "ml-training": _ocm_pool("ml-training", "g4dn.xlarge", 0, 3, spot=True),
}


# backend name -> {MACHINE_POOLS pool: node indices}; rosa-cluster-01's nodes are made by its machine pools
DEMO_CLUSTERS: dict[str, dict[str, range]] = {
    "gpu-cluster-01": {"h100": range(4), "a100": range(3), "gb200": range(2)},
    "graphics-cluster-01": {"l40s": range(4), "l40": range(3)},
    "inference-cluster-01": {"t4-spot": range(3), "jetson-thor": range(2), "cpu": range(4)},
    "dev-cluster-01": {"cpu": range(4, 6), "t4-spot": range(3, 4)},  # team-development: cpu-only, small-gpu (T4)
    "default": {"l40s": range(4, 5), "a100": range(3, 4)},  # heterogeneous_pool: l40s_platform, a100_platform
    "rosa-cluster-01": {},
}
DEMO_MACHINE_POOL_CLUSTER = "rosa-cluster-01"  # the backend whose cloud holds DEMO_MACHINE_POOLS


def demo_cluster_fleet(cluster: str) -> list[dict[str, Any]]:
    """The nodes of the demo's cluster ``cluster`` (a key of DEMO_CLUSTERS)."""
    return [node_manifest(pool, i) for pool, indices in DEMO_CLUSTERS[cluster].items() for i in indices]


def synthetic_fleet(n_nodes: int, n_pods: int, seed: int = 0) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``n_nodes`` nodes spread over MACHINE_POOLS (by their demo proportions) and ``n_pods`` pods.

    Pods live in namespaces ``team-00`` .. ``team-19`` and target a pool (chosen in proportion to
    its nodes) by nodeSelector (GPU pods request 1-2 GPUs and tolerate the GPU taint; every pod tolerates
    its pool's POOL_TAINTS). About 80% are Running and 10% Succeeded, bound to a node of their pool that
    still has room for their cpu and GPUs (no overcommit); the rest, and those that found no room, are
    Pending without a node.
    Deterministic for a given seed; 5,000 nodes / 50,000 pods take about a second.
    """
    rng = random.Random(seed)
    rand = rng.random
    pools = list(MACHINE_POOLS)
    nodes, by_pool = [], {p: [] for p in pools}
    counters = dict.fromkeys(pools, 0)
    free: dict[str, list[int]] = {}  # node -> [cpu millicores, gpus]
    for pool in rng.choices(pools, [MACHINE_POOLS[p][1] for p in pools], k=n_nodes):
        i = counters[pool]
        counters[pool] += 1
        node = node_manifest(pool, i, name=f"{pool}-{i:05d}")  # never CORDONED_NODE's name
        nodes.append(node)
        name = node["metadata"]["name"]
        by_pool[pool].append(name)
        free[name] = [MACHINE_POOLS[pool][5] * 1000 - 500, MACHINE_POOLS[pool][2]]
    pool_table = [p for p in pools for _ in by_pool[p]] or ["cpu"]  # pods per pool ~ its nodes
    cpus, mems = (250, 500, 1000, 2000), ("1Gi", "2Gi", "4Gi", "8Gi")
    image = "registry.example/workload:1.0"
    created = "2025-01-01T00:00:00Z"
    pods = []
    for i in range(n_pods):
        pool = pool_table[int(rand() * len(pool_table))]
        gpu = MACHINE_POOLS[pool][0]
        roll = rand()
        phase = "Running" if roll < 0.8 else ("Succeeded" if roll < 0.9 else "Pending")
        cpu = cpus[int(rand() * 4)]
        n_gpu = (2 if rand() < 0.25 else 1) if gpu else 0
        node_name = None
        if phase != "Pending" and by_pool.get(pool):
            candidates = by_pool[pool]
            for _ in range(3):
                pick = candidates[int(rand() * len(candidates))]
                room = free[pick]
                if room[0] >= cpu and room[1] >= n_gpu:
                    if phase == "Running":
                        room[0] -= cpu
                        room[1] -= n_gpu
                    node_name = pick
                    break
            else:
                phase = "Pending"
        requests = {"cpu": f"{cpu}m", "memory": mems[int(rand() * 4)]}
        if n_gpu:
            requests[GPU_RESOURCE] = str(n_gpu)
        spec: dict[str, Any] = {
            "containers": [
                {"name": "main", "image": image, "resources": {"requests": requests, "limits": dict(requests)}}
            ],
            "restartPolicy": "Never",
            "schedulerName": "default-scheduler",
            "nodeSelector": {MACHINE_POOL_LABEL: pool},
        }
        tolerations = ([dict(GPU_TOLERATION)] if gpu else []) + [dict(t) for t in POOL_TOLERATIONS.get(pool, ())]
        if tolerations:
            spec["tolerations"] = tolerations
        status: dict[str, Any] = {"phase": phase, "qosClass": "Guaranteed"}
        if node_name:
            spec["nodeName"] = node_name
            status["startTime"] = created
        pods.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": f"job-{i:06d}",
                    "namespace": f"team-{i % 20:02d}",
                    "creationTimestamp": created,
                    "labels": {"app": f"job-{i % 500}", "kubesim/pool": pool},
                },
                "spec": spec,
                "status": status,
            }
        )
    return nodes, pods


def load_fleet(target: Any, nodes: Iterable[dict[str, Any]], pods: Iterable[dict[str, Any]] = ()) -> None:
    """Insert nodes and pods straight into an emulator (or an EmulatorServer's), without HTTP.

    Namespaces the pods name are created on the fly. The dicts are adopted, not copied.
    """
    emulator = getattr(target, "emulator", target)
    emulator.load("nodes", nodes)
    emulator.load("pods", pods)
