"""API serializers of config bodies, derived from the types' descriptions (configs.schema).

They describe each type's OSMO JSON in the OpenAPI schema (`/api/schema/`): names, types, defaults and
help as the description says. Validation stays with the description's parser (`configs.store.apply`), so
the API refuses exactly what the CLI and the admin refuse, with the same field/value/reason.
"""

from __future__ import annotations

from functools import cache

from rest_framework import serializers

from configs import kinds, registry
from configs.schema import Field, Schema

_SIMPLE = {kinds.Bool: serializers.BooleanField, kinds.Int: serializers.IntegerField}


def body_serializer(schema: Schema, component: str = "") -> serializers.Field:
    """The serializer (field) of one body of `schema`, named `<Type>Body` in the OpenAPI schema."""
    component = component or "".join(part.capitalize() for part in schema.config_type.split("_")) + "Body"
    if schema.body is not None:
        return serializers.JSONField(help_text=f"The {schema.config_type} document.", required=False)
    declared = {"name": serializers.CharField(required=False)} if schema.name_in_body else {}
    for field in schema.fields:
        declared[field.name] = _field(field, f"{component}{_camel(field.name)}")
    declared["Meta"] = type("Meta", (), {"ref_name": component})
    return type(component, (serializers.Serializer,), declared)(required=False)


@cache
def body_serializers() -> dict[str, serializers.Serializer]:
    """The body serializer of every registered type described field by field (pod templates and resource
    validations are free-form documents: a JSON value)."""
    return {
        name: body_serializer(handler.schema)
        for name, handler in registry.handlers().items()
        if isinstance(handler, registry.SchemaHandler) and handler.schema.body is None
    }


def _field(field: Field, component: str) -> serializers.Field:
    nullable = field.kind.nullable if field.nullable is None else field.nullable
    # unset (or empty, for a kind shown empty as null) it is answered as null (issue #31: the schema said not)
    nullable = nullable or field.default is None or getattr(field.kind, "shown_empty_as_null", False)
    options = {"help_text": field.help or None, "allow_null": nullable, "write_only": field.write_only}
    has_default = field.default is not None and not isinstance(field.default, (list, dict))
    options.update({"default": field.default} if has_default else {"required": False})
    kind = field.kind
    if isinstance(kind, kinds.Group):
        nested = {sub.name: _field(sub, f"{component}{_camel(sub.name)}") for sub in kind.fields}
        nested["Meta"] = type("Meta", (), {"ref_name": component})
        return type(component, (serializers.Serializer,), nested)(**options)
    if isinstance(kind, kinds.Children):
        return serializers.DictField(child=body_serializer(kind.schema, component), **options)
    if isinstance(kind, (kinds.Names, kinds.Mounts)):
        return serializers.ListField(child=serializers.CharField(), **options)
    if isinstance(kind, kinds.Choice):
        return serializers.ChoiceField(choices=kind.values, **options)
    for kind_class, field_class in _SIMPLE.items():
        if isinstance(kind, kind_class):
            return field_class(**options)
    if isinstance(kind, (kinds.Text, kinds.Timeout, kinds.Reference)):
        return serializers.CharField(allow_blank=True, **options)
    return serializers.JSONField(**options)


def _camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_"))
