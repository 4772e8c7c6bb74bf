"""Write a parsed pool document to the database with as few queries as the change needs.

References (backend, templates, validations) are loaded once per batch; existing pools arrive with
their platforms and ordered references prefetched, so unchanged lists cost nothing and changed ones are
rewritten with one delete and one bulk insert.
"""

from __future__ import annotations

from dataclasses import dataclass

from clusters.models import Backend
from configs.errors import ConfigError
from configs.kinds import OrderedRefs
from configs.models import ConfigType
from configs.schema import Doc
from pools.config_types import PLATFORM, POOL
from pools.models import (
    Platform,
    PlatformTemplate,
    PlatformValidation,
    PodTemplate,
    Pool,
    PoolTemplate,
    PoolValidation,
    ResourceValidation,
)


@dataclass
class References:
    backends: dict[str, Backend]
    templates: dict[str, PodTemplate]
    validations: dict[str, ResourceValidation]

    @classmethod
    def load(cls, docs: list[Doc]) -> References:
        wanted = {ConfigType.POD_TEMPLATE: set(), ConfigType.RESOURCE_VALIDATION: set()}
        for doc in docs:
            for _, names, kind in reference_fields(doc):
                wanted[kind.config_type].update(names)
        return cls(
            backends={b.name: b for b in Backend.objects.filter(name__in={d.backend for d in docs})},
            templates={t.name: t for t in PodTemplate.objects.filter(name__in=wanted[ConfigType.POD_TEMPLATE])},
            validations={
                v.name: v for v in ResourceValidation.objects.filter(name__in=wanted[ConfigType.RESOURCE_VALIDATION])
            },
        )

    def check(self, doc: Doc) -> None:
        """Name the exact field and every unknown name in it, so one run shows what to create."""
        if doc.backend not in self.backends:
            raise ConfigError(
                f"unknown backend; create it first with `config update BACKEND {doc.backend}`",
                field="backend",
                value=doc.backend,
            )
        for field, names, kind in reference_fields(doc):
            found = self.templates if kind.config_type == ConfigType.POD_TEMPLATE else self.validations
            missing = [name for name in names if name not in found]
            if missing:
                plural = len(missing) > 1
                raise ConfigError(
                    f"unknown {kind.label}{'s' if plural else ''} {', '.join(missing)}; create "
                    f"{'them' if plural else 'it'} first with `config update {kind.config_type}`",
                    field=field,
                    value=missing[0] if not plural else missing,
                )


def reference_fields(doc: Doc):
    """(field, names, kind) of every ordered reference list in a pool document, its platforms' included."""
    for field in POOL.leaves():
        if isinstance(field.kind, OrderedRefs):
            yield field.name, getattr(doc, field.target), field.kind
    for platform in doc.platforms:
        for field in PLATFORM.leaves():
            if isinstance(field.kind, OrderedRefs):
                yield f"platforms.{platform.name}.{field.name}", getattr(platform, field.target), field.kind


def save_pool(doc: Doc, existing: Pool | None, refs: References) -> Pool:
    pool = existing or Pool(name=doc.name)
    POOL.write(doc, pool)
    pool.backend = refs.backends[doc.backend]
    pool.save()
    _sync_refs(
        PoolTemplate,
        {pool.pk: _current(existing, "template_refs", "template_id")},
        {pool.pk: [refs.templates[n].pk for n in doc.common_pod_template]},
        "pool_id",
        "template_id",
    )
    _sync_refs(
        PoolValidation,
        {pool.pk: _current(existing, "validation_refs", "validation_id")},
        {pool.pk: [refs.validations[n].pk for n in doc.common_resource_validations]},
        "pool_id",
        "validation_id",
    )
    _save_platforms(pool, existing, doc.platforms, refs)
    return pool


def new_pool(doc: Doc, refs: References) -> Pool:
    """An unsaved pool for a document naming no existing pool; `save_new_pools` writes a batch of them."""
    pool = Pool(name=doc.name)
    POOL.write(doc, pool)
    pool.backend = refs.backends[doc.backend]
    return pool


def save_new_pools(pending: list[tuple[Doc, Pool]], refs: References) -> None:
    """Write new pools (from `new_pool`), their platforms and ordered references: six bulk inserts for the
    whole batch, where `save_pool` costs six queries per pool (the same rows; new pools have nothing to diff)."""
    if not pending:
        return
    Pool.objects.bulk_create([pool for _, pool in pending])
    platforms = []
    for doc, pool in pending:
        for platform_doc in doc.platforms:
            platform = Platform(pool=pool, name=platform_doc.name)
            PLATFORM.write(platform_doc, platform)
            platforms.append((platform_doc, platform))
    Platform.objects.bulk_create([platform for _, platform in platforms])
    _insert_refs(
        PoolTemplate, "pool_id", "template_id", [(p.pk, refs.templates, d.common_pod_template) for d, p in pending]
    )
    _insert_refs(
        PoolValidation,
        "pool_id",
        "validation_id",
        [(p.pk, refs.validations, d.common_resource_validations) for d, p in pending],
    )
    _insert_refs(
        PlatformTemplate,
        "platform_id",
        "template_id",
        [(p.pk, refs.templates, d.override_pod_template) for d, p in platforms],
    )
    _insert_refs(
        PlatformValidation,
        "platform_id",
        "validation_id",
        [(p.pk, refs.validations, d.resource_validations) for d, p in platforms],
    )


def _insert_refs(model, owner: str, target: str, lists) -> None:
    """One bulk insert of ordered references: `lists` is (owner pk, objects by name, names in order)."""
    rows = [
        model(**{owner: pk, target: found[name].pk, "position": position})
        for pk, found, names in lists
        for position, name in enumerate(names)
    ]
    if rows:
        model.objects.bulk_create(rows)


def _save_platforms(pool: Pool, existing: Pool | None, docs: list[Doc], refs: References) -> None:
    current = {p.name: p for p in existing.platforms.all()} if existing else {}
    wanted = {doc.name for doc in docs}
    removed = [p.pk for name, p in current.items() if name not in wanted]
    if removed:
        Platform.objects.filter(pk__in=removed).delete()
    new = [Platform(pool=pool, name=doc.name) for doc in docs if doc.name not in current]
    by_name = {**current, **{p.name: p for p in new}}
    for doc in docs:
        platform = by_name[doc.name]
        changed = PLATFORM.write(doc, platform)
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
    model.objects.bulk_create(
        [
            model(**{owner: pk, target: ref, "position": position})
            for pk in stale
            for position, ref in enumerate(wanted[pk])
        ]
    )
