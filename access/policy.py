"""The one place that decides access (docs/architecture.md, "Authorization where data is read"): "may this
principal do action A on resource R?" and "which pools may this principal use?". Admin, pages, the REST API
and services all ask here.

A principal is a user (session, OIDC, HTTP basic) or an API token. Its roles are the roles whose group
the user is in, plus `osmo-default` (everyone, anonymous included); a token's roles are its own subset
intersected with its owner's *current* roles, so a token loses a role as soon as its owner does.
Superusers are not special: they hold `osmo-admin` like any administrator.

The entry points:
- `decide(who, action, resource, obj=None)`: a Decision with its reasons (never raises);
- `require(...)`: `decide`, and a refusal is audited and raised as `PermissionDenied` (the doors use it);
- `restrict(queryset, who, action)`: the rows a principal may see (every filtered list of pools,
  workflows, configs, revisions and requests); the model declares its resources (`portal.resources`);
- `register_object_right(model, codename, actions)`: per-object rights (django-guardian permissions,
  consulted here and nowhere else), e.g. a pool's owners may read and update that pool's config.

Semantics are OSMO 6.2's (`access.matching`):
- `decide`: a matching Deny in *any* role wins; else a matching Allow allows; else an object right on the
  row allows; else denied.
- `restrict` / `allowed_pools`: rows where *some role* allows the action on the row's resource; a Deny
  only cancels Allows of its own role. So a Deny in role A does not hide a pool that role B allows
  (OSMO's `GetAllowedPools`), even though `decide` would refuse a submission there. We keep that on
  purpose, for compatibility; `explain` shows both answers.

Cost: roles and policies are loaded once per principal per request (one query), and cached per process
while the access epoch stays the same (`access.epoch`: then a request pays one tiny epoch query instead);
decisions are memoised per principal, so any decision after the first costs no query. `restrict` adds
no query of its own (one more, once, when the model has object rights: the principal's object
permissions, cached like the roles).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from django.apps import apps
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AnonymousUser
from django.db.models import Q, QuerySet
from django.urls import reverse

from access import actions
from access.epoch import EpochCache
from access.matching import Decision, Rule, evaluate, resource_matches, rules_of, visible_in_role
from access.models import APIToken, Role
from access.services import audit
from portal.errors import PermissionDenied
from portal.resources import PolicyResources, Scope

DEFAULT_ROLE = "osmo-default"
ADMIN_ROLE = "osmo-admin"
POOL_ACTION = actions.WORKFLOW_CREATE
ADMIN_ACTIONS = actions.ADMIN_ACTIONS

__all__ = [
    "Decision",
    "ObjectRight",
    "Principal",
    "admin_access",
    "allowed_names",
    "decide",
    "explain",
    "PolicyRefusal",
    "principal",
    "register_object_right",
    "require",
    "restrict",
    "role_names",
]


class Principal:
    """Who is asking: a user (maybe anonymous) or a token. Loads its rules lazily, once."""

    def __init__(self, user=None, token: APIToken | None = None) -> None:
        self.token = token
        self.user = token.user if token is not None else (user or AnonymousUser())
        self._roles: dict[str, tuple[Rule, ...]] | None = None
        self._object_permissions: frozenset | None = None
        self._decisions: dict[tuple, Decision] = {}
        self.request = None  # the HTTP request this principal asks for, if any (for audit events)
        self.door = ""  # and the door it came through: "api", "admin" or "page"

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
            self._roles = dict(_RULES.lookup(self.rules_key(), self._load_rules))
        return self._roles

    def rules_key(self) -> tuple | None:
        """What the rules depend on: the user and token (None: only the default role applies)."""
        if not (self.user.is_authenticated and self.user.is_active):
            return None
        return (self.user.pk, self.token.pk if self.token is not None else None)

    def _load_rules(self) -> dict[str, tuple[Rule, ...]]:
        return {name: rules_of(name, policies) for name, policies in _load(self)}

    @property
    def object_permissions(self) -> frozenset[tuple[str, str, str, str]]:
        """The user's guardian object permissions (a token carries roles only: none). One query, cached."""
        if self._object_permissions is None:
            key = self.rules_key()
            if key is None or self.token is not None:
                self._object_permissions = frozenset()
            else:
                self._object_permissions = _OBJECT_PERMISSIONS.lookup(
                    self.user.pk, lambda: _load_object_permissions(self.user)
                )
        return self._object_permissions

    def decide(self, action: str, resource: str = "") -> Decision:
        key = (action, resource)
        decision = self._decisions.get(key)
        if decision is None:
            decision = self._decisions[key] = evaluate(self.roles, action, resource)
        return decision

    def denies(self, action: str, resource: str) -> bool:
        """Whether some role explicitly denies it (an object right does not override a Deny)."""
        return any(rule.deny and rule.matches(action, resource) for rules in self.roles.values() for rule in rules)

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
            cache[key].request, cache[key].door = who, _door_of(who)
        return cache[key]
    return Principal(who)


