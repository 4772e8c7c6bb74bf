"""The handlers of the pools app's config types: what is particular to each beyond its description
(pools.config_types): secrets kept across a shown document, references loaded once per batch, pools
recompiled after a write, referrers named before a delete. Registered by `PoolsConfig.ready()`."""

from __future__ import annotations

from django.db import models

from configs.kinds import KEEP_SECRET
from configs.registry import SchemaHandler
from pools.config_types import BACKEND, POD_TEMPLATE, POOL, RESOURCE_VALIDATION, SECRET_FIELDS
from pools.models import Backend, PodTemplate, Pool, ResourceValidation
from pools.services import compilation, pool_writer
from pools.services.snapshots import pools_for_snapshot


class BackendHandler(SchemaHandler):
    schema, model = BACKEND, Backend

    def prepare(self, docs):
        """A `<set …>` marker keeps the stored secret: put the stored value in the document."""
        keep = [doc for doc in docs if any(getattr(doc, key) is KEEP_SECRET for key in SECRET_FIELDS)]
        stored = {b.name: b for b in Backend.objects.filter(name__in=[doc.name for doc in keep]).only(
            "name", *SECRET_FIELDS)} if keep else {}
        for doc in keep:
            for key in SECRET_FIELDS:
                if getattr(doc, key) is KEEP_SECRET:
                    current = getattr(stored[doc.name], key) if doc.name in stored else ""
                    if not current:
                        doc.warnings.append(f"{key}: the <set> marker keeps a stored value, but none is stored")
                    setattr(doc, key, current)
        return None

    def referrers(self, obj):
        return [f"pool {name}" for name in obj.pools.order_by("name").values_list("name", flat=True)]


class _ReferencedHandler(SchemaHandler):
    """Pod templates and resource validations: pools that use them are recompiled after a write."""

    ref_field: str
    pool_field: str
    platform_field: str

    def referrers(self, obj):
        pools = [f"pool {ref.pool.name} ({self.pool_field})" for ref in obj.pool_refs.select_related("pool")]
        platforms = [f"platform {ref.platform} ({self.platform_field})"
                     for ref in obj.platform_refs.select_related("platform__pool")]
        return sorted(pools) + sorted(platforms)

    def after_save(self, objs, prepared):
        direct = {f"{self.ref_field}_refs__{self.ref_field}__in": objs}
        via_platform = {f"platforms__{self.ref_field}_refs__{self.ref_field}__in": objs}
        compilation.recompile_pools(Pool.objects.filter(models.Q(**direct) | models.Q(**via_platform)).distinct())


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
        return pool_writer.References.load(docs)

    def save(self, doc, existing, prepared):
        prepared.check(doc)
        return pool_writer.save_pool(doc, existing, prepared)

    def after_save(self, objs, prepared):
        compilation.recompile_pools(Pool.objects.filter(pk__in=[obj.pk for obj in objs]))


CONFIG_TYPES = [BackendHandler(), PodTemplateHandler(), ResourceValidationHandler(), PoolHandler()]
