"""OSMO's verbose pool form (`GET /api/configs/pool?verbose=true`, `GET /api/configs/pool/NAME?verbose=true`):
the editable body (`configs.store.show`) plus what the service derives from it, read from what the portal
computed when the config was saved (`Platform.compiled`), never recomputed here.

Per pool: `status` (ONLINE, OFFLINE, MAINTENANCE) and `parsed_group_templates` (always empty: the portal has
no group templates). Per platform: `parsed_pod_template` (the merged pod template), `labels` (its node
selector), `tolerations`, `default_mounts` and `parsed_resource_validations` (the pool's rules, then the
platform's). OSMO's pool-level `parsed_pod_template` / `parsed_resource_validations` (the common part alone) are
not answered: the portal merges per platform. Three queries whatever the number of pools.
"""

from __future__ import annotations

from configs import store
from pools.models import Platform, Pool


def pool_bodies(backend: str | None = None) -> dict[str, dict]:
    """Every pool's editable body (`{name: body}`), only those on `backend` when given (OSMO's `?backend=`)."""
    bodies = store.show("POOL")
    if backend is None:
        return bodies
    return {name: body for name, body in bodies.items() if body.get("backend") == backend}


def verbose(bodies: dict[str, dict]) -> dict[str, dict]:
    """The bodies with OSMO's derived fields added."""
    statuses = {pool.name: pool.status for pool in Pool.objects.filter(name__in=list(bodies)).select_related("backend")}
    compiled: dict[str, dict[str, dict]] = {}
    for pool, platform, data in Platform.objects.filter(pool__name__in=list(bodies)).values_list(
        "pool__name", "name", "compiled"
    ):
        compiled.setdefault(pool, {})[platform] = data or {}
    answer = {}
    for name, body in bodies.items():
        platforms = {
            platform: {**platform_body, **_derived(compiled.get(name, {}).get(platform, {}))}
            for platform, platform_body in (body.get("platforms") or {}).items()
        }
        answer[name] = {**body, "platforms": platforms, "status": statuses.get(name), "parsed_group_templates": []}
    return answer


def _derived(compiled: dict) -> dict:
    rule_sets = (compiled.get("config") or {}).get("rule_sets") or []
    return {
        "parsed_pod_template": (compiled.get("merged") or {}).get("body", {}),
        "labels": compiled.get("node_selector", {}),
        "tolerations": compiled.get("tolerations", []),
        "default_mounts": compiled.get("default_mounts", []),
        "parsed_resource_validations": [rule for _, rules in rule_sets for rule in rules],
    }
