"""ROLE as a config type: `config update|show|delete|history|diff|rollback ROLE`, `/api/configs/role[/NAME]`
and the admin all write roles through `configs.store`, so roles get history like every config.
Discovered by `configs.registry.autodiscover`.
"""

from __future__ import annotations

from access import documents
from access.models import Role
from access.services import roles
from configs.models import ConfigType
from configs.registry import Handler


class RoleHandler(Handler):
    config_type = ConfigType.ROLE
    model = Role

    def parse(self, name, body):
        return documents.parse_role(name, body)

    def prepare(self, docs):
        """Resolve `external_roles: null` (keep the current mapping) before snapshots are compared."""
        existing = {role.name: role for role in Role.objects.filter(name__in=[doc.name for doc in docs])}
        for doc in docs:
            if doc.external_roles is None:
                current = existing.get(doc.name)
                doc.external_roles = list(current.external_roles) if current else []
        return existing

    def doc_snapshot(self, doc):
        return doc.snapshot()

    def snapshot(self, obj):
        return documents.role_snapshot(obj)

    def save(self, doc, existing, prepared):
        return roles.save_role(doc, existing)

    def referrers(self, obj):
        return []  # users and tokens holding a role lose it with the role; built-ins refuse deletion

    def after_save(self, objs, prepared):
        """Nothing to recompute: principals load their roles' policies afresh on every request."""


CONFIG_TYPES = [RoleHandler()]
