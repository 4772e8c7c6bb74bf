"""The handlers of the pools app's config types: what is particular to each beyond its description
(pools.config_types): secrets kept across a shown document, references loaded once per batch, pools
recompiled after a write, referrers named before a delete. Registered by `PoolsConfig.ready()`."""

from __future__ import annotations

from django.db import models

from configs.registry import SchemaHandler
from pools import platform_checks
from pools.config_types import POD_TEMPLATE, POOL, RESOURCE_VALIDATION
from pools.models import PodTemplate, Pool, ResourceValidation
from pools.services import pool_writer
from pools.services.snapshots import pools_for_snapshot


def _recompile(pools) -> None:
    """Store the pools' resolved config, then which nodes serve their platforms (that may have changed too),
    then the checks layers above install (pools.platform_checks: a platform contradicting its node pool).
    The compiler and the placement engine are imported by the first write, not by a `config show`."""
    from pools.services import compilation, membership

    compilation.recompile_pools(pools)
    membership.recompute_for_pools(pools)
    platform_checks.run(list(pools.select_related("backend")))


class _ReferencedHandler(SchemaHandler):
    """Pod templates and resource validations: pools that use them are recompiled after a write."""

    ref_field: str
    pool_field: str
    platform_field: str

    def referrers(self, obj):
        pools = [f"pool {ref.pool.name} ({self.pool_field})" for ref in obj.pool_refs.select_related("pool")]
        platforms = [
            f"platform {ref.platform} ({self.platform_field})"
            for ref in obj.platform_refs.select_related("platform__pool")
        ]
        return sorted(pools) + sorted(platforms)

    def after_save(self, objs, prepared):
        direct = {f"{self.ref_field}_refs__{self.ref_field}__in": objs}
        via_platform = {f"platforms__{self.ref_field}_refs__{self.ref_field}__in": objs}
        _recompile(Pool.objects.filter(models.Q(**direct) | models.Q(**via_platform)).distinct())


class PodTemplateHandler(_ReferencedHandler):
    schema, model = POD_TEMPLATE, PodTemplate
    ref_field, pool_field, platform_field = "template", "common_pod_template", "override_pod_template"


class ResourceValidationHandler(_ReferencedHandler):
    schema, model = RESOURCE_VALIDATION, ResourceValidation
    ref_field, pool_field, platform_field = "validation", "common_resource_validations", "resource_validations"


class PoolHandler(SchemaHandler):
    schema, model = POOL, Pool

    def queryset(self):
        return pools_for_snapshot()

    def prepare(self, docs):
        return _PoolBatch(pool_writer.References.load(docs))

    def save(self, doc, existing, prepared):
        prepared.refs.check(doc)
        if existing is None:  # written with the batch's other new pools in after_save: a few bulk inserts
            pool = pool_writer.new_pool(doc, prepared.refs)
            prepared.new.append((doc, pool))
            return pool
        return pool_writer.save_pool(doc, existing, prepared.refs)

    def after_save(self, objs, prepared):
        pool_writer.save_new_pools(prepared.new, prepared.refs)
        _recompile(Pool.objects.filter(pk__in=[obj.pk for obj in objs]))


class _PoolBatch:
    """What one batch of pool documents refers to, and its new pools waiting for their bulk insert."""

    def __init__(self, refs: pool_writer.References) -> None:
        self.refs = refs
        self.new: list = []