def _door_of(request) -> str:
    if hasattr(request, "_request") or request.path.startswith("/api/"):  # a DRF request, or under /api/
        return "api"
    return "admin" if request.path.startswith(reverse("admin:index")) else "page"


def decide(who, action: str, resource: str = "", *, obj=None) -> Decision:
    """May `who` do `action` (e.g. `workflow:Create`) on `resource` (e.g. `pool/team-a`, `config/pool`)?

    `obj`: the row the action is on (its model declares `policy_resources`; `resource` defaults to the
    row's resource for the action), or a model class ("on some row of it", for list and module pages).
    For a row, its owner may do the model's owner actions; for a row or a model, a registered object
    right allows what the roles do not, unless a role explicitly denies it.
    """
    subject = principal(who)
    if obj is None:
        return subject.decide(action, resource)
    row = None if isinstance(obj, type) else obj
    resource = resource or (_resource_of(row, action) if row is not None else "")
    key = (action, resource, obj if row is None else (type(row), row.pk))
    decision = subject._decisions.get(key)
    if decision is None:
        decision = _owner_decision(subject, action, row) if row is not None else None
        if decision is None:
            decision = subject.decide(action, resource)
            if not decision.allowed and not subject.denies(action, resource):
                decision = _object_decision(subject, action, obj) or decision
        subject._decisions[key] = decision
    return decision


def _resource_of(row, action: str) -> str:
    return _declared(type(row)).scope(actions.resource_kind(action), type(row)).resource_of(row)


def _owner_decision(subject: Principal, action: str, row) -> Decision | None:
    declared = getattr(type(row), "policy_resources", None)
    if (
        isinstance(declared, PolicyResources)
        and action in declared.owner_actions
        and declared.owned_by(row, subject.user)
    ):
        return Decision(True, [f"{subject.name} owns {type(row)._meta.verbose_name} {row}"])
    return None


def role_names(who) -> list[str]:
    return sorted(principal(who).roles)


def admin_access(who) -> Decision:
    """May `who` open the admin console? When some role *allows* a config action on some config type, or
    the user holds an object right to a config action (a pool owner: one more query, once, when no role
    lets them in).

    Denies are not considered here: they decide each page (`decide(..., "config/<type>")`), not entry.
    """
    subject = principal(who)
    key = (actions.ADMIN_ACCESS, "")
    cached = subject._decisions.get(key)
    if cached is not None:
        return cached
    granting = [
        rule
        for rules in subject.roles.values()
        for rule in rules
        if not rule.deny and any(rule.matches(action, "config/*") for action in ADMIN_ACTIONS)
    ]
    if granting:
        decision = Decision(True, [f"{rule.describe()} allows a config action" for rule in granting])
    elif any(_held(subject, right) for right in _OBJECT_RIGHTS if right.actions & set(ADMIN_ACTIONS)):
        decision = Decision(
            True,
            [
                f"{subject.name} holds an object right to a config action "
                f"({right.describe()} of some {right.model._meta.verbose_name})"
                for right in _OBJECT_RIGHTS
                if _held(subject, right)
            ],
        )
    else:
        decision = Decision(
            False,
            [
                f"no policy of roles {', '.join(sorted(subject.roles)) or '(none)'} allows "
                "config:Read or config:Update on any config type"
            ],
        )
    subject._decisions[key] = decision
    return decision


