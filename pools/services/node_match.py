"""How many nodes of a backend a platform's pod would match, and why the others do not: for a pool or a
platform as it is being edited (templates picked, variables typed), before anything is saved.

The same rules as membership (`pools.services.membership`): the platform's templates merged and resolved by
the engine, reduced to nodeSelector, affinity and tolerations, placed on the backend's nodes with resources
aside. Reasons are grouped (one line per distinct reason, with its node count and a few names), never a
line per node. Also: which saved platforms match no node (the warning a pool shows), and the check that
asks before a save leaves a platform matching no node.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db.models import Exists, OuterRef

from clusters.models import Node
from pools.engine import EngineError, PlatformConfig, compile_platform
from pools.engine.placement import place
from pools.models import NodeMembership, Platform, PodTemplate
from pools.services.machine_pool_shapes import would_be_by_platform
from pools.services.membership import membership_pod, node_infos
from portal.errors import DomainError

EXAMPLES = 3  # node names shown per reason
MAX_REASONS = 8  # distinct reasons shown; the rest are counted


@dataclass
class PlatformDraft:
    """A platform as the form has it: its name, the templates merged in order and the variables in layers."""

    name: str
    templates: list[str]
    pool_variables: dict = field(default_factory=dict)
    platform_variables: dict = field(default_factory=dict)


@dataclass
class Reason:
    text: str
    count: int
    examples: list[str]


@dataclass
class Match:
    platform: str
    total: int = 0
    matching: int = 0
    reasons: list[Reason] = field(default_factory=list)
    more_reasons: int = 0  # distinct reasons not listed
    error: str = ""

    @property
    def others(self) -> int:
        return self.total - self.matching

    def as_dict(self) -> dict:
        return {
            "platform": self.platform,
            "total": self.total,
            "matching": self.matching,
            "reasons": [{"reason": r.text, "nodes": r.count, "examples": r.examples} for r in self.reasons],
            "more_reasons": self.more_reasons,
            "error": self.error,
        }


class NoMatchingNode(DomainError):
    """A save would leave a platform matching no node of its backend: asked for confirmation first."""

    code = "no_matching_node"


def match_drafts(backend_id: int | None, pool_name: str, drafts: list[PlatformDraft]) -> list[Match]:
    """One Match per draft, against the backend's nodes (read once) and the templates (read once)."""
    names = {name for draft in drafts for name in draft.templates}
    bodies = dict(PodTemplate.objects.filter(name__in=names).values_list("name", "body")) if names else {}
    infos = []
    if backend_id is not None:
        infos = [
            info
            for _, _, info in node_infos(Node.objects.filter(backend_id=backend_id).order_by("name"))
            if info is not None
        ]
    return [_match(draft, pool_name, bodies, infos) for draft in drafts]


def _match(draft: PlatformDraft, pool_name: str, bodies: dict, infos: list) -> Match:
    result = Match(platform=draft.name, total=len(infos))
    unknown = [name for name in draft.templates if name not in bodies]
    if unknown:
        result.error = f"unknown pod template {unknown[0]!r}"
        return result
    config = PlatformConfig(
        pool=pool_name or "new-pool",
        platform=draft.name or "new-platform",
        templates=[(name, bodies[name]) for name in draft.templates],
        pool_variables=draft.pool_variables,
        platform_variables=draft.platform_variables,
    )
    try:
        pod = membership_pod(compile_platform(config))
        verdicts = place(pod, infos, check_resources=False)
    except EngineError as error:
        result.error = f"the platform's pod cannot be evaluated: {error}"
        return result
    counts: dict[str, int] = {}
    examples: dict[str, list[str]] = {}
    for verdict in verdicts:
        if verdict.fits:
            result.matching += 1
            continue
        for reason in verdict.reasons:
            counts[reason] = counts.get(reason, 0) + 1
            named = examples.setdefault(reason, [])
            if len(named) < EXAMPLES:
                named.append(verdict.node)
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))  # the commonest first, then by text
    result.reasons = [Reason(text, count, examples[text]) for text, count in ranked[:MAX_REASONS]]
    result.more_reasons = max(0, len(ranked) - MAX_REASONS)
    return result


def unmatched_platforms(pool_ids: list[int]) -> dict[int, list[str]]:
    """{pool id: names of its platforms that match no node}, for pools whose backend has nodes (one query;
    a backend not synced yet has none, and says so on its own page). A platform an autoscaled machine pool
    would add a node to (scale from zero) is not one: its node comes when a task needs it (the would-be nodes,
    cached per process, are read only when some platform matches no node)."""
    candidates = list(
        Platform.objects.filter(pool_id__in=pool_ids)
        .annotate(
            has_members=Exists(NodeMembership.objects.filter(platform_id=OuterRef("pk"))),
            backend_has_nodes=Exists(Node.objects.filter(backend_id=OuterRef("pool__backend_id"))),
        )
        .filter(has_members=False, backend_has_nodes=True)
        .select_related("pool")
        .order_by("name")
    )
    served = would_be_by_platform(candidates) if candidates else {}
    found: dict[int, list[str]] = {}
    for platform in candidates:
        if not served.get(platform.pk):
            found.setdefault(platform.pool_id, []).append(platform.name)
    return found


def no_match_warning(names: list[str]) -> str:
    if not names:
        return ""
    listed = ", ".join(names)
    return f"platform{'s' if len(names) > 1 else ''} {listed} match{'' if len(names) > 1 else 'es'} no node"


def confirm_matches(pool_id: int, unmatched_before: set[str], only: str | None = None) -> None:
    """After a save (in its transaction): refuse it when a platform of the pool now matches no node but did
    before, or is new (`unmatched_before`: the names that matched none already). `only`: just that platform."""
    now = unmatched_platforms([pool_id]).get(pool_id, [])
    newly = [name for name in now if name not in unmatched_before and (only is None or name == only)]
    if newly:
        raise NoMatchingNode(
            f"{no_match_warning(newly)} of the pool's backend: no task could run there. Check its templates "
            "(the node match above says why each node is left out), or tick \u201cSave anyway\u201d and save again",
            field="save_anyway",
            value=", ".join(newly),
        )
