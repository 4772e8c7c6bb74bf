"""Roles: built-in roles, saving role definitions, who holds which role, and IdP role sync.

A user holds a role by being in the role's Django group. Every grant and revocation goes through
`update_user_roles` (or `sync_roles_from_claims` for the IdP), which records an audit event and
removes revoked roles from the user's API tokens (OSMO's `access_token_roles` cascade), so a token
that lost a role does not get it back when the role is granted again.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from dataclasses import dataclass, field

from django.contrib.auth.models import Group
from django.db import transaction

from access.documents import ADMIN_POLICIES, BUILTIN_ROLES, pool_role
from access.models import APIToken, Role, SyncMode
from access.policy import ADMIN_ROLE, DEFAULT_ROLE
from access.services import audit
from configs import store
from configs.errors import ConfigError
from configs.models import ConfigType
from configs.revisions import Actor
from portal.errors import Conflict

IDP_SYNC = Actor(name="idp-sync", source="oidc")


class BuiltinRole(Conflict):
    code = "builtin"


# --- built-in roles and role definitions ------------------------------------------------------------


def ensure_builtin_roles() -> list[str]:
    """Create missing built-in roles, and merge the default actions a newer release added into existing ones
    (after every migrate, and after a test database flush). Returns the names created or changed."""
    existing = {role.name: role for role in Role.objects.filter(name__in=list(BUILTIN_ROLES))}
    touched = []
    for name, body in BUILTIN_ROLES.items():
        role = existing.get(name)
        if role is None:
            group, _ = Group.objects.get_or_create(name=name)
            Role.objects.create(
                group=group,
                name=name,
                description=body["description"],
                policies=copy.deepcopy(body["policies"]),
                immutable=body["immutable"],
            )
            touched.append(name)
            continue
        merged = merge_default_policies(role.policies, body["policies"])
        if merged != role.policies:
            document = {**store.show(ConfigType.ROLE, name), "policies": merged, "force": True}
            store.apply(
                ConfigType.ROLE, name, document, audit.SYSTEM, description="default actions of this release merged in"
            )
            touched.append(name)
    return touched


def merge_default_policies(policies: list, defaults: list[dict]) -> list:
    """OSMO's `merge_default_role_policies`: each default action missing from the role is appended to the
    role's policy with the same effect and resources (or the default policy is appended whole); what an
    operator added or kept is never removed. Returns a new list (the same content when nothing is missing)."""
    merged = copy.deepcopy(list(policies or []))
    for default in defaults:
        scope = (default.get("effect", "Allow"), sorted(default.get("resources") or []))
        target = next(
            (
                p
                for p in merged
                if isinstance(p, dict) and (p.get("effect", "Allow"), sorted(p.get("resources") or [])) == scope
            ),
            None,
        )
        if target is None:
            merged.append(copy.deepcopy(default))
            continue
        actions = list(target.get("actions") or [])
        missing = [a for a in default.get("actions") or [] if a not in actions]
        if missing:
            target["actions"] = actions + missing
    return merged


def save_role(doc, existing: Role | None) -> Role:
    """Write one role definition (the ROLE config handler's save, `doc` parsed by access.config_types.ROLE);
    refuses illegal changes."""
    if doc.name == ADMIN_ROLE and (doc.policies != ADMIN_POLICIES or not doc.immutable):
        raise BuiltinRole(
            f"Role {ADMIN_ROLE} is built in: it always allows *:* on * and stays immutable",
            field="policies",
            value=doc.name,
        )
    changes_rules = existing is not None and (doc.policies != existing.policies or not doc.immutable)
    if changes_rules and existing.immutable and not doc.force:
        raise ConfigError(
            f'Role {doc.name} is immutable; to change its policies anyway, add "force": true to the document',
            field="policies",
            value=doc.name,
        )
    role = existing or Role(name=doc.name)
    if role.group_id is None:
        role.group, _ = Group.objects.get_or_create(name=doc.name)
    role.description, role.policies, role.immutable = doc.description, doc.policies, doc.immutable
    role.sync_mode, role.external_roles = doc.sync_mode, list(doc.external_roles or [])
    role.save()
    return role


def set_pool_role(name: str, actor: Actor, *, description: str = "", tags=()) -> store.ApplyResult:
    """`config set ROLE osmo-<X> pool`: create or replace OSMO's generated role for pools starting with X."""
    return store.apply(ConfigType.ROLE, name, pool_role(name), actor, description=description, tags=tags)


def ensure_team_role(
    name: str,
    actor: Actor,
    *,
    external_roles: Iterable[str] = (),
    description: str = "",
) -> tuple[Role, bool]:
    """A team's role `osmo-<team>` (teams.services): created as OSMO's generated pool role when missing, and
    `external_roles` (IdP groups) added to its mapping; one ROLE revision when anything changes, none otherwise.
    An existing role's policies are left as they are. Returns (role, created)."""
    existing = Role.objects.filter(name=name).first()
    added = {group.strip() for group in external_roles if group.strip()}
    wanted = sorted({*(existing.external_roles if existing else []), *added})
    if existing is not None and wanted == sorted(existing.external_roles):
        return existing, False
    body = pool_role(name) if existing is None else store.show(ConfigType.ROLE, name)
    store.apply(ConfigType.ROLE, name, {**body, "external_roles": wanted}, actor, description=description)
    return Role.objects.get(name=name), existing is None


def check_deletable(role: Role) -> None:
    if role.name in BUILTIN_ROLES:
        raise BuiltinRole(f"{role.name} is a built-in role and cannot be deleted", field="name", value=role.name)


# --- who holds which role -------------------------------------------------------------------------------


@dataclass
class RoleChange:
    user: str
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.added or self.removed)