# --- restricting lists ------------------------------------------------------------------------------

_ALL = Q(pk__isnull=False)


def restrict(queryset: QuerySet, who, action: str | Iterable[str]) -> QuerySet:
    """The rows of `queryset` that `who` may see for `action` (any of several actions): the one filter for
    lists of pools, workflows, configs, revisions and requests. One query, whatever the number of rows or
    roles (the principal's rules are loaded once; object rights, when the model has some, once more).

    The model declares its resources (`portal.resources`). Visibility is OSMO's `GetAllowedPools`: the
    union over roles of (that role's Allows minus that role's Denies); plus the rows the principal owns
    (for the model's owner actions) and the rows an object right gives them (`register_object_right`).
    """
    model = queryset.model
    declared = _declared(model)
    subject = principal(who)
    condition = None
    for name in (action,) if isinstance(action, str) else tuple(action):
        scope = declared.scope(actions.resource_kind(name), model)
        part = _role_condition(subject, name, scope)
        if part is _ALL:
            return queryset
        if name in declared.owner_actions and subject.user.is_authenticated:
            part = _either(part, Q(**{declared.owner: subject.user.pk}))
        for right in _rights_for(model, name):
            part = _either(part, _right_condition(subject, right))
        condition = _either(condition, part)
    return queryset.none() if condition is None else queryset.filter(condition)


def allowed_names(who, kind: str, action: str) -> set[str]:
    """Names of the `kind` resources (e.g. pools) `who` may use for `action`, from the model whose rows
    are those resources (declared with `Scope(kind, ..., lists=True)`)."""
    model, scope = _listing_model(kind)
    return set(restrict(model.objects.all(), who, action).values_list(scope.field, flat=True))


def resource_names(kind: str) -> list[str]:
    """Every name of the `kind` resources (e.g. all pools), sorted: for pickers such as the explain page."""
    model, scope = _listing_model(kind)
    return list(model.objects.order_by(scope.field).values_list(scope.field, flat=True))


def _declared(model) -> PolicyResources:
    declared = getattr(model, "policy_resources", None)
    if not isinstance(declared, PolicyResources):
        raise TypeError(f"{model.__name__} declares no policy_resources (portal.resources.PolicyResources)")
    return declared


def _listing_model(kind: str):
    found = _LISTING.get(kind)
    if found is None:
        for model in apps.get_models():
            declared = getattr(model, "policy_resources", None)
            scope = declared.scopes.get(kind) if isinstance(declared, PolicyResources) else None
            if scope is not None and scope.lists and "policy_resources" in vars(model):  # not a subclass
                found = _LISTING[kind] = (model, scope)
                break
        else:
            raise LookupError(f"no model lists the {kind!r} resources (Scope({kind!r}, ..., lists=True))")
    return found


_LISTING: dict[str, tuple] = {}


def _either(left: Q | None, right: Q | None) -> Q | None:
    if left is None:
        return right
    if right is None:
        return left
    return _ALL if _ALL in (left, right) else left | right


def _role_condition(subject: Principal, action: str, scope: Scope) -> Q | None:
    condition = None
    for rules in subject.roles.values():
        allow = _rules_condition([r for r in rules if not r.deny and r.matches_action(action)], scope)
        if allow is None:
            continue
        deny = _rules_condition([r for r in rules if r.deny and r.matches_action(action)], scope)
        condition = _either(condition, allow if deny is None else allow & ~deny)
    return condition


def _rules_condition(rules: list[Rule], scope: Scope) -> Q | None:
    """Rows whose resource matches any resource pattern of `rules`, as a Q (None: no row)."""
    condition = None
    for rule in rules:
        for pattern in rule.resources:  # empty resources = global-only: never a row
            condition = _either(condition, _pattern_condition(pattern, scope))
            if condition is _ALL:
                return _ALL
    return condition


