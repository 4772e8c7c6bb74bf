"""Access and pool requests: ask, decide (approve or deny with a comment), and what approval does.

Deciding is allowed by `access.policy`: `config:Update` on `config/request` (the queues), plus what
approval writes: `config:Update` on `config/role` (a role is granted, maybe created) and, for a new
pool, on `config/pool`. `osmo-admin` holds all of it.

- Approving an **access request** grants the requester the role that allows `workflow:Create` on the
  pool: the most specific existing role (an exact `pool/<name>` before the longest `pool/<prefix>*`;
  never `osmo-admin`, never a role allowing every pool). If there is none, `osmo-<pool>` is created
  with `workflow:*` on `pool/<pool>` (through the ROLE config service: validated, versioned, audited).
- Approving a **pool request** copies the template platform of the chosen hardware (its pool's
  settings and that one platform) into a new pool `<team>-<hardware>`, with a GPU quota of the size
  asked, through `configs.store.apply`; then grants the role for it (an existing one, the
  team's generated `osmo-<team>` — OSMO's prefix rule — or `osmo-<pool>`).

Every decision is one transaction and leaves an audit event (`request.approve` / `request.deny`); role
grants and config writes add their own events.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.db.models import Count
from django.utils import timezone

from access import actions, policy
from access.matching import evaluate, rules_of
from access.models import Role
from access.policy import ADMIN_ROLE, DEFAULT_ROLE
from access.services import audit, roles
from configs import store
from configs.errors import ConfigError
from configs.models import ConfigType
from configs.revisions import Actor
from configs.validators import check_name
from pools.errors import PoolNotFound
from pools.models import NodeMembership, Pool
from portal.errors import Conflict, DomainError, NotFound
from selfservice.models import AccessRequest, PoolRequest, RequestStatus

CREATE = actions.WORKFLOW_CREATE
DECIDE = (actions.CONFIG_UPDATE, actions.config("request"))
CPU_ONLY = "cpu"
TEAM_RE = re.compile(r"^[a-z][a-z0-9-]{0,30}[a-z0-9]$")


# --- asking -----------------------------------------------------------------------------------------


def request_access(user, pool_name: str, justification: str) -> AccessRequest:
    pool = Pool.objects.filter(name=pool_name).first()
    if pool is None:
        raise PoolNotFound.named(pool_name)
    justification = (justification or "").strip()
    if not justification:
        raise ConfigError("say what you need the pool for", field="justification", value="")
    if policy.decide(user, CREATE, actions.pool(pool.name)).allowed:
        raise Conflict(f"you may already submit to {pool.name}", field="pool", value=pool.name)
    try:
        with transaction.atomic():
            created = AccessRequest.objects.create(requester=user, pool=pool, justification=justification)
    except IntegrityError:
        raise Conflict(
            f"you already asked for access to {pool.name}; an administrator will decide soon",
            field="pool",
            value=pool.name,
        ) from None
    audit.record(
        "request.create", Actor.of(user, "page"), target=f"access-request/{created.pk}", detail={"pool": pool.name}
    )
    return created


def request_pool(user, team: str, hardware: str, gpus: int, purpose: str) -> PoolRequest:
    team = (team or "").strip().lower()
    if not TEAM_RE.match(team):
        raise ConfigError("2-32 lowercase letters, digits and '-', starting with a letter", field="team", value=team)
    choices = {choice.key: choice for choice in hardware_choices()}
    if hardware not in choices:
        raise ConfigError("choose one of the hardware kinds the portal knows", field="hardware", value=hardware)
    choice = choices[hardware]
    if gpus is None or gpus < 0:
        raise ConfigError("must be 0 or more", field="gpus", value=gpus)
    if choice.key == CPU_ONLY and gpus:
        raise ConfigError("CPU-only hardware has no GPUs; ask for 0", field="gpus", value=gpus)
    if not (purpose or "").strip():
        raise ConfigError("say what the team will run", field="purpose", value="")
    created = PoolRequest.objects.create(
        requester=user,
        team=team,
        hardware=choice.key,
        gpus=gpus,
        purpose=purpose.strip(),
        pool_name=proposed_pool_name(team, choice),
        template=choice.template,
    )
    audit.record(
        "request.create",
        Actor.of(user, "page"),
        target=f"pool-request/{created.pk}",
        detail={"team": team, "hardware": choice.key, "gpus": gpus},
    )
    return created


def requests_of(who) -> tuple[list[AccessRequest], list[PoolRequest]]:
    """The principal's own requests (requesters read their own requests: `policy.restrict`, owner rows)."""
    subject = policy.principal(who)
    access = AccessRequest.objects.filter(requester=subject.user.pk).select_related("pool", "decided_by")
    pool = PoolRequest.objects.filter(requester=subject.user.pk).select_related("decided_by")
    return (
        list(policy.restrict(access, subject, actions.CONFIG_READ)),
        list(policy.restrict(pool, subject, actions.CONFIG_READ)),
    )


