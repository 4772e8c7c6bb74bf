"""Write a parsed pool document to the database with as few queries as the change needs.

References (backend, templates, validations) are loaded once per batch; existing pools arrive with
their platforms and ordered references prefetched, so unchanged lists cost nothing and changed ones are
rewritten with one delete and one bulk insert.
"""

from __future__ import annotations

from dataclasses import dataclass

from configs.errors import ConfigError
from pools.models import (
    Backend,
    Platform,
    PlatformTemplate,
    PlatformValidation,
    PodTemplate,
    Pool,
    PoolTemplate,
    PoolValidation,
    ResourceValidation,
)
from pools.services.documents import PlatformDoc, PoolDoc

PLATFORM_FIELDS = ("description", "host_network_allowed", "privileged_allowed", "default_variables", "allowed_mounts")


@dataclass
class References:
    backends: dict[str, Backend]
    templates: dict[str, PodTemplate]
    validations: dict[str, ResourceValidation]

    @classmethod
    def load(cls, docs: list[PoolDoc]) -> References:
        return cls(
            backends={b.name: b for b in Backend.objects.filter(name__in={d.backend for d in docs})},
            templates={t.name: t for t in PodTemplate.objects.filter(
                name__in={n for d in docs for n in template_names(d)})},
            validations={v.name: v for v in ResourceValidation.objects.filter(
                name__in={n for d in docs for n in validation_names(d)})},
        )

    def check(self, doc: PoolDoc) -> None:
        """Name the exact field and every unknown name in it, so one run shows what to create."""
        if doc.backend not in self.backends:
            raise ConfigError(f"unknown backend; create it first with `config update BACKEND {doc.backend}`",
                              field="backend", value=doc.backend)
        for field, names, found, kind in _reference_fields(doc, self):
            missing = [name for name in names if name not in found]
            if missing:
                type_name = "POD_TEMPLATE" if kind == "pod template" else "RESOURCE_VALIDATION"
                plural = len(missing) > 1
                raise ConfigError(f"unknown {kind}{'s' if plural else ''} {', '.join(missing)}; create "
                                  f"{'them' if plural else 'it'} first with `config update {type_name}`",
                                  field=field, value=missing[0] if not plural else missing)


def template_names(doc: PoolDoc) -> list[str]:
    return doc.common_pod_template + [n for p in doc.platforms for n in p.override_pod_template]


def validation_names(doc: PoolDoc) -> list[str]:
    return doc.common_resource_validations + [n for p in doc.platforms for n in p.resource_validations]


def _reference_fields(doc: PoolDoc, refs: References):
    yield "common_pod_template", doc.common_pod_template, refs.templates, "pod template"
    yield "common_resource_validations", doc.common_resource_validations, refs.validations, "resource validation"
    for platform in doc.platforms:
        where = f"platforms.{platform.name}"
        yield f"{where}.override_pod_template", platform.override_pod_template, refs.templates, "pod template"
        yield f"{where}.resource_validations", platform.resource_validations, refs.validations, "resource validation"


def save_pool(doc: PoolDoc, existing: Pool | None, refs: References) -> Pool:
    pool = existing or Pool(name=doc.name)
    _copy_pool_fields(doc, pool, refs.backends[doc.backend])
    pool.save()
    _sync_refs(PoolTemplate, {pool.pk: _current(existing, "template_refs", "template_id")},
               {pool.pk: [refs.templates[n].pk for n in doc.common_pod_template]}, "pool_id", "template_id")
    _sync_refs(PoolValidation, {pool.pk: _current(existing, "validation_refs", "validation_id")},
               {pool.pk: [refs.validations[n].pk for n in doc.common_resource_validations]}, "pool_id",
               "validation_id")
    _save_platforms(pool, existing, doc.platforms, refs)
    return pool


def _copy_pool_fields(doc: PoolDoc, pool: Pool, backend: Backend) -> None:
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


def _save_platforms(pool: Pool, existing: Pool | None, docs: list[PlatformDoc], refs: References) -> None:
    current = {p.name: p for p in existing.platforms.all()} if existing else {}
    wanted = {doc.name for doc in docs}
    removed = [p.pk for name, p in current.items() if name not in wanted]
    if removed:
        Platform.objects.filter(pk__in=removed).delete()
    new = [Platform(pool=pool, name=doc.name) for doc in docs if doc.name not in current]
    by_name = {**current, **{p.name: p for p in new}}
    for doc in docs:
        platform = by_name[doc.name]
        changed = [f for f in PLATFORM_FIELDS if getattr(platform, f) != getattr(doc, f)]
        for field in changed:
            setattr(platform, field, getattr(doc, field))
        if changed and doc.name in current:
            platform.save(update_fields=changed)
    Platform.objects.bulk_create(new)
    templates_now, templates_wanted, validations_now, validations_wanted = {}, {}, {}, {}
    for doc in docs:
        platform = by_name[doc.name]
        old = current.get(doc.name)
        templates_now[platform.pk] = _current(old, "template_refs", "template_id")
        templates_wanted[platform.pk] = [refs.templates[n].pk for n in doc.override_pod_template]
        validations_now[platform.pk] = _current(old, "validation_refs", "validation_id")
        validations_wanted[platform.pk] = [refs.validations[n].pk for n in doc.resource_validations]
    _sync_refs(PlatformTemplate, templates_now, templates_wanted, "platform_id", "template_id")
    _sync_refs(PlatformValidation, validations_now, validations_wanted, "platform_id", "validation_id")


def _current(owner, relation: str, target: str) -> list[int]:
    """The owner's ordered reference ids, from the prefetch cache when the owner came with one."""
    if owner is None:
        return []
    refs = sorted(getattr(owner, relation).all(), key=lambda ref: (ref.position, ref.id))
    return [getattr(ref, target) for ref in refs]


def _sync_refs(model, current: dict[int, list[int]], wanted: dict[int, list[int]], owner: str, target: str) -> None:
    """Rewrite the ordered lists that differ: one delete and one bulk insert for all owners together."""
    stale = [pk for pk, ids in wanted.items() if current.get(pk, []) != ids]
    if not stale:
        return
    if any(current.get(pk) for pk in stale):
        model.objects.filter(**{f"{owner}__in": stale}).delete()
    model.objects.bulk_create([model(**{owner: pk, target: ref, "position": position})
                               for pk in stale for position, ref in enumerate(wanted[pk])])
