"""One handler per config type: how to parse, save, snapshot and find referrers of its objects.

`configs.store` drives them in batches: `prepare` loads what a batch refers to once,
`doc_snapshot` says what an object will look like once saved (so unchanged documents cost no writes),
`save` writes one object, `after_save` recomputes what depends on the saved objects. Each app declares
its types in `<app>.config_types`, found by `autodiscover`.
"""

from __future__ import annotations

from importlib import import_module

from django.apps import apps
from django.db import models
from django.utils.module_loading import module_has_submodule

from configs.errors import ConfigError
from configs.schema import Schema


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


def register(handler: Handler) -> None:
    HANDLERS[handler.config_type] = handler


def autodiscover() -> None:
    """Register the handlers each installed app declares in `<app>.config_types` (CONFIG_TYPES)."""
    for app in apps.get_app_configs():
        if module_has_submodule(app.module, "config_types"):
            for handler in import_module(f"{app.name}.config_types").CONFIG_TYPES:
                register(handler)


def get(config_type: str) -> Handler:
    try:
        return HANDLERS[config_type]
    except KeyError:
        raise ConfigError(f"config type {config_type} is not available", field="config_type",
                          value=config_type) from None