def withdraw(user, kind: str, pk: int) -> None:
    model = {"access": AccessRequest, "pool": PoolRequest}.get(kind)
    if model is None:
        raise NotFound("requests are access or pool requests", field="kind", value=kind)
    updated = model.objects.filter(pk=pk, requester=user.pk, status=RequestStatus.PENDING).update(
        status=RequestStatus.WITHDRAWN, decided_at=timezone.now()
    )
    if not updated:
        raise NotFound("no pending request of yours with that number", field="request", value=pk)


# --- hardware kinds ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class HardwareChoice:
    key: str  # the GPU product label value, or "cpu"
    label: str
    template: str  # "<pool>/<platform>" whose configuration a new pool copies
    short: str  # for pool names: h100, l40s, cpu …


def hardware_choices() -> list[HardwareChoice]:
    """GPU products (and CPU-only) that some single-product platform serves; that platform is the template.

    Two queries. When the portal has no node inventory yet, every platform is offered as its own kind.
    """
    rows = list(
        NodeMembership.objects.values_list(
            "pool__name", "platform__name", "node__gpu_product", "node__gpu_allocatable"
        ).order_by("pool__name", "platform__name")
    )
    if not rows:
        return [
            HardwareChoice(f"{pool}/{platform}", f"like {pool} / {platform}", f"{pool}/{platform}", _short(platform))
            for pool, platform in Pool.objects.values_list("name", "platforms__name").order_by(
                "name", "platforms__name"
            )
            if platform
        ]
    platforms: dict[tuple[str, str], list[tuple[str, int]]] = {}
    for pool, platform, product, gpus in rows:
        platforms.setdefault((pool, platform), []).append((product or CPU_ONLY, gpus))
    templates: dict[str, tuple[int, str, str, int]] = {}  # product -> (nodes, pool, platform, gpus/node)
    for (pool, platform), nodes in sorted(platforms.items()):
        products = {product for product, _ in nodes}
        if len(products) != 1:
            continue  # a mixed platform is no template for one kind of hardware
        product = products.pop()
        best = templates.get(product)
        if best is None or len(nodes) > best[0]:
            templates[product] = (len(nodes), pool, platform, max(g for _, g in nodes))
    node_counts = dict(
        NodeMembership.objects.values_list("node__gpu_product").annotate(n=Count("node", distinct=True)).order_by()
    )
    choices = []
    for product, (_, pool, platform, per_node) in sorted(templates.items(), key=lambda kv: (kv[0] == CPU_ONLY, kv[0])):
        nodes = node_counts.get("" if product == CPU_ONLY else product, 0)
        label = (
            "CPU only" if product == CPU_ONLY else f"{product} ({per_node} GPU{'s' if per_node != 1 else ''} per node)"
        ) + f", {nodes} node{'s' if nodes != 1 else ''} in the portal"
        choices.append(HardwareChoice(product, label, f"{pool}/{platform}", _short(product)))
    return choices


def _short(product: str) -> str:
    """`NVIDIA-H100-80GB-HBM3` → `h100`, `Tesla-T4` → `t4`, `cpu` → `cpu`."""
    words = [w for w in re.split(r"[^a-z0-9]+", product.lower()) if w and w not in ("nvidia", "tesla", "platform")]
    return (words[0] if words else "pool")[:16]


def proposed_pool_name(team: str, choice: HardwareChoice) -> str:
    return f"{team}-{choice.short}"[:128]


# --- deciding ------------------------------------------------------------------------------------------


@dataclass
class Outcome:
    request: AccessRequest | PoolRequest
    role: str = ""
    pool: str = ""
    role_created: bool = False
    warnings: list[str] | None = None


def may_decide(who, kind: str = "access") -> policy.Decision:
    """May `who` decide requests of this kind? (`access` or `pool`)."""
    subject = policy.principal(who)
    for action, resource in _needed(kind):
        decision = subject.decide(action, resource)
        if not decision.allowed:
            return decision
    return subject.decide(*DECIDE)


