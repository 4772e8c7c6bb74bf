"""One handler per config type: how to parse, save, snapshot and find referrers of its objects.

`pools.services.configs` drives them; other apps register their own types (ROLE) with `register`.
"""

from __future__ import annotations

from django.db import models

from pools.errors import ConfigError
from pools.models import (
    Backend,
    ConfigType,
    Platform,
    PlatformTemplate,
    PlatformValidation,
    PodTemplate,
    Pool,
    PoolTemplate,
    PoolValidation,
    ResourceValidation,
)
from pools.services import compilation, documents, snapshots


class Handler:
    config_type: str
    model: type[models.Model]

    def parse(self, name: str, body: object):
        raise NotImplementedError

    def save(self, doc, existing: models.Model | None) -> models.Model:
        raise NotImplementedError

    def snapshot(self, obj: models.Model):
        raise NotImplementedError

    def queryset(self) -> models.QuerySet:
        return self.model.objects.all()

    def referrers(self, obj: models.Model) -> list[str]:
        return []

    def warnings(self, doc) -> list[str]:
        return getattr(doc, "warnings", [])

    def after_save(self, obj: models.Model) -> None:
        """Recompute what depends on `obj`; raising here rolls the whole write back."""


class BackendHandler(Handler):
    config_type = ConfigType.BACKEND
    model = Backend

    def parse(self, name, body):
        return documents.parse_backend(name, body)

    def save(self, doc, existing):
        backend = existing or Backend(name=doc.name)
        for attr in ("description", "namespace", "scheduler_name", "dashboard_url", "grafana_url"):
            setattr(backend, attr, getattr(doc, attr))
        backend.save()
        return backend

    def snapshot(self, obj):
        return snapshots.backend_snapshot(obj)

    def referrers(self, obj):
        return [f"pool {name}" for name in obj.pools.order_by("name").values_list("name", flat=True)]


class PodTemplateHandler(Handler):
    config_type = ConfigType.POD_TEMPLATE
    model = PodTemplate

    def parse(self, name, body):
        return (name, documents.parse_pod_template(name, body))

    def save(self, doc, existing):
        name, body = doc
        template = existing or PodTemplate(name=name)
        template.body = body
        template.save()
        return template

    def snapshot(self, obj):
        return snapshots.pod_template_snapshot(obj)

    def referrers(self, obj):
        pools = [f"pool {ref.pool.name} (common_pod_template)" for ref in obj.pool_refs.select_related("pool")]
        platforms = [f"platform {ref.platform} (override_pod_template)"
                     for ref in obj.platform_refs.select_related("platform__pool")]
        return sorted(pools) + sorted(platforms)

    def after_save(self, obj):
        compilation.recompile_pools(Pool.objects.filter(
            models.Q(template_refs__template=obj) | models.Q(platforms__template_refs__template=obj)))


class ResourceValidationHandler(Handler):
    config_type = ConfigType.RESOURCE_VALIDATION
    model = ResourceValidation

    def parse(self, name, body):
        return (name, documents.parse_resource_validation(name, body))

    def save(self, doc, existing):
        name, rules = doc
        validation = existing or ResourceValidation(name=name)
        validation.rules = rules
        validation.save()
        return validation

    def snapshot(self, obj):
        return snapshots.resource_validation_snapshot(obj)

    def referrers(self, obj):
        pools = [f"pool {ref.pool.name} (common_resource_validations)"
                 for ref in obj.pool_refs.select_related("pool")]
        platforms = [f"platform {ref.platform} (resource_validations)"
                     for ref in obj.platform_refs.select_related("platform__pool")]
        return sorted(pools) + sorted(platforms)

    def after_save(self, obj):
        compilation.recompile_pools(Pool.objects.filter(
            models.Q(validation_refs__validation=obj) | models.Q(platforms__validation_refs__validation=obj)))


class PoolHandler(Handler):
    config_type = ConfigType.POOL
    model = Pool

    def parse(self, name, body):
        return documents.parse_pool(name, body)

    def queryset(self):
        return snapshots.pools_for_snapshot()

    def snapshot(self, obj):
        return snapshots.pool_snapshot(obj)

    def save(self, doc: documents.PoolDoc, existing: Pool | None) -> Pool:
        backend = _backend(doc.backend)
        templates = {t.name: t for t in PodTemplate.objects.filter(name__in=_template_names(doc))}
        validations = {v.name: v for v in ResourceValidation.objects.filter(name__in=_validation_names(doc))}
        _check_references(doc, templates, validations)
        pool = existing or Pool(name=doc.name)
        _copy_pool_fields(doc, pool, backend)
        pool.save()
        _replace_refs(PoolTemplate, "pool", pool, "template", [templates[n] for n in doc.common_pod_template])
        _replace_refs(PoolValidation, "pool", pool, "validation",
                      [validations[n] for n in doc.common_resource_validations])
        _save_platforms(pool, doc.platforms, templates, validations)
        return pool

    def after_save(self, obj):
        compilation.recompile_pools(Pool.objects.filter(pk=obj.pk))


