"""The one place that decides access (design §5): "may this principal do action A on resource R?" and
"which pools may this principal use?". Admin, pages, the REST API and services all ask here.

A principal is a user (session, OIDC, HTTP basic) or an API token. Its roles are the roles whose group
the user is in, plus `osmo-default` (everyone, anonymous included); a token's roles are its own subset
intersected with its owner's *current* roles, so a token loses a role as soon as its owner does.
Superusers are not special: they hold `osmo-admin` like any administrator.

Semantics are OSMO 6.2's (`access.matching`):
- `decide`: a matching Deny in *any* role wins; else a matching Allow allows; else denied.
- `allowed_pools` / `pools_for`: pools where *some role* allows the action (default `workflow:Create`)
  on `pool/<name>`; a Deny only cancels Allows of its own role. So a Deny in role A does not hide a
  pool that role B allows (OSMO's `GetAllowedPools`), even though `decide` would refuse a submission
  there. We keep that on purpose, for compatibility; `explain` shows both answers.

Cost: roles and policies are loaded once per principal per request (one query), and cached per process
while the access epoch stays the same (`access.epoch`: then a request pays one tiny epoch query instead);
decisions are memoised per principal, so any decision after the first costs no query. `pools_for` is one query whatever the
number of pools or roles.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AnonymousUser
from django.db.models import Q, QuerySet

from access import actions
from access.epoch import EpochCache
from access.matching import Decision, Rule, evaluate, rules_of, visible_in_role
from access.models import APIToken, Role
from pools.models import Pool

DEFAULT_ROLE = "osmo-default"
ADMIN_ROLE = "osmo-admin"
POOL_ACTION = actions.WORKFLOW_CREATE
ADMIN_ACTIONS = (actions.CONFIG_READ, actions.CONFIG_UPDATE)

__all__ = ["Decision", "Principal", "admin_access", "allowed_pools", "decide", "explain", "pools_for",
           "principal", "role_names"]


class Principal:
    """Who is asking: a user (maybe anonymous) or a token. Loads its rules lazily, once."""

    def __init__(self, user=None, token: APIToken | None = None) -> None:
        self.token = token
        self.user = token.user if token is not None else (user or AnonymousUser())
        self._roles: dict[str, tuple[Rule, ...]] | None = None
        self._decisions: dict[tuple[str, str], Decision] = {}

    @property
    def name(self) -> str:
        if not self.user.is_authenticated:
            return "anonymous"
        username = self.user.get_username()
        return f"{username} (token {self.token.name})" if self.token is not None else username

    @property
    def roles(self) -> dict[str, tuple[Rule, ...]]:
        """Role name → its rules. One query the first time (none when this process has them cached)."""
        if self._roles is None:
            self._roles = dict(_RULES.lookup(self._rules_key(), self._load_rules))
        return self._roles

    def _rules_key(self) -> tuple | None:
        """What the rules depend on: the user and token (None: only the default role applies)."""
        if not (self.user.is_authenticated and self.user.is_active):
            return None
        return (self.user.pk, self.token.pk if self.token is not None else None)

    def _load_rules(self) -> dict[str, tuple[Rule, ...]]:
        return {name: rules_of(name, policies) for name, policies in _load(self)}

    def decide(self, action: str, resource: str = "") -> Decision:
        key = (action, resource)
        decision = self._decisions.get(key)
        if decision is None:
            decision = self._decisions[key] = evaluate(self.roles, action, resource)
        return decision

    def __repr__(self) -> str:
        return f"<Principal {self.name}>"


_RULES = EpochCache()  # rules key → role name → rules, per process, while the access epoch holds


def _load(who: Principal) -> list[tuple[str, list]]:
    """(name, policies) of the principal's roles: one query, no duplicates."""
    user = who.user
    condition = Q(name=DEFAULT_ROLE)
    if user.is_authenticated and user.is_active:
        groups = get_user_model().groups.through.objects.filter(user_id=user.pk).values("group_id")
        held = Q(group_id__in=groups)
        if who.token is not None:  # the token's roles that the owner still holds
            held &= Q(pk__in=APIToken.roles.through.objects.filter(apitoken_id=who.token.pk).values("role_id"))
        condition |= held
    return list(Role.objects.filter(condition).order_by("name").values_list("name", "policies"))


def principal(who) -> Principal:
    """The principal of a request (DRF or Django), a user, a token, or a principal (returned as is).

    For a request the principal is memoised on the request, so every check during one request shares
    one role load and one decision cache.
    """
    if isinstance(who, Principal):
        return who
    if isinstance(who, APIToken):
        return Principal(token=who)
    if hasattr(who, "META"):
        auth = getattr(who, "auth", None)  # DRF requests carry the token that authenticated them
        token = auth if isinstance(auth, APIToken) else None
        user = who.user
        key = (user.pk if user.is_authenticated else None, token.pk if token is not None else None)
        http = getattr(who, "_request", who)
        cache = http.__dict__.setdefault("_access_principals", {})
        if key not in cache:
            cache[key] = Principal(user, token)
        return cache[key]
    return Principal(who)


