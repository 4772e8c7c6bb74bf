"""One handler per config type: how to parse, save, snapshot and find referrers of its objects.

`configs.store` drives them in batches: `prepare` loads what a batch refers to once,
`doc_snapshot` says what an object will look like once saved (so unchanged documents cost no writes),
`save` writes one object (or queues it for a bulk write in `after_save`, which runs whenever anything was
saved), `after_save` recomputes what depends on the saved objects. Each app describes
its types in `<app>.config_types` and registers their handlers in its AppConfig.ready().

A type whose delete takes objects of a higher app along has that app install its `Companions` here
(`install_companions`): pools deletes a MACHINE_POOL with the platform and pod template made for it, so every
door that deletes through `configs.store` (API, config CLI, rollback) does it alike; the revision and rollback
pages say what a delete takes or took along, and a rollback that makes the object again puts that back.
"""

from __future__ import annotations

from typing import Protocol

from django.db import models

from configs.errors import ConfigError
from configs.schema import Schema


class Companions(Protocol):
    """Objects of a higher app that a type's delete takes along (a machine pool's platform and pod template)."""

    def delete(self, name: str, actor, *, description: str, tags, change):
        """Delete the object with what goes along: a configs.store.Deletion."""

    def takes_along(self, name: str) -> list[str]:
        """What deleting it now would remove with it, or keep."""

    def along(self, deleted) -> list:
        """What the deleted Revision `deleted` took along, read from history: [configs.store.Along]."""

    def restore(self, deleted, actor, *, description: str, tags) -> list[str]:
        """In a rollback that has just made the object again: put back what `deleted` took along; what it did."""


class Handler:
    config_type: str
    model: type[models.Model]
    # What its delete takes along (`install_companions`); None: the store deletes the object alone, and a rollback
    # makes it alone.
    companions: Companions | None = None

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


class SchemaHandler(Handler):
    """A handler whose parsing, snapshots and row writes derive from the type's `configs.schema.Schema`."""

    schema: Schema

    @property
    def config_type(self) -> str:
        return self.schema.config_type

    def parse(self, name, body):
        return self.schema.parse(name, body)

    def doc_snapshot(self, doc):
        return self.schema.snapshot(doc)

    def snapshot(self, obj):
        return self.schema.snapshot(obj)

    def save(self, doc, existing, prepared):
        obj = existing or self.model(name=doc.name)
        self.schema.write(doc, obj)
        obj.save()
        return obj


HANDLERS: dict[str, Handler] = {}


def register(*handlers: Handler) -> None:
    """Each app registers the handlers of the types it owns from its AppConfig.ready()."""
    for handler in handlers:
        HANDLERS[handler.config_type] = handler


def install_companions(config_type: str, companions: Companions) -> None:
    """Have `companions` take part in deleting and restoring objects of `config_type`. Called from the ready() of
    an app above the type's own, which registered its handler first."""
    get(config_type).companions = companions


def get(config_type: str) -> Handler:
    try:
        return HANDLERS[config_type]
    except KeyError:
        raise ConfigError(
            f"config type {config_type} is not available", field="config_type", value=config_type
        ) from None
