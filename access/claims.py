"""Pure extraction of what an OIDC token says about a user (no Django, no I/O).

Keycloak shapes (docs/oidc.md):
- `groups`: a list of group names, or of full paths when the mapper's "Full group path" is on
  (`/osmo-team`, `/parent/osmo-team`);
- `realm_access.roles`: realm roles;
- `resource_access.<client-id>.roles`: client roles of the portal's own client (OSMO defines its
  roles as client roles, appendix/keycloak_setup.rst).

Every value becomes a candidate *external name* that `access.services.roles.sync_roles_from_claims`
matches against role names and their `external_roles`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

_USERNAME_UNSAFE = re.compile(r"[^\w.@+-]+")
USERNAME_MAX_LENGTH = 150


def _strings(value: Any) -> list[str]:
    """A claim that should be a list of strings; a lone string counts as a list of one."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, Iterable) and not isinstance(value, (bytes, Mapping)):
        return [item for item in value if isinstance(item, str)]
    return []


def group_names(groups: Any) -> set[str]:
    """Names offered for each entry of a `groups` claim.

    A leading `/` is stripped. A path offers both its full form and its last segment:
    `/parent/osmo-team` -> {"parent/osmo-team", "osmo-team"}; `/osmo-team` -> {"osmo-team"}.
    """
    names: set[str] = set()
    for raw in _strings(groups):
        path = raw.strip().strip("/")
        if not path:
            continue
        names.add(path)
        last = path.rsplit("/", 1)[-1].strip()
        if last:
            names.add(last)
    return names


def realm_role_names(claims: Mapping[str, Any]) -> set[str]:
    realm_access = claims.get("realm_access")
    if not isinstance(realm_access, Mapping):
        return set()
    return {name.strip() for name in _strings(realm_access.get("roles")) if name.strip()}


def client_role_names(claims: Mapping[str, Any], client_id: str | None) -> set[str]:
    if not client_id:
        return set()
    resource_access = claims.get("resource_access")
    if not isinstance(resource_access, Mapping):
        return set()
    client = resource_access.get(client_id)
    if not isinstance(client, Mapping):
        return set()
    return {name.strip() for name in _strings(client.get("roles")) if name.strip()}


def external_names(claims: Mapping[str, Any], client_id: str | None = None) -> set[str]:
    """Every group and role name the token carries, ready for role sync."""
    return group_names(claims.get("groups")) | realm_role_names(claims) | client_role_names(claims, client_id)


def received_summary(claims: Mapping[str, Any], client_id: str | None = None) -> dict[str, list[str]]:
    """What the IdP sent, as shown to a user who holds no portal role (sorted, raw group paths kept)."""
    return {
        "groups": sorted({g.strip() for g in _strings(claims.get("groups")) if g.strip()}),
        "realm_roles": sorted(realm_role_names(claims)),
        "client_roles": sorted(client_role_names(claims, client_id)),
    }


def username_base(claims: Mapping[str, Any]) -> str:
    """A Django-safe username from `preferred_username`, else the e-mail's local part, else the subject.

    Collisions are the caller's business (it appends -2, -3, ...).
    """
    for candidate in (
        claims.get("preferred_username"),
        (claims.get("email") or "").split("@", 1)[0] if isinstance(claims.get("email"), str) else None,
        f"user-{claims.get('sub')}" if claims.get("sub") else None,
    ):
        if not isinstance(candidate, str):
            continue
        cleaned = _USERNAME_UNSAFE.sub("-", candidate.strip()).strip("-")
        if cleaned:
            return cleaned[: USERNAME_MAX_LENGTH - 8]  # leave room for a "-NNN" suffix
    return "user"


def username_candidates(base: str, limit: int = 1000) -> Iterable[str]:
    """`base`, `base-2`, `base-3`, ... (all within Django's username length)."""
    yield base
    for n in range(2, limit + 2):
        yield f"{base[: USERNAME_MAX_LENGTH - len(str(n)) - 1]}-{n}"


def profile_fields(claims: Mapping[str, Any]) -> dict[str, str]:
    """Django user fields the IdP owns: e-mail and names (empty strings when absent)."""

    def text(key: str, limit: int) -> str:
        value = claims.get(key)
        return value.strip()[:limit] if isinstance(value, str) else ""

    return {"email": text("email", 254), "first_name": text("given_name", 150), "last_name": text("family_name", 150)}
