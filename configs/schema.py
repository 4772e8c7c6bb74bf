"""The vocabulary config types are described in: each type's fields said once, everything else derived.

A `Schema` lists `Field`s in their OSMO JSON order; each field has a `Kind` that knows how to read its
value from a document (raising ConfigError with field, value and reason), how to show it again, and
where it lives on the model. From one description come:

- `parse(name, body)`: OSMO JSON in → a `Doc` whose attributes are named like the model's,
- `snapshot(source)`: a model object *or* a Doc → OSMO JSON (revisions, `config show`, diffs, and the
  "would this write change anything" comparison, which is why both sources must give the same shape),
- `write(doc, obj)`: copy the row's own columns from a Doc to a model object,
- `form_fields()` / `body_from_form(...)`: the admin form's fields, and its values back as a document,
- `undeclared_columns(model)`: described row fields the model declares no column for (a test keeps it empty),
- the API's body serializers (configs.serializers).

Kinds for values that are not columns of the row (a foreign key by name, ordered reference lists, child
objects) read both a Doc and a model object; the owning app writes them (see pools.services.pool_writer).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field

from configs.errors import ConfigError
from configs.kinds import Group, Kind, reject_unknown
from configs.validators import check_name, expect_mapping

MISSING = object()
ABBREVIATIONS = {"gpu": "GPU", "cpu": "CPU", "api": "API", "url": "URL", "tls": "TLS", "ca": "CA", "osmo": "OSMO"}


class Doc:
    """A parsed document: one attribute per stored field (named like the model's), plus warnings."""

    def __init__(self, name: str, **values) -> None:
        self.name = name
        self.warnings: list[str] = []
        self.__dict__.update(values)

    def __repr__(self) -> str:
        return f"Doc({self.__dict__!r})"


@dataclass(frozen=True)
class Field:
    """One OSMO JSON key: its kind, default and model attribute.

    `attr`: the model attribute ("" = the OSMO name; None = not stored). `nullable`: null reads as the
    default (None = the kind decides). `or_default`: any empty value reads as the default.
    `required`: the reason given when the value is missing or empty. `also_from`: a mapping key whose
    same-named entry wins (OSMO's `scheduler_settings.scheduler_name`). `write_only`: read into the Doc
    for the handler (ROLE's `force`), never stored or shown. `omit_default`: left out of the shown document
    while it holds its default (settings most objects never set, so documents written before them stay as
    they were).
    """

    name: str
    kind: Kind
    default: object = ""
    attr: str | None = ""
    nullable: bool | None = None
    or_default: bool = False
    required: str = ""
    also_from: str = ""
    write_only: bool = False
    help: str = ""
    label: str = ""  # the admin form's label, if not the attribute's name in words (form_label)
    omit_default: bool = False

    @property
    def target(self) -> str | None:
        return self.name if self.attr == "" else self.attr

    def form_label(self) -> str:
        """What the admin form calls the field: `label`, else its attribute in words, abbreviations as
        people write them (gpu_guarantee → "GPU guarantee", api_url → "API URL")."""
        if self.label:
            return self.label
        words = [ABBREVIATIONS.get(word, word) for word in (self.target or self.name).split("_")]
        return " ".join(words)[:1].upper() + " ".join(words)[1:]

    def read_body(self, body: dict, where: str, warnings: list[str] | None = None) -> object:
        value = body.get(self.name, MISSING)
        if self.also_from and body.get(self.also_from) is not None:
            extra = expect_mapping(body[self.also_from], self.also_from)
            value = extra.get(self.name, value)
        if self.required and not (value is not MISSING and value):
            raise ConfigError(self.required, field=_at(where, self.name), value=None if value is MISSING else value)
        nullable = self.kind.nullable if self.nullable is None else self.nullable
        if value is MISSING or (value is None and nullable) or (self.or_default and not value):
            return copy.deepcopy(self.default)
        return self.kind.parse_noting(value, _at(where, self.name), [] if warnings is None else warnings)


@dataclass(frozen=True)
class Schema:
    """A config type's (or a nested object's) description.

    `body`: the whole document is one value (pod templates, resource validations) instead of fields.
    `computed`: keys OSMO computes, accepted and ignored (with a warning when `warn_computed`).
    `retired`: key → warning for keys OSMO dropped; `renamed`: key → the key's right name (an error).
    `checks`: cross-field checks run on the parsed Doc. `name_in_body`: the snapshot starts with `name`
    and a body may carry it. `empty_body`: a null body reads as `{}`.
    """

    config_type: str
    fields: tuple[Field, ...] = ()
    body: Field | None = None
    computed: tuple[str, ...] = ()
    warn_computed: bool = True
    kind_label: str = ""
    retired: dict[str, str] = field(default_factory=dict)
    renamed: dict[str, str] = field(default_factory=dict)
    checks: tuple[Callable[[Doc], None], ...] = ()
    name_in_body: bool = False
    empty_body: bool = False
    edit_format: str = "json"  # how people edit it (diffs shown before a rollback use it): "json" or "yaml"

    # --- OSMO JSON in ------------------------------------------------------------------------------

    def parse(self, name: str, body: object, where: str = "") -> Doc:
        check_name(name, where or "name")
        doc = Doc(name)
        if self.body is not None:
            setattr(doc, self.body.target, self.body.kind.parse(body, where))
            return doc
        body = expect_mapping(body if body is not None or not self.empty_body else {}, where)
        if self.name_in_body and body.get("name", name) != name:
            raise ConfigError(
                f"does not match the {self.kind_label} name {name!r}", field=_at(where, "name"), value=body["name"]
            )
        doc.warnings.extend(self._drop_ignored(body))
        self._reject_unknown(body, where)
        for item in self.fields:
            _assign(doc, item, item.read_body(body, where, doc.warnings))
        for check in self.checks:
            check(doc)
        return doc

    def _drop_ignored(self, body: dict) -> list[str]:
        warnings = []
        for key in self.computed:
            if body.pop(key, MISSING) is not MISSING and self.warn_computed:
                warnings.append(f"{self.kind_label} field {key} is computed by the portal and was ignored")
        for key, warning in self.retired.items():
            if body.pop(key, MISSING) is not MISSING:
                warnings.append(warning)
        return warnings

    def _reject_unknown(self, body: dict, where: str) -> None:
        for key, right in self.renamed.items():
            if key in body:
                raise ConfigError(
                    f"unknown field; the {self.kind_label} field is called {right}",
                    field=_at(where, key),
                    value=body[key],
                )
        allowed = {item.name for item in self.fields} | {item.also_from for item in self.fields if item.also_from}
        reject_unknown(body, allowed | ({"name"} if self.name_in_body else set()), where)

    # --- OSMO JSON out -----------------------------------------------------------------------------

    def snapshot(self, source) -> object:
        """`source` is a model object or a Doc: both have the same attributes."""
        if self.body is not None:
            return self.body.kind.show(getattr(source, self.body.target))
        shown = {"name": source.name} if self.name_in_body else {}
        for item in self.fields:
            if not item.write_only:
                value = _show(source, item)
                if not (item.omit_default and value == item.kind.show(item.default)):
                    shown[item.name] = value
        return shown

    # --- model ---------------------------------------------------------------------------------------

    def row_fields(self) -> list[Field]:
        """Fields stored in the row's own columns (groups flattened)."""
        return [item for item in self.leaves() if item.target and item.kind.on_row and not item.write_only]

    def leaves(self) -> list[Field]:
        """Every field, with a group's fields in place of the group."""
        return _leaves([self.body] if self.body else self.fields)

    def undeclared_columns(self, model) -> list[str]:
        """The described row fields `model` declares no column for (a model declares every column it has;
        tests/configs/test_schema.py holds every registered type to it)."""
        declared = {field.name for field in [*model._meta.local_fields, *model._meta.local_many_to_many]}
        return [item.target for item in self.row_fields() if item.target not in declared]

    def write(self, doc: Doc, obj) -> list[str]:
        """Copy the row's columns from `doc` to `obj`; returns the attributes that changed."""
        changed = []
        for item in self.row_fields():
            value = getattr(doc, item.target)
            if getattr(obj, item.target) != value:
                setattr(obj, item.target, value)
                changed.append(item.target)
        return changed

    def described(self, target: str) -> Field | None:
        """The field stored in attribute `target`, if described."""
        return next((item for item in self.leaves() if item.target == target), None)

    def form_fields(self) -> list[str]:
        """The admin form's model fields: the row's columns and the foreign keys set by name."""
        return [
            item.target
            for item in self.leaves()
            if item.target and not item.write_only and (item.kind.on_row or item.kind.on_form)
        ]

    def body_from_form(self, cleaned: dict, base: dict | None = None) -> object:
        """An admin form's values as an OSMO document (over `base`, the current snapshot, if any)."""
        if self.body is not None:
            return self.body.kind.from_form(cleaned[self.body.target])
        body = copy.deepcopy(base) if base else {}
        for item in self.fields:
            if isinstance(item.kind, Group):
                if any(sub.target in cleaned for sub in _leaves(item.kind.fields)):
                    body[item.name] = item.kind.from_form_values(cleaned)
            elif item.target in cleaned:
                body[item.name] = item.kind.from_form(cleaned[item.target])
        return body


def _assign(doc: Doc, item: Field, value: object) -> None:
    if item.target is not None:
        setattr(doc, item.target, value)
    elif isinstance(item.kind, Group):  # a group: its values are the row's columns
        for attr, attr_value in item.kind.values_of(value).items():
            setattr(doc, attr, attr_value)


def _leaves(fields) -> list[Field]:
    return [leaf for item in fields for leaf in (_leaves(item.kind.fields) if isinstance(item.kind, Group) else [item])]


def _show(source, item: Field) -> object:
    if item.target is None:
        return item.kind.show_from(source) if isinstance(item.kind, Group) else item.kind.show(item.default)
    return item.kind.show(item.kind.read(source, item.target))


def _at(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key
