"""OSMO 6.2's policy matching, exactly (OSMO's `src/utils/roles/action_registry.go`, NVIDIA/OSMO), as pure functions.

No Django, no database: `access.policy` loads a principal's roles once and asks these functions.

- Action patterns: exact, `*` / `*:*` (everything), `res:*` (every action of a resource type),
  `*:Act` (that action of every type).
- Resource patterns, against a requested resource: the empty resource `""` (a global action such as
  `pool:List`) is matched by every pattern; exact; `*`; a trailing `*` is a string prefix, so
  `pool/team-a*` matches `pool/team-a` and `pool/team-a-gpu-03` but not `pool/team-b`, and `pool/*`
  matches every `pool/…`. A requested *wildcard* resource (`pool/*`, "any pool") is matched by `pool/*`
  and by any `pool/x` pattern.
- A policy with an empty `resources` list matches only global actions (requested resource `""`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

ACTION_RE = re.compile(r"^(\*|[a-z]+):(\*|[A-Z][a-zA-Z]*)$")
ALLOW, DENY = "Allow", "Deny"
EFFECTS = (ALLOW, DENY)


def resource_matches(pattern: str, resource: str) -> bool:
    if resource == "" or pattern == resource or pattern == "*":
        return True
    if resource.endswith("/*"):
        # "any object of this type": matched by any pattern of the type, or a prefix covering the type.
        kind = resource[:-1]
        return pattern.startswith(kind) or (pattern.endswith("*") and kind.startswith(pattern[:-1]))
    return pattern.endswith("*") and resource.startswith(pattern[:-1])


@dataclass(frozen=True)
class Rule:
    """One policy of one role, ready to match (action patterns pre-sorted into lookup sets)."""

    role: str
    number: int  # 1-based position in the role's `policies`
    effect: str
    actions: tuple[str, ...]
    resources: tuple[str, ...]

    def __post_init__(self) -> None:
        exact, kinds, verbs, everything = set(), set(), set(), False
        for pattern in self.actions:
            kind, _, verb = pattern.partition(":")
            if pattern in ("*", "*:*"):
                everything = True
            elif verb == "*":
                kinds.add(kind)
            elif kind == "*":
                verbs.add(verb)
            else:
                exact.add(pattern)
        object.__setattr__(self, "_lookup", (everything, frozenset(exact), frozenset(kinds), frozenset(verbs)))

    @property
    def deny(self) -> bool:
        return self.effect == DENY

    def matches_action(self, action: str) -> bool:
        everything, exact, kinds, verbs = self._lookup
        if everything or action in exact:
            return True
        kind, _, verb = action.partition(":")
        return kind in kinds or verb in verbs

    def matches_resource(self, resource: str) -> bool:
        if not self.resources:
            return resource == ""  # empty resources = global-only (OSMO's checkResolvedAction)
        return any(resource_matches(pattern, resource) for pattern in self.resources)

    def matches(self, action: str, resource: str) -> bool:
        return self.matches_action(action) and self.matches_resource(resource)

    def describe(self) -> str:
        on = ", ".join(self.resources) if self.resources else "(global actions only)"
        return f"role {self.role} policy #{self.number} ({self.effect} {', '.join(self.actions)} on {on})"


def rules_of(role: str, policies: list[dict]) -> tuple[Rule, ...]:
    """Rules of a stored (already validated) policy list; tolerant of a missing effect or resources."""
    return tuple(
        Rule(
            role,
            number,
            policy.get("effect") or ALLOW,
            tuple(policy.get("actions") or ()),
            tuple(policy.get("resources") or ()),
        )
        for number, policy in enumerate(policies or (), start=1)
        if isinstance(policy, dict)
    )


@dataclass(frozen=True)
class Decision:
    """The answer of `access.policy.decide`: allowed or not, and which policies say so (or that none did).

    Decisions are memoised per request and shared: treat `because` as read-only.
    """

    allowed: bool
    because: list[str]

    def __bool__(self) -> bool:
        return self.allowed

    def as_dict(self) -> dict:
        return {"allowed": self.allowed, "because": list(self.because)}


def evaluate(roles: dict[str, tuple[Rule, ...]], action: str, resource: str) -> Decision:
    """Deny in any role wins; else any Allow allows; else nothing matched (denied)."""
    allows, denies = [], []
    for rules in roles.values():
        for rule in rules:
            if rule.matches(action, resource):
                (denies if rule.deny else allows).append(rule)
    target = f"{action} on {resource or '(global)'}"
    if denies:
        return Decision(False, [f"{rule.describe()} denies {target}" for rule in denies])
    if allows:
        return Decision(True, [f"{rule.describe()} allows {target}" for rule in allows])
    names = ", ".join(sorted(roles)) or "(none)"
    return Decision(False, [f"no policy of roles {names} allows {target}"])


def visible_in_role(rules: tuple[Rule, ...], action: str, resource: str) -> bool:
    """OSMO's pool visibility for one role: some Allow matches and no Deny *of the same role* does."""
    allowed = False
    for rule in rules:
        if rule.matches(action, resource):
            if rule.deny:
                return False
            allowed = True
    return allowed


def check_action(value: object) -> bool:
    return isinstance(value, str) and bool(ACTION_RE.match(value))
