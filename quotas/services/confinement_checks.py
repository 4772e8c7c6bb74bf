"""A platform whose templates contradict the node pool it is charged to is refused at save (docs/quotas.md,
"Confinement"): its pods carry the node pool's selector (`node_pools.node_selector`), so a template that
can match no node of that node pool would leave them Pending forever.

Contradictions, read from the platform's compiled template (its nodeSelector AND its required node
affinity, whose terms are ORed):

* it excludes the node pool's own label: the same key with another value (`gpu=a100` on a platform charged
  to node pool `gpu=h100`), or affinity terms none of which admits it;
* it requires the label of another label node pool of the backend (every node carrying it is that node
  pool's), e.g. a label node pool's label on a platform charged to the Default.

Installed as a `pools.platform_checks` check by `quotas.apps`: it runs after the pools of a POOL,
POD_TEMPLATE or RESOURCE_VALIDATION write are recompiled, in that write's transaction. Constant queries: the
platforms, where each is charged (node_pools.charged_node_pools), the backends' label node pools.
"""

from __future__ import annotations

from configs.errors import ConfigError
from pools.models import Platform
from quotas.models import NodePool, SelectorKind
from quotas.services.node_pools import charged_node_pools, node_selector


def check_pools(pools: list) -> None:
    """Raise ConfigError on the first platform of `pools` that contradicts its node pool (module docstring)."""
    if not pools:
        return
    charged = charged_node_pools(pools)
    labelled: dict[int, list[NodePool]] = {}
    for node_pool in NodePool.objects.filter(
        backend_id__in={p.backend_id for p in pools}, selector_kind=SelectorKind.LABEL
    ).order_by("name"):
        labelled.setdefault(node_pool.backend_id, []).append(node_pool)
    names = {pool.pk: pool.name for pool in pools}
    rows = Platform.objects.filter(pool__in=pools).order_by("pool__name", "name")
    for pool_id, platform, compiled in rows.values_list("pool_id", "name", "compiled"):
        node_pool = charged.get((pool_id, platform))
        spec = ((compiled or {}).get("merged") or {}).get("body", {}).get("spec")
        if node_pool is None or not isinstance(spec, dict):
            continue
        reason = contradiction(spec, node_pool, labelled.get(node_pool.backend_id, []))
        if reason:
            raise ConfigError(
                f"platform {platform} of pool {names[pool_id]}: {reason}",
                field=f"platforms.{platform}",
                value=spec.get("nodeSelector") or _terms(spec),
            )


def contradiction(spec: dict, node_pool: NodePool, label_node_pools: list[NodePool]) -> str:
    """Why a pod spec's placement contradicts `node_pool` ("" when it does not)."""
    selector = spec.get("nodeSelector") if isinstance(spec.get("nodeSelector"), dict) else {}
    terms = _terms(spec)
    own = node_selector(node_pool)
    for key, value in own.items():
        if _excludes(selector, terms, key, value):
            return (
                f"its template's nodeSelector or required node affinity excludes {key}={value}, which its pods "
                f"carry to stay in node pool {node_pool.name} (the node pool this platform is charged to): they "
                "could run on no node; select within that node pool, or charge the platform elsewhere"
            )
    for other in label_node_pools:
        if other.pk != node_pool.pk and _requires(selector, terms, other.label_key, other.label_value):
            return (
                f"its template selects {other.label_key}={other.label_value}, the nodes of node pool {other.name}, "
                f"but it is charged to node pool {node_pool.name}, whose pods run only on its own nodes: they could "
                "run on no node; drop that selector, or give the platform the nodes of one node pool"
            )
    return ""


def _terms(spec: dict) -> list[dict]:
    affinity = (spec.get("affinity") or {}).get("nodeAffinity") or {}
    required = affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    terms = required.get("nodeSelectorTerms") if isinstance(required, dict) else None
    return [term for term in terms if isinstance(term, dict)] if isinstance(terms, list) else []


def _templated(value: object) -> bool:
    return isinstance(value, str) and "{{" in value  # filled per task: not decidable at save


def _excludes(selector: dict, terms: list[dict], key: str, value: str) -> bool:
    wanted = selector.get(key)
    if wanted is not None and not _templated(wanted) and str(wanted) != value:
        return True
    return bool(terms) and not any(_term_admits(term, key, value) for term in terms)


def _requires(selector: dict, terms: list[dict], key: str, value: str) -> bool:
    if str(selector.get(key)) == value and key in selector:
        return True
    return bool(terms) and all(_term_requires(term, key, value) for term in terms)


def _expressions(term: dict, key: str) -> list[dict]:
    found = term.get("matchExpressions") or []
    return [e for e in found if isinstance(e, dict) and e.get("key") == key] if isinstance(found, list) else []


def _term_admits(term: dict, key: str, value: str) -> bool:
    for expression in _expressions(term, key):
        operator, values = expression.get("operator"), [str(v) for v in expression.get("values") or []]
        if any(_templated(v) for v in values):
            continue
        if (
            (operator == "In" and value not in values)
            or (operator == "NotIn" and value in values)
            or operator == "DoesNotExist"
        ):
            return False
    return True


def _term_requires(term: dict, key: str, value: str) -> bool:
    return any(
        e.get("operator") == "In" and [str(v) for v in e.get("values") or []] == [value]
        for e in _expressions(term, key)
    )