def decide(who, action: str, resource: str = "") -> Decision:
    """May `who` do `action` (e.g. `workflow:Create`) on `resource` (e.g. `pool/team-a`, `config/pool`)?"""
    return principal(who).decide(action, resource)


def role_names(who) -> list[str]:
    return sorted(principal(who).roles)


def admin_access(who) -> Decision:
    """May `who` open the admin console? When some role *allows* a config action on some config type.

    Denies are not considered here: they decide each page (`decide(..., "config/<type>")`), not entry.
    """
    subject = principal(who)
    key = (actions.ADMIN_ACCESS, "")
    cached = subject._decisions.get(key)
    if cached is not None:
        return cached
    granting = [rule for rules in subject.roles.values() for rule in rules
                if not rule.deny and any(rule.matches(action, "config/*") for action in ADMIN_ACTIONS)]
    if granting:
        decision = Decision(True, [f"{rule.describe()} allows a config action" for rule in granting])
    else:
        decision = Decision(False, [f"no policy of roles {', '.join(sorted(subject.roles)) or '(none)'} allows "
                                    "config:Read or config:Update on any config type"])
    subject._decisions[key] = decision
    return decision


# --- pools -----------------------------------------------------------------------------------------

_ALL = Q(pk__isnull=False)


def pools_for(who, action: str = POOL_ACTION) -> QuerySet:
    """Pools `who` may use for `action`, as a queryset (one query, whatever the number of pools).

    Visibility semantics (OSMO's `GetAllowedPools`): union over roles of (that role's Allows minus that
    role's Denies).
    """
    condition = None
    for rules in principal(who).roles.values():
        allow = _pool_condition([r for r in rules if not r.deny and r.matches_action(action)])
        if allow is None:
            continue
        deny = _pool_condition([r for r in rules if r.deny and r.matches_action(action)])
        role_condition = allow if deny is None else allow & ~deny
        condition = role_condition if condition is None else condition | role_condition
    return Pool.objects.none() if condition is None else Pool.objects.filter(condition)


def allowed_pools(who, action: str = POOL_ACTION) -> set[str]:
    """Names of the pools `who` may use (the pool list of `GET /api/pool` and the self-service pages)."""
    return set(pools_for(who, action).values_list("name", flat=True))


def _pool_condition(rules: list[Rule]) -> Q | None:
    """Pool names whose `pool/<name>` matches any resource pattern of `rules`, as a Q (None: no pool)."""
    parts = []
    for rule in rules:
        for pattern in rule.resources:  # empty resources = global-only: never a pool
            part = _pattern_condition(pattern)
            if part is _ALL:
                return _ALL
            if part is not None:
                parts.append(part)
    if not parts:
        return None
    condition = parts[0]
    for part in parts[1:]:
        condition |= part
    return condition


def _pattern_condition(pattern: str) -> Q | None:
    if pattern == "*":
        return _ALL
    if pattern.endswith("*"):
        prefix = pattern[:-1]
        if prefix.startswith("pool/"):
            name = prefix[len("pool/"):]
            return Q(name__startswith=name) if name else _ALL
        return _ALL if "pool/".startswith(prefix) else None
    if pattern.startswith("pool/"):
        return Q(name=pattern[len("pool/"):])
    return None


# --- explain ---------------------------------------------------------------------------------------


@dataclass
class Explanation:
    principal: str
    action: str
    resource: str
    roles: list[str]
    allowed: bool
    because: list[str]
    listed: bool | None = None  # for pool resources: would the pool appear in the principal's pool list?
    listed_because: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return dict(vars(self))


def explain(who, action: str, resource: str) -> Explanation:
    """`decide` with its reasons, plus, for a pool, whether the pool is *listed* for the principal and
    which roles list it (the two can differ: see the module docstring)."""
    subject = principal(who)
    decision = subject.decide(action, resource)
    result = Explanation(subject.name, action, resource, sorted(subject.roles), decision.allowed,
                         list(decision.because))
    if resource.startswith("pool/") and not resource.endswith("/*"):
        listing = [name for name, rules in sorted(subject.roles.items())
                   if visible_in_role(rules, action, resource)]
        result.listed = bool(listing)
        result.listed_because = [f"role {name} allows {action} on {resource} and does not deny it"
                                 for name in listing]
    return result