def _copy_pool_fields(doc: documents.PoolDoc, pool: Pool, backend: Backend) -> None:
    pool.backend = backend
    pool.description = doc.description
    pool.default_platform = doc.default_platform
    pool.download_type = doc.download_type
    for key, value in doc.timeouts.items():
        setattr(pool, key, value)
    pool.default_exit_actions = doc.default_exit_actions
    gpu = doc.gpu or {}
    pool.gpu_guarantee, pool.gpu_maximum, pool.gpu_weight = gpu.get("guarantee"), gpu.get("maximum"), gpu.get("weight")
    pool.enable_maintenance = doc.enable_maintenance
    pool.common_default_variables = doc.common_default_variables
    pool.topology_keys = doc.topology_keys


def _save_platforms(pool: Pool, docs: list[documents.PlatformDoc], templates: dict, validations: dict) -> None:
    wanted = {doc.name for doc in docs}
    pool.platforms.exclude(name__in=wanted).delete()
    existing = {platform.name: platform for platform in pool.platforms.all()}
    for doc in docs:
        platform = existing.get(doc.name) or Platform(pool=pool, name=doc.name)
        for attr in ("description", "host_network_allowed", "privileged_allowed", "default_variables",
                     "allowed_mounts"):
            setattr(platform, attr, getattr(doc, attr))
        platform.save()
        _replace_refs(PlatformTemplate, "platform", platform, "template",
                      [templates[n] for n in doc.override_pod_template])
        _replace_refs(PlatformValidation, "platform", platform, "validation",
                      [validations[n] for n in doc.resource_validations])


def _replace_refs(model, owner_field: str, owner, target_field: str, targets: list) -> None:
    """Keep an ordered reference list equal to `targets`, rewriting only when it differs."""
    current = list(model.objects.filter(**{owner_field: owner}).order_by("position", "id")
                   .values_list(f"{target_field}_id", flat=True))
    if current == [t.pk for t in targets]:
        return
    model.objects.filter(**{owner_field: owner}).delete()
    model.objects.bulk_create([model(**{owner_field: owner, target_field: t, "position": i})
                               for i, t in enumerate(targets)])


def _template_names(doc: documents.PoolDoc) -> list[str]:
    return doc.common_pod_template + [n for p in doc.platforms for n in p.override_pod_template]


def _validation_names(doc: documents.PoolDoc) -> list[str]:
    return doc.common_resource_validations + [n for p in doc.platforms for n in p.resource_validations]


def _backend(name: str) -> Backend:
    try:
        return Backend.objects.get(name=name)
    except Backend.DoesNotExist:
        known = ", ".join(Backend.objects.values_list("name", flat=True)[:20]) or "none yet"
        raise ConfigError(f"unknown backend; create it first with `config update BACKEND {name}` "
                          f"(known: {known})", field="backend", value=name) from None


def _check_references(doc: documents.PoolDoc, templates: dict, validations: dict) -> None:
    """Name the exact field and every unknown name in it, so one run shows what to create."""
    fields = [("common_pod_template", doc.common_pod_template, templates, "pod template"),
              ("common_resource_validations", doc.common_resource_validations, validations, "resource validation")]
    for platform in doc.platforms:
        fields.append((f"platforms.{platform.name}.override_pod_template", platform.override_pod_template,
                       templates, "pod template"))
        fields.append((f"platforms.{platform.name}.resource_validations", platform.resource_validations,
                       validations, "resource validation"))
    for field, names, found, kind in fields:
        missing = [name for name in names if name not in found]
        if missing:
            type_name = "POD_TEMPLATE" if kind == "pod template" else "RESOURCE_VALIDATION"
            raise ConfigError(f"unknown {kind}{'s' if len(missing) > 1 else ''} {', '.join(missing)}; "
                              f"create {'them' if len(missing) > 1 else 'it'} first with `config update {type_name}`",
                              field=field, value=missing[0] if len(missing) == 1 else missing)


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
