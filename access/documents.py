"""ROLE documents in OSMO's JSON shape: the value kinds of a role's fields (policies, 6.0 actions, external
roles; the ROLE description itself is in access.config_types), and the built-in roles.

Pure functions (no database). The shape, as `config show ROLE` prints it and `config update ROLE` reads it:

    {"name": "osmo-team", "description": "...",
     "policies": [{"effect": "Allow", "actions": ["workflow:*"], "resources": ["pool/team*"]}],
     "immutable": false, "sync_mode": "import", "external_roles": ["team-gpu-users"]}

`force: true` in a body lets an update change an immutable role's policies (it is not stored).
"""

from __future__ import annotations

import copy
import re

from access import actions, legacy
from access.matching import ACTION_RE, EFFECTS
from configs.errors import ConfigError
from configs.kinds import Kind

POOL_ROLE_RE = re.compile(r"^osmo-(.+)$")

ADMIN_POLICIES = [{"effect": "Allow", "actions": [actions.EVERYTHING], "resources": ["*"]}]
BUILTIN_ROLES: dict[str, dict] = {
    "osmo-admin": {
        "description": "Administrators: every action on everything (built in, immutable).",
        "policies": ADMIN_POLICIES,
        "immutable": True,
    },
    "osmo-user": {
        "description": "Users: list pools and resources, read workflows, manage their profile, tokens and apps.",
        "policies": [
            {
                "effect": "Allow",
                "resources": ["*"],
                "actions": [
                    actions.APP_ALL,
                    actions.AUTH_TOKEN,
                    actions.CREDENTIALS_ALL,
                    actions.MCP_ACCESS,
                    actions.POOL_LIST,
                    actions.PROFILE_READ,
                    actions.PROFILE_UPDATE,
                    actions.RESOURCES_READ,
                    actions.USER_LIST,
                    actions.WORKFLOW_LIST,
                    actions.WORKFLOW_READ,
                ],
            },
            {"effect": "Allow", "actions": [actions.WORKFLOW_ALL], "resources": ["pool/default"]},
        ],
        "immutable": False,
    },
    "osmo-backend": {
        "description": "Backend operators (cluster agents): operate backends, list pools, read backend config.",
        "policies": [
            {
                "effect": "Allow",
                "actions": [actions.INTERNAL_OPERATOR, actions.POOL_LIST, actions.CONFIG_READ],
                "resources": ["backend/*", "pool/*", "config/backend"],
            }
        ],
        "immutable": True,
    },
    "osmo-ctrl": {
        "description": "Workflow control sidecars: logging and routing.",
        "policies": [
            {"effect": "Allow", "actions": [actions.INTERNAL_LOGGER, actions.INTERNAL_ROUTER], "resources": ["*"]}
        ],
        "immutable": True,
    },
    "osmo-default": {
        "description": "Held implicitly by everyone, signed in or not.",
        "policies": [
            {
                "effect": "Allow",
                "resources": ["*"],
                "actions": [
                    actions.SYSTEM_HEALTH,
                    actions.SYSTEM_VERSION,
                    actions.AUTH_LOGIN,
                    actions.AUTH_REFRESH,
                    actions.PROFILE_ALL,
                ],
            }
        ],
        "immutable": False,
    },
}


class Policies(Kind):
    """`[{"effect", "actions", "resources"}, ...]`; 6.0 path actions inside a policy are converted."""

    nullable = True

    def parse_noting(self, value, where, warnings):
        if not isinstance(value, list):
            raise ConfigError("must be a list of policies", field=where, value=value)
        return [item for index, policy in enumerate(value) for item in _policy(policy, f"{where}[{index}]", warnings)]

    def show(self, value):
        return copy.deepcopy(value)


class LegacyActions(Kind):
    """The seed documents' 6.0 role: `actions` at the top level, converted to policies (see `ROLE`)."""

    def parse_noting(self, value, where, warnings):
        if not isinstance(value, list):
            raise ConfigError("must be a list of 6.0 actions", field=where, value=value)
        converted = legacy.convert(value, where)
        warnings.append("converted from the OSMO 6.0 format (path globs) to semantic policies")
        warnings.extend(converted.warnings)
        return converted.policies


class ExternalRoles(Kind):
    """IdP group or role names granting the role; null keeps the current mapping (new role: none)."""

    nullable = True

    def parse(self, value, where):
        if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
            raise ConfigError(
                "must be a list of IdP group or role names (or null to keep the current mapping)",
                field=where,
                value=value,
            )
        return sorted({v.strip() for v in value})

    def show(self, value):
        return list(value or [])

    def from_form(self, value):
        return [name.strip() for name in (value or "").split(",") if name.strip()]


def _policy(policy: object, where: str, warnings: list[str]) -> list[dict]:
    if not isinstance(policy, dict):
        raise ConfigError('a policy is {"effect", "actions", "resources"}', field=where, value=policy)
    unknown = sorted(set(policy) - {"effect", "actions", "resources"})
    if unknown:
        raise ConfigError(
            "unknown field; a policy has effect, actions and resources", field=f"{where}.{unknown[0]}", value=unknown[0]
        )
    effect = policy.get("effect") or "Allow"
    if not isinstance(effect, str) or effect.capitalize() not in EFFECTS:
        raise ConfigError("must be Allow or Deny", field=f"{where}.effect", value=effect)
    effect = effect.capitalize()
    actions = policy.get("actions")
    if not isinstance(actions, list) or not actions:
        raise ConfigError(
            'must be a non-empty list such as ["workflow:Create"]', field=f"{where}.actions", value=actions
        )
    resources = policy.get("resources")
    resources = [] if resources is None else resources
    if not isinstance(resources, list) or not all(isinstance(r, str) for r in resources):
        raise ConfigError(
            'must be a list of strings such as ["pool/team*"]', field=f"{where}.resources", value=resources
        )
    for index, resource in enumerate(resources):
        if "*" in resource[:-1]:
            warnings.append(
                f"{where}.resources[{index}]: only a trailing '*' is a wildcard; {resource!r} "
                "matches its other '*' literally"
            )
    semantic, old = [], []
    for index, action in enumerate(actions):
        if legacy.is_legacy_action(action):
            old.append(action)
        elif isinstance(action, str) and ACTION_RE.match(action):
            semantic.append(action)
        else:
            raise ConfigError(
                "must look like workflow:Create, workflow:*, *:Read or *:* (or a 6.0 {base, path, method} action)",
                field=f"{where}.actions[{index}]",
                value=action,
            )
    result = [{"effect": effect, "actions": semantic, "resources": list(resources)}] if semantic else []
    if old:
        converted = legacy.convert(old, f"{where}.actions")
        for item in converted.policies:
            if effect == "Deny":
                item["effect"] = "Deny"
        result.extend(converted.policies)
        warnings.append(f"{where}: 6.0 path actions converted to semantic policies")
        warnings.extend(converted.warnings)
    return result


def pool_role(name: str) -> dict:
    """OSMO's generated pool role: `osmo-<X>` may use every pool whose name starts with `<X>`."""
    match = POOL_ROLE_RE.match(name or "")
    if not match:
        raise ConfigError(
            "a generated pool role is named osmo-<pool name prefix>, e.g. osmo-team", field="name", value=name
        )
    prefix = match.group(1)
    return {
        "name": name,
        "description": f"Generated Role for pool {prefix}",
        "policies": [{"effect": "Allow", "actions": [actions.WORKFLOW_ALL], "resources": [f"pool/{prefix}*"]}],
    }
