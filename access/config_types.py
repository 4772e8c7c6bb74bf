"""ROLE as a config type, described once: `config update|show|delete|history|diff|rollback ROLE`,
`/api/configs/role[/NAME]` and the admin all write roles through `configs.store`, so roles get history
like every config. Registered by `AccessConfig.ready()`.

The shape, as `config show ROLE` prints it and `config update ROLE` reads it:

    {"name": "osmo-team", "description": "...",
     "policies": [{"effect": "Allow", "actions": ["workflow:*"], "resources": ["pool/team*"]}],
     "immutable": false, "sync_mode": "import", "external_roles": ["team-gpu-users"]}

`force: true` lets an update change an immutable role's policies (it is not stored); a top-level
`actions` list (OSMO 6.0) is converted to policies.
"""

from __future__ import annotations

from access.documents import ExternalRoles, LegacyActions, Policies
from access.models import Role, SyncMode
from access.services import roles
from configs.kinds import Bool, Choice, Text
from configs.models import ConfigType
from configs.registry import SchemaHandler
from configs.schema import Field, Schema


def _legacy_actions_join_the_policies(doc) -> None:
    doc.policies.extend(doc.legacy_policies)


ROLE = Schema(
    ConfigType.ROLE,
    kind_label="role",
    name_in_body=True,
    fields=(
        Field("description", Text(), or_default=True),
        Field("policies", Policies(), default=[]),
        Field("immutable", Bool(), default=False),
        Field(
            "sync_mode",
            Choice(SyncMode.values, f"must be one of {', '.join(SyncMode.values)}"),
            default=SyncMode.IMPORT,
            or_default=True,
        ),
        Field("external_roles", ExternalRoles(), default=None),
        Field("force", Bool(), default=False, write_only=True),
        Field("actions", LegacyActions(), default=[], attr="legacy_policies", write_only=True),
    ),
    checks=(_legacy_actions_join_the_policies,),
)


class RoleHandler(SchemaHandler):
    schema, model = ROLE, Role

    def prepare(self, docs):
        """Resolve `external_roles: null` (keep the current mapping) before snapshots are compared."""
        existing = {role.name: role for role in Role.objects.filter(name__in=[doc.name for doc in docs])}
        for doc in docs:
            if doc.external_roles is None:
                current = existing.get(doc.name)
                doc.external_roles = list(current.external_roles) if current else []
        return existing

    def save(self, doc, existing, prepared):
        return roles.save_role(doc, existing)

    def referrers(self, obj):
        return []  # users and tokens holding a role lose it with the role; built-ins refuse deletion

    def after_save(self, objs, prepared):
        """Nothing to recompute: principals load their roles' policies afresh on every request."""