def _pattern_condition(pattern: str, scope: Scope) -> Q | None:
    if scope.fixed:
        return _ALL if resource_matches(pattern, f"{scope.kind}/{scope.fixed}") else None
    kind = f"{scope.kind}/"
    if pattern == "*":
        return _ALL
    if pattern.endswith("*"):
        head = pattern[:-1]
        if head.startswith(kind):
            name = head[len(kind) :]
            return Q(**{f"{scope.field}__{'istartswith' if scope.lower else 'startswith'}": name}) if name else _ALL
        return _ALL if kind.startswith(head) else None
    if pattern.startswith(kind):
        return Q(**{f"{scope.field}__{'iexact' if scope.lower else 'exact'}": pattern[len(kind) :]})
    return None


# --- object rights (django-guardian) ----------------------------------------------------------------


@dataclass(frozen=True)
class ObjectRight:
    """Holding guardian permission `codename` on an object grants `actions` on one row of `model`: the
    object itself (`via=""`), or the row whose `via` field points at it (a department's projects)."""

    model: type
    codename: str  # "app_label.codename" of the permission, held on the object (guardian)
    actions: frozenset[str]
    via: str = ""
    label: str = ""  # how the admin and `explain` call a holder ("owner")

    def holder_model(self):
        model = self.model
        for part in self.via.split("__") if self.via else ():
            model = model._meta.get_field(part).related_model
        return model

    def holder_pk(self, obj):
        if not self.via:
            return obj.pk
        *path, last = self.via.split("__")
        for part in path:
            obj = getattr(obj, part)
        return getattr(obj, f"{last}_id")

    def describe(self) -> str:
        return f"{self.label or 'holder of ' + self.codename} ({', '.join(sorted(self.actions))})"


_OBJECT_RIGHTS: list[ObjectRight] = []


def register_object_right(
    model, codename: str, actions_granted: Iterable[str], *, via: str = "", label: str = ""
) -> ObjectRight:
    """Declare an object right (at app start, from the app that owns `model`). See `ObjectRight`."""
    right = ObjectRight(model, codename, frozenset(actions_granted), via, label)
    if right not in _OBJECT_RIGHTS:
        _OBJECT_RIGHTS.append(right)
    return right


def object_rights_of(model) -> list[ObjectRight]:
    return [right for right in _OBJECT_RIGHTS if right.model is model]


def _rights_for(model, action: str) -> list[ObjectRight]:
    return [right for right in _OBJECT_RIGHTS if right.model is model and action in right.actions]


def _held(subject: Principal, right: ObjectRight) -> set[str]:
    """Primary keys (as text) of the objects on which `subject` holds `right`'s permission."""
    meta = right.holder_model()._meta
    app_label, _, codename = right.codename.rpartition(".")
    return {
        pk
        for label, model, code, pk in subject.object_permissions
        if label == (app_label or meta.app_label) and model == meta.model_name and code == codename
    }


def _right_condition(subject: Principal, right: ObjectRight) -> Q | None:
    held = _held(subject, right)
    if not held:
        return None
    holder = right.holder_model()
    pks = [holder._meta.pk.to_python(pk) for pk in held]
    return Q(**{f"{right.via}__pk__in" if right.via else "pk__in": pks})


def _load_object_permissions(user) -> frozenset[tuple[str, str, str, str]]:
    """(app label, model, codename, object pk) of every object permission `user` holds: one query."""
    from guardian.models import GroupObjectPermission, UserObjectPermission

    fields = ("content_type__app_label", "content_type__model", "permission__codename", "object_pk")
    own = UserObjectPermission.objects.filter(user_id=user.pk).values_list(*fields)
    through_groups = GroupObjectPermission.objects.filter(group__user=user.pk).values_list(*fields)
    return frozenset(own.union(through_groups))


_OBJECT_PERMISSIONS = EpochCache()  # user pk → object permissions, per process, while the epoch holds


def _object_decision(subject: Principal, action: str, obj) -> Decision | None:
    """An object right's Allow for `action` on `obj` (a row, or a model: "some row of it"), or None."""
    model = obj if isinstance(obj, type) else type(obj)
    for right in _rights_for(model, action):
        held = _held(subject, right)
        if held and (obj is model or str(right.holder_pk(obj)) in held):
            target = model._meta.verbose_name if obj is model else f"{model._meta.verbose_name} {obj}"
            return Decision(
                True,
                [f"{subject.name} is {right.describe()} of {target}: object right {right.codename} allows {action}"],
            )
    return None


