"""One handler per config type: how to parse, save, snapshot and find referrers of its objects.

`pools.services.configs` drives them in batches: `prepare` loads what a batch refers to once,
`doc_snapshot` says what an object will look like once saved (so unchanged documents cost no writes),
`save` writes one object, `after_save` recomputes what depends on the saved objects. Other apps
register their own types (ROLE) with `register`.
"""

from __future__ import annotations

from django.db import models

from clusters.models import Backend
from pools.errors import ConfigError
from pools.models import ConfigType, PodTemplate, Pool, ResourceValidation
from pools.services import compilation, documents, membership, pool_writer, snapshots


def _recompile(pools) -> None:
    """Store the pools' resolved config, then which nodes serve their platforms (that may have changed too)."""
    compilation.recompile_pools(pools)
    membership.recompute_for_pools(pools)


class Handler:
    config_type: str
    model: type[models.Model]

    def parse(self, name: str, body: object):
        raise NotImplementedError

    def doc_snapshot(self, doc):
        raise NotImplementedError

    def save(self, doc, existing: models.Model | None, prepared) -> models.Model:
        raise NotImplementedError

    def snapshot(self, obj: models.Model):
        raise NotImplementedError

    def prepare(self, docs: list) -> object:
        return None

    def queryset(self) -> models.QuerySet:
        return self.model.objects.all()

    def referrers(self, obj: models.Model) -> list[str]:
        return []

    def warnings(self, doc) -> list[str]:
        return getattr(doc, "warnings", [])

    def after_save(self, objs: list[models.Model], prepared) -> None:
        """Recompute what depends on `objs`; raising here rolls the whole write back."""


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
        _recompile(Pool.objects.filter(models.Q(**direct) | models.Q(**via_platform)).distinct())


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
        _recompile(Pool.objects.filter(pk__in=[obj.pk for obj in objs]))


HANDLERS: dict[str, Handler] = {
    handler.config_type: handler
    for handler in (BackendHandler(), PodTemplateHandler(), ResourceValidationHandler(), PoolHandler())
}


def register(handler: Handler) -> None:
    HANDLERS[handler.config_type] = handler


def get(config_type: str) -> Handler:
    try:
        return HANDLERS[config_type]
    except KeyError:
        raise ConfigError(f"config type {config_type} is not available", field="config_type",
                          value=config_type) from None
