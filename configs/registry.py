"""One handler per config type: how to parse, save, snapshot and find referrers of its objects.

`configs.store` drives them in batches: `prepare` loads what a batch refers to once,
`doc_snapshot` says what an object will look like once saved (so unchanged documents cost no writes),
`save` writes one object (or queues it for a bulk write in `after_save`, which runs whenever anything was
saved), `after_save` recomputes what depends on the saved objects. Each app describes
its types in `<app>.config_types` and registers their handlers in its AppConfig.ready().

A type whose delete takes objects of a higher app along has that app install its `deleter` here
(`install_deleter`): pools deletes a MACHINE_POOL with the platform and pod template made for it, so every
door that deletes through `configs.store` (API, config CLI, rollback) does it alike. With it, the app may
install `takes_along` (what a delete would take along now), `along` (what a deleted revision took along, read
from history) for the revision and rollback pages, and `restorer` (a rollback that makes the object again
puts that back, in its transaction).
"""

from __future__ import annotations

from collections.abc import Callable

from django.db import models

from configs.errors import ConfigError
from configs.schema import Schema


class Handler:
    config_type: str
    model: type[models.Model]
    # (name, actor, *, description, tags, change) → configs.store.Deletion; None: the store deletes the object
    # alone. Installed by the app that owns what goes with it (`install_deleter`).
    deleter: Callable | None = None
    # (name) → [str]: what deleting it now would take along or keep; (deleted Revision) → [configs.store.Along];
    # (deleted Revision, actor, *, description, tags) → [str said]. None: a delete takes nothing along, a
    # rollback makes the object alone.
    takes_along: Callable | None = None
    along: Callable | None = None
    restorer: Callable | None = None

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


def install_deleter(
    config_type: str,
    deleter: Callable | None,
    *,
    takes_along: Callable | None = None,
    along: Callable | None = None,
    restorer: Callable | None = None,
) -> Callable | None:
    """Have `deleter` delete objects of `config_type` (None: the store's own delete), `takes_along` say what
    it would take with it now, `along` what a past deletion took, and `restorer` put that back when a rollback
    makes the object again; returns the deleter it replaces. Called from the ready() of an app above the
    type's own, which registered its handler first."""
    handler = get(config_type)
    previous, handler.deleter = handler.deleter, deleter
    handler.takes_along, handler.along, handler.restorer = takes_along, along, restorer
    return previous


def get(config_type: str) -> Handler:
    try:
        return HANDLERS[config_type]
    except KeyError:
        raise ConfigError(
            f"config type {config_type} is not available", field="config_type", value=config_type
        ) from None
