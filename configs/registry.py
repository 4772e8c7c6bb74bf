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

Handlers and companions are registered by dotted path and imported on first use (`get`): a handler's module
brings its app's services along (pools': the compiler, the template sandbox, psycopg's JSON types), which a
command that never writes a config does not need at start-up (docs/performance.md, CLI). The system check
`check_registry` imports every registered path, so a misspelt one fails `manage.py check` and the test suite,
not the first write of its type.
"""

from __future__ import annotations

import threading
from typing import Protocol

from django.core import checks
from django.db import models

from configs.errors import ConfigError
from configs.schema import Schema
from portal import lazy


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


# config type → dotted path of its Handler class, and of the Companions class installed for it
_HANDLER_PATHS: dict[str, str] = {}
_COMPANION_PATHS: dict[str, str] = {}
_HANDLERS: dict[str, Handler] = {}  # the resolved ones, one instance per type
_LOCK = threading.RLock()  # a handler module may itself ask for a handler while it imports


def register(config_type: str, path: str) -> None:
    """Each app registers the handler of each type it owns from its AppConfig.ready(), by the dotted path of
    its Handler class (`register("POOL", "pools.services.config_handlers.PoolHandler")`), imported on first
    use."""
    _HANDLER_PATHS[config_type] = path
    _HANDLERS.pop(config_type, None)


def install_companions(config_type: str, path: str) -> None:
    """Have the Companions class at dotted `path` take part in deleting and restoring objects of
    `config_type`. Called from the ready() of an app above the type's own, which registered its handler
    first."""
    if config_type not in _HANDLER_PATHS:
        raise ConfigError(f"config type {config_type} is not available", field="config_type", value=config_type)
    _COMPANION_PATHS[config_type] = path
    _HANDLERS.pop(config_type, None)


def config_types() -> list[str]:
    """The registered types, sorted, without importing their handlers."""
    return sorted(_HANDLER_PATHS)


def handlers() -> dict[str, Handler]:
    """Every registered type's handler, by type (imports them all)."""
    return {config_type: get(config_type) for config_type in config_types()}


def get(config_type: str) -> Handler:
    """The type's handler, imported and made on the first call (with its companions, if installed)."""
    handler = _HANDLERS.get(config_type)
    if handler is not None:
        return handler
    if config_type not in _HANDLER_PATHS:
        raise ConfigError(f"config type {config_type} is not available", field="config_type", value=config_type)
    with _LOCK:  # one instance per type, even when two threads ask first at once
        if config_type not in _HANDLERS:
            _HANDLERS[config_type] = _resolve(config_type)
        return _HANDLERS[config_type]


def _resolve(config_type: str) -> Handler:
    handler = _load(_HANDLER_PATHS[config_type])()
    if config_type in _COMPANION_PATHS:
        handler.companions = _load(_COMPANION_PATHS[config_type])()
    return handler


def _load(path: str):
    return lazy.resolve(path)


def check_registry(app_configs=None, **kwargs) -> list[checks.Error]:
    """Every registered path imports, names a Handler of its type, and every companion one a Companions
    (a Django system check, registered by `configs.apps`)."""
    errors = []
    for config_type, path in sorted(_HANDLER_PATHS.items()):
        errors += _check_path(config_type, path, Handler, "configs.E001")
    for config_type, path in sorted(_COMPANION_PATHS.items()):
        errors += _check_path(config_type, path, None, "configs.E002")
    if not errors:
        for config_type in config_types():
            handler = get(config_type)
            if handler.config_type != config_type:
                errors.append(
                    checks.Error(
                        f"{_HANDLER_PATHS[config_type]} handles {handler.config_type}, registered for {config_type}",
                        id="configs.E003",
                    )
                )
    return errors


COMPANION_METHODS = ("delete", "takes_along", "along", "restore")


def _check_path(config_type: str, path: str, base: type | None, code: str) -> list[checks.Error]:
    what = "handler" if base else "companions"
    try:
        found = _load(path)
    except (ImportError, AttributeError, ValueError) as error:
        return [checks.Error(f"the {what} of {config_type}, {path!r}, does not import: {error}", id=code)]
    if base is not None and not (isinstance(found, type) and issubclass(found, base)):
        return [checks.Error(f"the {what} of {config_type}, {path!r}, is not a {base.__name__} class", id=code)]
    missing = [] if base else [name for name in COMPANION_METHODS if not callable(getattr(found, name, None))]
    if missing or not isinstance(found, type):
        lacks = f"lacks {', '.join(missing)}" if missing else "is not a class"
        return [checks.Error(f"the {what} of {config_type}, {path!r}, {lacks}", id=code)]
    return []
