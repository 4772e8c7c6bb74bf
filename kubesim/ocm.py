"""The OpenShift Cluster Manager machine-pools API (clusters_mgmt v1), served beside the Kubernetes API.

What a ROSA cluster's machine pools look like to a client of ``https://api.openshift.com``:

    GET    /api/clusters_mgmt/v1/clusters/{cluster_id}/machine_pools          MachinePoolList
    POST   /api/clusters_mgmt/v1/clusters/{cluster_id}/machine_pools          201 MachinePool; 409 on a taken id
    GET    /api/clusters_mgmt/v1/clusters/{cluster_id}/machine_pools/{id}     MachinePool
    PATCH  /api/clusters_mgmt/v1/clusters/{cluster_id}/machine_pools/{id}     MachinePool; 400 on instance_type
    DELETE /api/clusters_mgmt/v1/clusters/{cluster_id}/machine_pools/{id}     204

with OCM's field names (``instance_type``, ``replicas`` or ``autoscaling.min_replicas/max_replicas``,
``labels``, ``taints``, ``aws.spot_market_options.max_price``, ``root_volume.aws.size``, ``status.current_replicas``)
and its error bodies (``{"kind": "Error", "id": "404", "href": ..., "code": "CLUSTERS-MGMT-404", "reason": ...}``).
Field names as in OCM's clusters_mgmt v1 model (openshift-online/ocm-api-model: MachinePool, AWSMachinePool,
AWSSpotMarketOptions, RootVolume, Taint; "replicas and autoscaling cannot be used together").
Every request needs ``Authorization: Bearer <token>``; once a test registered tokens (``ocm_add_cluster(...,
token=...)``), only those are accepted.

The state is the cloud's own: ``emulator.ocm_machine_pools = {cluster_id: {pool_id: MachinePool JSON}}``
(the simulated cluster makes nodes from it and writes ``status.current_replicas``). A cluster exists once
``ocm_add_cluster`` created it, with ROSA's default ``worker`` pool. ``ocm_fail_next(status=503, times=n)``
answers the next requests with an OCM error, as an outage does (``times=None``: until ``ocm_clear_failures``).

Like the real service it protects itself: a machine pool asks for at most ``ocm_max_nodes_per_pool`` nodes
(fixed replicas or autoscaling's max) and a cluster's pools together at most ``ocm_max_nodes_per_cluster``,
and never more than the cluster's topology allows (``ocm_add_cluster(topology=...)``: hosted control planes
500, classic 249, the rosa CLI's caps); it refuses what OCM and rosa refuse in zones (one, or the 3 of a
multi-AZ pool with replica counts in multiples of 3; one for hosted control planes), subnets (one), additional
security groups (sg- ids, at most 10) and AWS tags. Each refusal is a 400 in OCM's error shape, and nothing
is stored, so no client can have the simulated cluster make nodes without end.
"""

from __future__ import annotations

import copy
import json
import re
import threading
import unicodedata
import uuid
from typing import Any

import aiohttp.web

PREFIX = "/api/clusters_mgmt/v1/clusters/"
DEFAULT_POOL = "worker"
MAX_NODES_PER_POOL = 500
MAX_NODES_PER_CLUSTER = 500
# The rosa CLI's node caps (openshift/rosa pkg/machinepool/helper.go, commit 06370e89: hcpMaxNodesLimit 500,
# classic 249), the multi-AZ rule (pkg/machinepool/machinepool.go: replicas, min and max a multiple of 3) and
# its AWS tag rules (pkg/aws/helpers.go: UserTagKeyRE 1-128, UserTagValueRE up to 256, neither empty).
TOPOLOGY_MAX_NODES = {"hcp": 500, "classic": 249}
MULTI_AZ_ZONES = 3
SECURITY_GROUP = re.compile(r"^sg-([0-9a-f]{8}|[0-9a-f]{17})$")
SUBNET = re.compile(r"^subnet-([0-9a-f]{8}|[0-9a-f]{17})$")
MAX_SECURITY_GROUPS, MAX_TAGS = 10, 50
POOL_ID = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
_REASONS = {
    400: "Bad request",
    401: "Request is not authenticated",
    404: "Not found",
    409: "Conflict",
    503: "The service is temporarily unavailable",
}