def user_role_names(user) -> list[str]:
    """Roles the user holds explicitly (`osmo-default` is implicit and not listed)."""
    return sorted(Role.objects.filter(group__user=user.pk).values_list("name", flat=True))


def resolve(names: Iterable[str], field: str = "roles") -> list[Role]:
    """Roles by name, in the given order; an unknown name is an error naming it."""
    wanted = [name.strip() for name in names if name and name.strip()]
    found = {role.name: role for role in Role.objects.filter(name__in=wanted)}
    for name in wanted:
        if name not in found:
            raise ConfigError(
                f"no role named {name!r}; create it first (config update ROLE or config set ROLE)",
                field=field,
                value=name,
            )
    return [found[name] for name in dict.fromkeys(wanted)]


def update_user_roles(
    user,
    add: Iterable[str] = (),
    remove: Iterable[str] = (),
    actor: Actor | None = None,
) -> RoleChange:
    with transaction.atomic():
        adding, removing = resolve(add, "add_roles"), resolve(remove, "remove_roles")
        both = {role.name for role in adding} & {role.name for role in removing}
        if both:
            raise ConfigError("is both added and removed", field="roles", value=sorted(both)[0])
        held = set(Role.objects.filter(group__user=user.pk).values_list("pk", flat=True))
        return _apply(
            user,
            [r for r in adding if r.pk not in held],
            [r for r in removing if r.pk in held],
            actor or audit.SYSTEM,
            {},
        )


def set_user_roles(user, names: Iterable[str], actor: Actor | None = None) -> RoleChange:
    """Make the user hold exactly `names` (the admin's role picker)."""
    with transaction.atomic():
        wanted = {role.pk: role for role in resolve(names)}
        held = {role.pk: role for role in Role.objects.filter(group__user=user.pk)}
        return _apply(
            user,
            [r for pk, r in wanted.items() if pk not in held],
            [r for pk, r in held.items() if pk not in wanted],
            actor or audit.SYSTEM,
            {},
        )


def _apply(user, adding: list[Role], removing: list[Role], actor: Actor, detail: dict) -> RoleChange:
    if adding:
        user.groups.add(*[role.group_id for role in adding])
    if removing:
        user.groups.remove(*[role.group_id for role in removing])
        APIToken.roles.through.objects.filter(
            apitoken__user=user.pk, role_id__in=[role.pk for role in removing]
        ).delete()
    target = f"user/{user.get_username()}"
    audit.record_all(
        [audit.event("role.grant", actor, target=target, detail={"role": role.name, **detail}) for role in adding]
        + [audit.event("role.revoke", actor, target=target, detail={"role": role.name, **detail}) for role in removing]
    )
    return RoleChange(user.get_username(), sorted(r.name for r in adding), sorted(r.name for r in removing))


# --- IdP sync ----------------------------------------------------------------------------------------------


@dataclass
class RoleSyncResult:
    """What one IdP sync did: roles added and removed, roles matched and already held, and names from
    the IdP that match no role."""

    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    unmatched: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.added or self.removed)


def sync_roles_from_claims(user, external_names: set[str], *, actor: Actor | None = None) -> RoleSyncResult:
    """Apply OSMO's IdP role sync for one login (OSMO's `user_role_sync.go`; its docs' `idp_role_mapping.rst`).

    A role is *mapped* when one of `external_names` (IdP groups / roles, already extracted from the
    claims) equals the role's name or is listed in its `external_roles`. Then, per the role's
    `sync_mode`: `import` adds a mapped role and never removes; `force` adds a mapped role and removes
    an unmapped one the user holds; `ignore` never touches the role. `osmo-default` is implicit and
    never synced. Changes are audited (source `oidc`) and removed roles leave the user's tokens.
    """
    names = {name.strip() for name in external_names if isinstance(name, str) and name.strip()}
    with transaction.atomic():
        roles = list(
            Role.objects.exclude(name=DEFAULT_ROLE).only("pk", "name", "group_id", "sync_mode", "external_roles")
        )
        held = set(Role.objects.filter(group__user=user.pk).values_list("pk", flat=True))
        adding, removing, kept, matched = [], [], [], set()
        for role in roles:
            hits = names & {role.name, *role.external_roles}
            matched |= hits
            if role.sync_mode == SyncMode.IGNORE:
                continue
            if hits:
                (kept if role.pk in held else adding).append(role)
            elif role.sync_mode == SyncMode.FORCE and role.pk in held:
                removing.append(role)
        change = _apply(user, adding, removing, actor or IDP_SYNC, {"via": "idp-sync"})
    return RoleSyncResult(change.added, change.removed, sorted(r.name for r in kept), sorted(names - matched))
