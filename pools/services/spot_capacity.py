"""Which platforms run on spot capacity, and which of them keep state there (the seed's advice, docs/machine-pools.md,
"Spot advice": spot suits fault-tolerant batch work, not stateful applications or databases).

A platform is **on spot** when a node it serves is a spot instance (its labels say so: `SPOT_LABELS`), or a
machine pool with no node yet would add a spot node to it (scale from zero). A platform **keeps state** when its
pod (its templates merged, or a task's resolved pod) mounts a `persistentVolumeClaim` volume: data meant to
outlive the pod, which a spot reclaim cuts off mid-write and whose zonal volume may pin the next pod to a zone
with no spot capacity. Other volumes (emptyDir, configMap, secret, hostPath scratch) go with the pod or the node.

Two queries for any number of platforms (the member spot nodes; the would-be nodes, cached per process), and
none while this process's cache holds the answer: every submission asks, and on a fleet the member nodes'
labels were a fifth of a submission's web CPU (docs/scale.md). Its entries hold while the charging epoch
(nodes that change platform or go; pool revisions) and the machine-shape epoch (new nodes, machine pools,
templates) stay put, and at most ACCESS_CACHE_SECONDS: a spot label that appears on a node already in the
platform, which clouds do not do, is seen within that time. Never inside a transaction.
"""

from __future__ import annotations

from django.db.models import Q

from access import epoch
from clusters.machinepools.spec import SPOT_LABELS
from clusters.models import Node
from pools.engine import EngineError
from pools.services.compilation import compiled_platform
from pools.services.machine_pool_shapes import SHAPES, would_be_by_platform

_ON_SPOT = epoch.EpochCache(size=1024, epoch=(epoch.CHARGING, SHAPES))  # frozenset(platform ids) → {id: said}


def spot_capacity(platforms) -> dict[int, str]:
    """Per platform id on spot: what spot capacity serves it ("spot node gpu-1", "machine pool ml-training (no
    node yet)"); platforms not on spot are left out. From this process's cache while the epochs hold."""
    platforms = list(platforms)
    if not platforms:
        return {}
    return dict(_ON_SPOT.lookup(frozenset(p.pk for p in platforms), lambda: _spot_capacity(platforms)))


def _spot_capacity(platforms: list) -> dict[int, str]:
    matches = Q()
    for key, value in SPOT_LABELS.items():  # the key's own lookup: SQLite reads a KT annotation's value as JSON
        matches |= Q(**{f"labels__{key}": value})
    found: dict[int, list[str]] = {}
    rows = (
        Node.objects.filter(memberships__platform_id__in=[p.pk for p in platforms])
        .filter(matches)
        .order_by("name")
        .values_list("memberships__platform_id", "name")
    )
    for platform_id, node in rows:
        found.setdefault(platform_id, []).append(node)
    said = {platform_id: _nodes(names) for platform_id, names in found.items()}
    for platform_id, would_be in would_be_by_platform(platforms).items():
        spot = [node.spec.name for node in would_be if node.spec.spot]
        if spot:
            pools = ", ".join(f"machine pool {name} (no node yet)" for name in spot)
            said[platform_id] = f"{said[platform_id]}; {pools}" if platform_id in said else pools
    return said


def _nodes(names: list[str]) -> str:
    shown = ", ".join(names[:3])
    more = f" and {len(names) - 3} more" if len(names) > 3 else ""
    return f"spot node{'s' if len(names) > 1 else ''} {shown}{more}"


def persistent_claims(pod: dict | None) -> list[str]:
    """The claim names of a pod's `persistentVolumeClaim` volumes (a resolved pod, or a platform's merged template)."""
    spec = (pod or {}).get("spec")
    volumes = spec.get("volumes") if isinstance(spec, dict) else None
    claims = []
    for volume in volumes if isinstance(volumes, list) else []:
        claim = volume.get("persistentVolumeClaim") if isinstance(volume, dict) else None
        if isinstance(claim, dict):
            claims.append(str(claim.get("claimName") or volume.get("name") or "?"))
    return claims


def stateful_on_spot(platforms) -> dict[int, str]:
    """Per platform id that keeps state (`persistent_claims` of its merged templates) on spot capacity: the
    flag, e.g. "platform db keeps state on spot capacity: persistentVolumeClaim data (claims: pgdata) on spot
    node spot-1; …"."""
    platforms = list(platforms)
    stateful = {}
    for platform in platforms:
        try:
            claims = persistent_claims(compiled_platform(platform).merged.body)
        except EngineError:
            continue
        if claims:
            stateful[platform.pk] = claims
    if not stateful:
        return {}
    on_spot = spot_capacity([p for p in platforms if p.pk in stateful])
    return {
        platform.pk: stateful_warning(platform.name, stateful[platform.pk], on_spot[platform.pk])
        for platform in platforms
        if platform.pk in on_spot
    }


def stateful_warning(platform: str, claims: list[str], capacity: str) -> str:
    return (
        f"platform {platform} keeps state on spot capacity: persistentVolumeClaim volumes ({', '.join(claims)}) on "
        f"{capacity}. Spot suits fault-tolerant batch work, not stateful applications or databases: a reclaim "
        "stops the pod with two minutes' notice; use on-demand capacity for it"
    )