def _needed(kind: str) -> list[tuple[str, str]]:
    """Deciding a request writes roles (and, approving a pool request, a pool): the decider needs those too."""
    needed = [DECIDE, (actions.CONFIG_UPDATE, actions.config("role"))]
    if kind == "pool":
        needed.append((actions.CONFIG_UPDATE, actions.config("pool")))
    return needed


def approve_access(pk: int, who, comment: str = "", actor: Actor | None = None) -> Outcome:
    subject = _decider(who, "access")
    actor = actor or Actor.of(subject.user, "admin")
    with transaction.atomic():
        request = _pending(AccessRequest.objects.select_related("pool", "requester"), pk)
        role, created = role_for_pool(request.pool.name, actor)
        roles.update_user_roles(request.requester, add=[role.name], actor=actor)
        _decide(request, RequestStatus.APPROVED, subject.user, comment, granted_role=role.name)
        audit.record(
            "request.approve",
            actor,
            target=f"access-request/{request.pk}",
            detail={
                "pool": request.pool.name,
                "requester": request.requester.get_username(),
                "role": role.name,
                "role_created": created,
                "comment": comment,
            },
        )
    return Outcome(
        request,
        role=role.name,
        pool=request.pool.name,
        role_created=created,
        warnings=_still_denied(request.requester, request.pool.name),
    )


def approve_pool(pk: int, who, comment: str = "", pool_name: str = "", actor: Actor | None = None) -> Outcome:
    subject = _decider(who, "pool")
    actor = actor or Actor.of(subject.user, "admin")
    with transaction.atomic():
        request = _pending(PoolRequest.objects.select_related("requester"), pk)
        name = check_name((pool_name or request.pool_name or "").strip(), "pool_name")
        if Pool.objects.filter(name=name).exists():
            raise Conflict(f"a pool named {name} exists already; choose another name", field="pool_name", value=name)
        body = pool_document(request, name)
        store.apply(
            ConfigType.POOL,
            name,
            body,
            actor,
            description=f"pool request #{request.pk} of {request.requester.get_username()} (team {request.team})",
        )
        role, created = role_for_pool(name, actor, team=request.team)
        roles.update_user_roles(request.requester, add=[role.name], actor=actor)
        request.pool_name = request.created_pool = name
        _decide(
            request,
            RequestStatus.APPROVED,
            subject.user,
            comment,
            granted_role=role.name,
            extra=["pool_name", "created_pool"],
        )
        audit.record(
            "request.approve",
            actor,
            target=f"pool-request/{request.pk}",
            detail={
                "pool": name,
                "template": request.template,
                "requester": request.requester.get_username(),
                "role": role.name,
                "role_created": created,
                "comment": comment,
            },
        )
    return Outcome(
        request, role=role.name, pool=name, role_created=created, warnings=_still_denied(request.requester, name)
    )


def deny(kind: str, pk: int, who, comment: str, actor: Actor | None = None) -> Outcome:
    subject = _decider(who, kind)
    actor = actor or Actor.of(subject.user, "admin")
    if not (comment or "").strip():
        raise ConfigError("say why, for the requester", field="comment", value="")
    model = {"access": AccessRequest, "pool": PoolRequest}[kind]
    with transaction.atomic():
        request = _pending(model.objects.select_related("requester"), pk)
        _decide(request, RequestStatus.DENIED, subject.user, comment)
        audit.record(
            "request.deny",
            actor,
            target=f"{kind}-request/{request.pk}",
            detail={"requester": request.requester.get_username(), "comment": comment},
        )
    return Outcome(request)


def _decider(who, kind: str):
    subject = policy.principal(who)
    for action, resource in _needed(kind):
        policy.require(
            subject, action, resource, refusal=f"may not decide {kind} requests", field="request", value=kind
        )
    return subject


def _pending(query, pk: int):
    request = query.select_for_update(of=("self",)).filter(pk=pk).first()
    if request is None:
        raise NotFound(f"no request #{pk}", field="request", value=pk)
    if not request.is_pending:
        raise Conflict(f"request #{pk} was already decided ({request.get_status_display()})", field="request", value=pk)
    return request