# --- require: decide, audit a refusal, raise ----------------------------------------------------------


class PolicyRefusal(PermissionDenied):
    """`PermissionDenied` raised by `require`, carrying the decision (pages show its reasons)."""

    def __init__(self, reason: str, decision: Decision, **where) -> None:
        super().__init__(reason, **where)
        self.decision = decision


def require(
    who,
    action: str,
    resource: str = "",
    *,
    obj=None,
    target: str = "",
    refusal: str = "",
    field: str = "resource",
    value=None,
) -> Decision:
    """`decide`; a refusal is audited (when `who` is, or came from, a request: its door is the source) and
    raised as `PolicyRefusal`, a `PermissionDenied` saying "<who> <refusal>: <why>".

    `target`: the resource the audit event and the message name (default: the decided resource, e.g. a
    workflow's `workflow/<id>` rather than its pool); `refusal` defaults to "may not <action> on <target>";
    `field` / `value`: the error's field and value (default: "resource" and the target).
    """
    subject = principal(who)
    decision = decide(subject, action, resource, obj=obj)
    if decision.allowed:
        return decision
    target = target or resource or (_resource_of(obj, action) if obj is not None and not isinstance(obj, type) else "")
    if subject.request is not None:
        audit.denied(subject.request, subject, action, target, subject.door, decision.because)
    refusal = refusal or f"may not {action} on {target or '(global)'}"
    raise PolicyRefusal(
        f"{subject.name} {refusal}: {'; '.join(decision.because)}",
        decision,
        field=field,
        value=target if value is None else value,
    )


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
    object_rights: list[str] = field(default_factory=list)  # what object rights allow on the resource

    def as_dict(self) -> dict:
        return dict(vars(self))


def explain(who, action: str, resource: str) -> Explanation:
    """`decide` with its reasons, plus, for a pool, whether the pool is *listed* for the principal and
    which roles list it (the two can differ: see the module docstring), and the object rights the
    principal holds on it (a pool owner may edit that pool's config without an admin role; a department's
    admin, `department/<name>`, may create projects in it). When an object right grants `action` on the
    named row, the verdict is the row's decision (`decide(..., obj=row)`), as the doors ask it."""
    subject = principal(who)
    kind, _, name = resource.partition("/")
    row = _row_with_right(kind, name, action)
    decision = decide(subject, action, obj=row) if row is not None else subject.decide(action, resource)
    result = Explanation(
        subject.name, action, resource, sorted(subject.roles), decision.allowed, list(decision.because)
    )
    if kind == "pool" and name and not resource.endswith("/*"):
        listing = [role for role, rules in sorted(subject.roles.items()) if visible_in_role(rules, action, resource)]
        result.listed = bool(listing)
        result.listed_because = [f"role {role} allows {action} on {resource} and does not deny it" for role in listing]
    result.object_rights = _object_reasons(subject, kind, name)
    return result


def _row_with_right(kind: str, name: str, action: str):
    """The row named `<kind>/<name>` when some object right on its model grants `action`, else None."""
    try:
        model, scope = _listing_model(kind)
    except LookupError:
        return None
    if not name or not any(action in right.actions for right in object_rights_of(model)):
        return None
    return model.objects.filter(**{scope.field: name}).first()


def _object_reasons(subject: Principal, kind: str, name: str) -> list[str]:
    """What `subject`'s object rights allow on the `kind` resource `name` (e.g. the pool team-a)."""
    try:
        model, scope = _listing_model(kind)
    except LookupError:
        return []
    row = model.objects.filter(**{scope.field: name}).first() if name and object_rights_of(model) else None
    if row is None:
        return []
    return [
        f"{subject.name} is {right.describe()} of {model._meta.verbose_name} {name} (object right {right.codename})"
        for right in object_rights_of(model)
        if str(right.holder_pk(row)) in _held(subject, right)
    ]
