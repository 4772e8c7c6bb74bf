"""The portal roles an OIDC user holds, synced from the claims of each sign-in and each new bearer token."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from access import claims as claim_utils
from access.models import Role
from access.oidc.configuration import client_id
from access.policy import DEFAULT_ROLE  # held implicitly by everyone: it does not count as "a portal role"
from access.services.roles import sync_roles_from_claims  # the role service owns the sync modes

logger = logging.getLogger(__name__)
_ROLE_CLAIMS = ("groups", "realm_access", "resource_access")


def holds_portal_role(user) -> bool:
    """True when the user holds a role besides the implicit osmo-default (the superuser flag grants nothing,
    as everywhere in the portal: access.policy)."""
    return Role.objects.filter(group__user=user.pk).exclude(name=DEFAULT_ROLE).exists()


def sync_roles(user, claims: Mapping[str, Any]) -> None:
    """Hand the claims' group and role names to the role service (which applies import/force/ignore).

    A token that carries none of the role claims (`groups`, `realm_access`, `resource_access`) at all says
    nothing about roles, so nothing is synced: an access token minted without the group mapper must not
    strip a user's roles. An empty list is an answer, and is synced.
    """
    if not any(name in claims for name in _ROLE_CLAIMS):
        logger.warning(
            "OIDC claims for %s carry no groups/realm_access/resource_access claim; roles left unchanged "
            "(check the IdP's mappers, docs/oidc.md)",
            user.username,
        )
        return
    sync_roles_from_claims(user, claim_utils.external_names(claims, client_id()))