def _decide(request, status: str, by, comment: str, *, granted_role: str = "", extra=()) -> None:
    request.status, request.decided_by, request.decided_at = status, by, timezone.now()
    request.comment, request.granted_role = (comment or "").strip(), granted_role
    request.save(update_fields=["status", "decided_by", "decided_at", "comment", "granted_role", *extra])


def _still_denied(user, pool: str) -> list[str]:
    user = get_user_model().objects.get(pk=user.pk)  # fresh: the grant just changed its roles
    decision = policy.decide(user, CREATE, actions.pool(pool))
    return (
        []
        if decision.allowed
        else [f"{user.get_username()} still may not submit to {pool}: {'; '.join(decision.because)}"]
    )


# --- roles and pool documents ---------------------------------------------------------------------------


def role_for_pool(pool: str, actor: Actor, *, team: str = "") -> tuple[Role, bool]:
    """(the role to grant for `pool`, whether it was created now)."""
    found = best_role(pool)
    if found is not None:
        return found, False
    resource = actions.pool(pool)
    candidates = [f"osmo-{team}"] if team else []
    candidates.append(f"osmo-{pool}")
    for name in candidates:
        if Role.objects.filter(name=name).exists():
            continue  # exists but does not allow this pool (best_role would have found it): leave it alone
        if name == f"osmo-{team}":
            roles.set_pool_role(name, actor, description=f"team {team}, for pool {pool}")
        else:
            store.apply(
                ConfigType.ROLE,
                name,
                {
                    "description": f"Generated for pool {pool} (request approval)",
                    "policies": [{"effect": "Allow", "actions": [actions.WORKFLOW_ALL], "resources": [resource]}],
                },
                actor,
                description=f"access to pool {pool}",
            )
        role = Role.objects.get(name=name)
        if _allows(role, resource):
            return role, True
    raise Conflict(
        f"roles {', '.join(candidates)} exist but none allows {CREATE} on {resource}; fix one of them "
        "in the role admin, then approve again",
        field="role",
        value=candidates[-1],
    )


def best_role(pool: str) -> Role | None:
    """The most specific role allowing `workflow:Create` on `pool/<pool>` (not admin, not every pool)."""
    resource = actions.pool(pool)
    ranked = []
    for role in Role.objects.exclude(name__in=[ADMIN_ROLE, DEFAULT_ROLE]).only("pk", "name", "policies", "group_id"):
        if not _allows(role, resource):
            continue
        specificity = max(
            (
                _specificity(pattern, resource)
                for rule in rules_of(role.name, role.policies)
                if not rule.deny and rule.matches(CREATE, resource)
                for pattern in rule.resources
            ),
            default=-1,
        )
        if specificity > 0:
            ranked.append((-specificity, role.name, role))
    return min(ranked, key=lambda item: item[:2])[2] if ranked else None


def _allows(role: Role, resource: str) -> bool:
    return evaluate({role.name: rules_of(role.name, role.policies)}, CREATE, resource).allowed


def _specificity(pattern: str, resource: str) -> int:
    """How much of the pool name a matching pattern pins down: exact > longer prefix; `*`, `pool/*` → 0."""
    if pattern == resource:
        return 10_000
    if pattern.endswith("*") and resource.startswith(pattern[:-1]):
        return max(0, len(pattern) - 1 - len("pool/"))
    return 0


def pool_document(request: PoolRequest, name: str) -> dict:
    """The new pool: the template pool's settings with only the template platform, sized by the request."""
    template_pool, _, template_platform = (request.template or "").partition("/")
    try:
        body = copy.deepcopy(store.show(ConfigType.POOL, template_pool))
    except DomainError:
        raise Conflict(
            f"the template pool {template_pool!r} no longer exists; the hardware kind cannot be copied",
            field="template",
            value=request.template,
        ) from None
    platforms = body.get("platforms") or {}
    if template_platform not in platforms:
        raise Conflict(
            f"pool {template_pool} no longer has platform {template_platform!r}",
            field="template",
            value=request.template,
        )
    weight = ((body.get("resources") or {}).get("gpu") or {}).get("weight")
    body.update(
        {
            "name": name,
            "description": f"Team {request.team}: {request.purpose}"[:500],
            "default_platform": template_platform,
            "platforms": {template_platform: platforms[template_platform]},
            "enable_maintenance": False,
            "resources": {
                "gpu": {
                    "guarantee": request.gpus or -1,
                    "maximum": request.gpus or -1,
                    **({"weight": weight} if weight is not None else {}),
                }
            },
        }
    )
    return body
