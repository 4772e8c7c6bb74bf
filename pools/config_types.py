"""POOL, POD_TEMPLATE, RESOURCE_VALIDATION and BACKEND: the config types the pools app owns.

Discovered by `configs` at start-up (`configs.registry.autodiscover`). BACKEND lives here until its model
moves to the clusters app.
"""

from __future__ import annotations

from django.db import models

from configs.models import ConfigType
from configs.registry import Handler
from pools.models import Backend, PodTemplate, Pool, ResourceValidation
from pools.services import compilation, documents, pool_writer, snapshots


class BackendHandler(Handler):
    config_type = ConfigType.BACKEND
    model = Backend
    FIELDS = ("description", "namespace", "scheduler_name", "dashboard_url", "grafana_url", "connection",
              "api_url", "token", "ca_cert", "verify_tls", "kubeconfig", "kube_context")
    SECRETS = ("token", "kubeconfig")

    def parse(self, name, body):
        return documents.parse_backend(name, body)

    def prepare(self, docs):
        """A `<set …>` marker keeps the stored secret: put the stored value in the document."""
        keep = [doc for doc in docs if any(getattr(doc, key) is documents.KEEP_SECRET for key in self.SECRETS)]
        stored = {b.name: b for b in Backend.objects.filter(name__in=[doc.name for doc in keep]).only(
            "name", *self.SECRETS)} if keep else {}
        for doc in keep:
            for key in self.SECRETS:
                if getattr(doc, key) is documents.KEEP_SECRET:
                    current = getattr(stored[doc.name], key) if doc.name in stored else ""
                    if not current:
                        doc.warnings.append(f"{key}: the <set> marker keeps a stored value, but none is stored")
                    setattr(doc, key, current)
        return None

    def doc_snapshot(self, doc):
        return snapshots.backend_snapshot(doc)  # a BackendDoc has every field a Backend snapshot shows

    def save(self, doc, existing, prepared):
        backend = existing or Backend(name=doc.name)
        for field in self.FIELDS:
            setattr(backend, field, getattr(doc, field))
        backend.save()
        return backend

    def snapshot(self, obj):
        return snapshots.backend_snapshot(obj)

    def referrers(self, obj):
        return [f"pool {name}" for name in obj.pools.order_by("name").values_list("name", flat=True)]


class _NamedBodyHandler(Handler):
    """Pod templates and resource validations: a name and a body; pools that use them are recompiled."""

    body_field: str
    ref_field: str
    pool_field: str
    platform_field: str

    def doc_snapshot(self, doc):
        return doc[1]

    def save(self, doc, existing, prepared):
        name, body = doc
        obj = existing or self.model(name=name)
        setattr(obj, self.body_field, body)
        obj.save()
        return obj

    def snapshot(self, obj):
        return getattr(obj, self.body_field)

    def referrers(self, obj):
        pools = [f"pool {ref.pool.name} ({self.pool_field})" for ref in obj.pool_refs.select_related("pool")]
        platforms = [f"platform {ref.platform} ({self.platform_field})"
                     for ref in obj.platform_refs.select_related("platform__pool")]
        return sorted(pools) + sorted(platforms)

    def after_save(self, objs, prepared):
        direct = {f"{self.ref_field}_refs__{self.ref_field}__in": objs}
        via_platform = {f"platforms__{self.ref_field}_refs__{self.ref_field}__in": objs}
        compilation.recompile_pools(Pool.objects.filter(models.Q(**direct) | models.Q(**via_platform)).distinct())


class PodTemplateHandler(_NamedBodyHandler):
    config_type = ConfigType.POD_TEMPLATE
    model = PodTemplate
    body_field, ref_field = "body", "template"
    pool_field, platform_field = "common_pod_template", "override_pod_template"

    def parse(self, name, body):
        return (name, documents.parse_pod_template(name, body))


class ResourceValidationHandler(_NamedBodyHandler):
    config_type = ConfigType.RESOURCE_VALIDATION
    model = ResourceValidation
    body_field, ref_field = "rules", "validation"
    pool_field, platform_field = "common_resource_validations", "resource_validations"

    def parse(self, name, body):
        return (name, documents.parse_resource_validation(name, body))


class PoolHandler(Handler):
    config_type = ConfigType.POOL
    model = Pool

    def parse(self, name, body):
        return documents.parse_pool(name, body)

    def queryset(self):
        return snapshots.pools_for_snapshot()

    def snapshot(self, obj):
        return snapshots.pool_snapshot(obj)

    def doc_snapshot(self, doc):
        return snapshots.pool_doc_snapshot(doc)

    def prepare(self, docs):
        return pool_writer.References.load(docs)

    def save(self, doc, existing, prepared):
        prepared.check(doc)
        return pool_writer.save_pool(doc, existing, prepared)

    def after_save(self, objs, prepared):
        compilation.recompile_pools(Pool.objects.filter(pk__in=[obj.pk for obj in objs]))


CONFIG_TYPES = [BackendHandler(), PodTemplateHandler(), ResourceValidationHandler(), PoolHandler()]