class OcmError(Exception):
    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status, self.reason = status, reason

    def body(self) -> dict:
        return {
            "kind": "Error",
            "id": str(self.status),
            "href": f"/api/clusters_mgmt/v1/errors/{self.status}",
            "code": f"CLUSTERS-MGMT-{self.status}",
            "reason": self.reason,
            "operation_id": str(uuid.uuid4()),
        }


def _answer(body: Any, status: int = 200) -> aiohttp.web.Response:
    if body is None:
        return aiohttp.web.Response(status=status)
    return aiohttp.web.Response(text=json.dumps(body), status=status, content_type="application/json")


class OcmMachinePools:
    """Mixed into ``KubeEmulator``: the OCM state, its HTTP handler and the test switches."""

    def _init_ocm(self) -> None:
        self.ocm_machine_pools: dict[str, dict[str, dict]] = {}
        self.ocm_tokens: set[str] = set()
        self._ocm_failures: list[list] = []  # [status, times or None, reason, method or None]
        self._ocm_lock = threading.Lock()
        self.ocm_max_nodes_per_pool = MAX_NODES_PER_POOL
        self.ocm_max_nodes_per_cluster = MAX_NODES_PER_CLUSTER
        self.ocm_topology: dict[str, str] = {}  # cluster id -> "hcp" | "classic" (absent: hcp)

    # ----------------------------------------------------------------- test switches (thread-safe)
    def ocm_add_cluster(
        self, cluster_id: str, token: str | None = None, worker_replicas: int = 2, topology: str = "hcp"
    ) -> None:
        """A ROSA cluster with its default ``worker`` pool (m5.xlarge); ``token``: the one accepted; ``topology``:
        hcp (hosted control planes) or classic, whose node caps differ."""

        def add() -> None:
            self.ocm_topology[cluster_id] = topology
            if token:
                self.ocm_tokens.add(token)
            pools = self.ocm_machine_pools.setdefault(cluster_id, {})
            body = {"id": DEFAULT_POOL, "instance_type": "m5.xlarge", "replicas": worker_replicas}
            pools.setdefault(DEFAULT_POOL, _stored(cluster_id, body))

        self.run_in_loop(add)

    def ocm_fail_next(
        self, status: int = 503, times: int | None = 1, reason: str | None = None, method: str | None = None
    ) -> None:
        """Answer the next ``times`` requests (of ``method`` only, when given) with an OCM error."""
        with self._ocm_lock:
            self._ocm_failures.append([status, times, reason or _REASONS.get(status, "Error"), method])

    def ocm_clear_failures(self) -> None:
        with self._ocm_lock:
            self._ocm_failures.clear()

    def ocm_pool(self, cluster_id: str, pool_id: str) -> dict | None:
        return copy.deepcopy(self.run_in_loop(lambda: self.ocm_machine_pools.get(cluster_id, {}).get(pool_id)))

    def _ocm_check_caps(self, cluster_id: str, pools: dict[str, dict], pool: dict) -> None:
        """OCM's node limits, on the pool as it would be: per machine pool, then for the whole cluster (the
        topology's cap, or the test's lower one)."""
        topology = self.ocm_topology.get(cluster_id, "hcp")
        per_pool = min(self.ocm_max_nodes_per_pool, TOPOLOGY_MAX_NODES[topology])
        per_cluster = min(self.ocm_max_nodes_per_cluster, TOPOLOGY_MAX_NODES[topology])
        most = most_nodes(pool)
        if most > per_pool:
            raise OcmError(
                400,
                f"Machine pool '{pool['id']}': {most} nodes exceed the maximum of {per_pool} nodes per machine pool",
            )
        total = most + sum(most_nodes(other) for other_id, other in pools.items() if other_id != pool["id"])
        if total > per_cluster:
            raise OcmError(
                400,
                f"Cluster '{cluster_id}': its machine pools would have up to {total} compute nodes; the maximum "
                f"is {per_cluster}",
            )
        _check_placement(pool, topology)

    # ----------------------------------------------------------------- HTTP
    def serves_ocm(self, path: str) -> bool:
        return path.startswith(PREFIX)

    def serve_ocm(self, method: str, path: str, headers: dict, data: Any) -> aiohttp.web.Response:
        try:
            self._ocm_take_failure(method)
            self._ocm_authenticate(headers)
            return self._ocm_route(method, path, data)
        except OcmError as error:
            return _answer(error.body(), error.status)

    def _ocm_take_failure(self, method: str) -> None:
        with self._ocm_lock:
            failure = next((f for f in self._ocm_failures if f[3] in (None, method)), None)
            if failure is None:
                return
            if failure[1] is not None:
                failure[1] -= 1
                if failure[1] <= 0:
                    self._ocm_failures.remove(failure)
        raise OcmError(failure[0], failure[2])

    def _ocm_authenticate(self, headers: dict) -> None:
        scheme, _, token = (headers.get("Authorization") or headers.get("authorization") or "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise OcmError(401, "Request is not authenticated: an 'Authorization: Bearer <token>' header is needed")
        if self.ocm_tokens and token.strip() not in self.ocm_tokens:
            raise OcmError(401, "Request is not authenticated: the bearer token is invalid or expired")

    def _ocm_route(self, method: str, path: str, data: Any) -> aiohttp.web.Response:
        parts = path[len(PREFIX) :].strip("/").split("/")
        if len(parts) < 2 or parts[1] != "machine_pools" or len(parts) > 3:
            raise OcmError(404, f"Resource '{path}' doesn't exist")
        cluster_id = parts[0]
        pools = self.ocm_machine_pools.get(cluster_id)
        if pools is None:
            raise OcmError(404, f"Cluster '{cluster_id}' not found")
        if len(parts) == 2:
            if method == "GET":
                items = [copy.deepcopy(pool) for _, pool in sorted(pools.items())]
                return _answer(
                    {"kind": "MachinePoolList", "page": 1, "size": len(items), "total": len(items), "items": items}
                )
            if method == "POST":
                created = _create(cluster_id, pools, data)
                self._ocm_check_caps(cluster_id, pools, created)
                pools[created["id"]] = created
                return _answer(copy.deepcopy(created), 201)
            raise OcmError(405, f"Method {method} is not allowed on '{path}'")
        pool_id = parts[2]
        pool = pools.get(pool_id)
        if pool is None:
            raise OcmError(404, f"Machine pool '{pool_id}' not found for cluster '{cluster_id}'")
        if method == "GET":
            return _answer(copy.deepcopy(pool))
        if method == "PATCH":
            updated = _update(pool, data)
            self._ocm_check_caps(cluster_id, pools, updated)
            pool.clear()
            pool.update(updated)  # in place: the simulated cluster holds this dict to write its status into
            return _answer(copy.deepcopy(pool))
        if method == "DELETE":
            del pools[pool_id]
            return _answer(None, 204)
        raise OcmError(405, f"Method {method} is not allowed on '{path}'")


def _create(cluster_id: str, pools: dict[str, dict], data: Any) -> dict:
    if not isinstance(data, dict):
        raise OcmError(400, "The body must be a JSON object describing the machine pool")
    pool_id = data.get("id")
    if not isinstance(pool_id, str) or not POOL_ID.match(pool_id):
        raise OcmError(
            400, f"Machine pool id '{pool_id}' is invalid: lowercase letters, digits and '-', starting with a letter"
        )
    if pool_id in pools:
        raise OcmError(409, f"Machine pool with id '{pool_id}' already exists for cluster '{cluster_id}'")
    if not data.get("instance_type"):
        raise OcmError(400, "Attribute 'instance_type' is required for machine pools")
    _check(pool_id, data)
    return _stored(cluster_id, data)


def _update(pool: dict, data: Any) -> dict:
    """The pool as `data` changes it: a copy, stored by the caller once the cluster's caps are checked."""
    if not isinstance(data, dict):
        raise OcmError(400, "The body must be a JSON object describing the machine pool")
    wanted = data.get("instance_type")
    if wanted is not None and wanted != pool["instance_type"]:
        raise OcmError(
            400,
            f"Machine pool '{pool['id']}': attribute 'instance_type' cannot be changed after creation "
            f"(it is '{pool['instance_type']}', asked '{wanted}'); create a new machine pool instead",
        )
    _check(pool["id"], {**pool, **data} if "replicas" not in data and "autoscaling" not in data else data)
    pool = copy.deepcopy(pool)
    if "replicas" in data:
        pool.pop("autoscaling", None)
    if "autoscaling" in data:
        pool.pop("replicas", None)
    for key in ("replicas", "autoscaling", "labels", "taints", "aws", "root_volume", "availability_zones", "subnets"):
        if key in data:
            pool[key] = copy.deepcopy(data[key])
    return pool


def _check(pool_id: str, data: dict) -> None:
    """OCM's own refusals: replicas and autoscaling together, bounds, taint effects."""
    has_replicas, scaling = "replicas" in data, data.get("autoscaling")
    if has_replicas and scaling:
        raise OcmError(400, f"Machine pool '{pool_id}': replicas and autoscaling cannot be used together")
    if scaling:
        low, high = scaling.get("min_replicas"), scaling.get("max_replicas")
        if not isinstance(low, int) or not isinstance(high, int) or low < 0 or high < 1 or low > high:
            raise OcmError(
                400, f"Machine pool '{pool_id}': autoscaling needs 0 <= min_replicas <= max_replicas and max >= 1"
            )
    elif has_replicas and (not isinstance(data["replicas"], int) or data["replicas"] < 0):
        raise OcmError(400, f"Machine pool '{pool_id}': replicas must be a non-negative integer")
    for taint in data.get("taints") or ():
        if taint.get("effect") not in TAINT_EFFECTS:
            raise OcmError(
                400, f"Machine pool '{pool_id}': taint effect '{taint.get('effect')}' is not one of {TAINT_EFFECTS}"
            )


def _check_placement(pool: dict, topology: str) -> None:
    """Zones, subnets, security groups and tags as OCM and rosa refuse them."""
    pool_id, zones, subnets = pool["id"], pool.get("availability_zones") or [], pool.get("subnets") or []
    aws = pool.get("aws") or {}
    if len(subnets) > 1 or any(not isinstance(s, str) or not SUBNET.match(s) for s in subnets):
        raise OcmError(400, f"Machine pool '{pool_id}': attribute 'subnets' takes one AWS subnet id, got {subnets}")
    if topology == "hcp" and len(zones) > 1:
        raise OcmError(
            400, f"Machine pool '{pool_id}': a hosted control plane node pool lives in one availability zone"
        )
    if len(zones) not in (0, 1, MULTI_AZ_ZONES) or (subnets and len(zones) > 1):
        raise OcmError(400, f"Machine pool '{pool_id}': availability zones {zones} are neither one nor the cluster's 3")
    if len(zones) == MULTI_AZ_ZONES:
        scaling = pool.get("autoscaling")
        counts = (scaling.get("min_replicas"), scaling.get("max_replicas")) if scaling else (pool.get("replicas"),)
        if any(int(count or 0) % MULTI_AZ_ZONES for count in counts):
            raise OcmError(400, "Multi AZ clusters require that the number of MachinePool replicas be a multiple of 3")
    groups = aws.get("additional_security_group_ids") or []
    if len(groups) > MAX_SECURITY_GROUPS or any(not isinstance(g, str) or not SECURITY_GROUP.match(g) for g in groups):
        raise OcmError(
            400,
            f"Machine pool '{pool_id}': attribute 'additional_security_group_ids' takes at most "
            f"{MAX_SECURITY_GROUPS} security group ids (sg-…), got {groups}",
        )
    tags = aws.get("tags") or {}
    if len(tags) > MAX_TAGS:
        raise OcmError(400, f"Machine pool '{pool_id}': {len(tags)} AWS tags; at most {MAX_TAGS}")
    for key, value in tags.items():
        if not _tag_text(key, 128) or key.lower().startswith("aws:"):
            raise OcmError(400, f"Machine pool '{pool_id}': invalid AWS tag key '{key}'")
        if not isinstance(value, str) or not _tag_text(value, 256):
            raise OcmError(400, f"Machine pool '{pool_id}': invalid AWS tag value '{value}' for key '{key}'")


def _tag_text(text: str, most: int) -> bool:
    """rosa's UserTagKeyRE/UserTagValueRE (letters, separators, numbers, _.:/=+-@), not empty."""
    return 0 < len(text) <= most and all(unicodedata.category(c)[0] in "LZN" or c in "_.:/=+-@" for c in text)


def most_nodes(pool: dict) -> int:
    """The most nodes `pool` may have: autoscaling's max, else its fixed replicas."""
    scaling = pool.get("autoscaling")
    return int(scaling.get("max_replicas") or 0) if scaling else int(pool.get("replicas") or 0)


def _stored(cluster_id: str, data: dict) -> dict:
    pool = {key: copy.deepcopy(value) for key, value in data.items() if key not in ("kind", "href", "status")}
    pool.update(
        kind="MachinePool",
        href=f"{PREFIX}{cluster_id}/machine_pools/{pool['id']}",
        status={"kind": "MachinePoolStatus", "current_replicas": 0},
    )
    pool.setdefault("labels", {})
    pool.setdefault("taints", [])
    return pool
