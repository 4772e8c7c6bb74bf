"""Key–value rows for a JSON mapping field (default variables, exit actions): one row per entry, with add and
remove buttons (static/portal/keyvalue.js), every row checked and its key named in the error.

Progressive enhancement: without the script the rows still post (one blank row adds an entry, an emptied
key removes one), and a post of the mapping as JSON text (the field's name alone, as the form took before)
is still read. Either way the cleaned value is the same `{key: value}` mapping the JSON text gave.

Values are read as JSON when they parse as JSON (`1`, `true`, `["a", "b"]`, `"01"` for a quoted string),
else as the text itself (`1Gi`); they are shown back the same way, so a save without edits stores the same
mapping (`KeyValueField(plain_values=True)` keeps every value as text: exit codes such as `0,1-10`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from django import forms
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe

from portal.widget_classes import BUTTON, INPUT, SECONDARY_BUTTON, SELECT


@dataclass
class Rows:
    """The rows as posted: [(key, value text)], in order, blank rows included."""

    pairs: list[tuple[str, str]]


def value_text(value: object, *, plain: bool = False) -> str:
    """How a stored value is shown in its row (the inverse of `read_value`)."""
    if isinstance(value, str):
        if plain:
            return value
        try:
            json.loads(value)
        except ValueError:
            return value  # e.g. 1Gi: shown as written
        return json.dumps(value)  # "1" stays a string when read back
    return json.dumps(value)


def read_value(text: str, *, plain: bool = False) -> object:
    if plain:
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text


class KeyValueRows(forms.Widget):
    """Rows of key and value inputs posted as `<name>-key` and `<name>-value` lists.

    `key_choices`: the keys allowed (a select per row instead of free text). `key_pattern`: the HTML pattern
    a free key must match (checked again on the server), `key_hint` the browser's words for it.
    `invalid_keys` (set by the form after a refused post) marks those rows."""

    class Media:
        js = ("portal/keyvalue.js",)
        css = {"all": ("portal/admin-forms.css",)}

    def __init__(
        self,
        *,
        key_label: str = "Name",
        value_label: str = "Value",
        key_choices: tuple[str, ...] = (),
        key_pattern: str = "",
        key_hint: str = "",
        value_placeholder: str = "",
        plain_values: bool = False,
        attrs=None,
    ) -> None:
        super().__init__(attrs)
        self.key_label, self.value_label = key_label, value_label
        self.key_choices, self.key_pattern, self.key_hint = tuple(key_choices), key_pattern, key_hint
        self.value_placeholder, self.plain_values = value_placeholder, plain_values
        self.invalid_keys: set[str] = set()

    def value_from_datadict(self, data, files, name):
        if f"{name}-key" in data:
            keys, values = data.getlist(f"{name}-key"), data.getlist(f"{name}-value")
            values += [""] * (len(keys) - len(values))
            return Rows(list(zip(keys, values, strict=False)))
        return data.get(name)

    def value_omitted_from_data(self, data, files, name):
        return f"{name}-key" not in data and name not in data

    def rows(self, value) -> list[tuple[str, str]]:
        if isinstance(value, Rows):
            return [pair for pair in value.pairs if pair[0].strip() or pair[1].strip()]
        if isinstance(value, str):
            try:
                value = json.loads(value) if value.strip() else {}
            except ValueError:
                return [("", value)]
        if not isinstance(value, dict):
            return []
        return [(str(key), value_text(item, plain=self.plain_values)) for key, item in value.items()]

    def render(self, name, value, attrs=None, renderer=None):
        rows = [*self.rows(value), ("", "")]  # a blank row to add one (also without the script)
        attrs = self.build_attrs(self.attrs, attrs)
        body = format_html_join(
            "", "{}", ((self._row(name, index, key, text),) for index, (key, text) in enumerate(rows))
        )
        return format_html(
            '<div class="kv-rows" data-kv-rows id="{}">'
            '<table class="kv-table"><thead><tr><th scope="col">{}</th><th scope="col">{}</th><th></th></tr></thead>'
            "<tbody>{}</tbody></table>"
            '<button type="button" class="{} kv-add" data-kv-add>Add a row</button></div>',
            attrs.get("id", name),
            self.key_label,
            self.value_label,
            body,
            SECONDARY_BUTTON,
        )

    def _row(self, name: str, index: int, key: str, text: str) -> str:
        invalid = key in self.invalid_keys
        return format_html(
            '<tr data-kv-row{}><td class="kv-key">{}</td><td class="kv-value">'
            '<input type="text" name="{}-value" value="{}" class="{}" aria-label="{}" placeholder="{}"'
            ' spellcheck="false"></td>'
            '<td class="kv-actions"><button type="button" class="{}" data-kv-remove aria-label="Remove this row">'
            '<span class="pp-wide">Remove</span><span class="pp-narrow" aria-hidden="true">✕</span></button></td></tr>',
            mark_safe(' class="kv-invalid" aria-invalid="true"') if invalid else "",
            self._key_input(name, key),
            name,
            text,
            INPUT,
            f"{self.value_label} of row {index + 1}",
            self.value_placeholder,
            BUTTON,
        )

    def _key_input(self, name: str, key: str) -> str:
        if self.key_choices:
            options = [("", "—"), *((choice, choice) for choice in self.key_choices)]
            if key and key not in self.key_choices:
                options.append((key, key))  # what was posted, shown as posted; the server says why it is refused
            return format_html(
                '<select name="{}-key" class="{}" aria-label="{}">{}</select>',
                name,
                SELECT,
                self.key_label,
                format_html_join(
                    "",
                    '<option value="{}"{}>{}</option>',
                    ((value, " selected" if value == key else "", label) for value, label in options),
                ),
            )
        return format_html(
            '<input type="text" name="{}-key" value="{}" class="{}" aria-label="{}"{} spellcheck="false"'
            ' autocomplete="off">',
            name,
            key,
            INPUT,
            self.key_label,
            format_html(' pattern="{}" title="{}"', self.key_pattern, self.key_hint) if self.key_pattern else "",
        )


class KeyValueField(forms.Field):
    """A JSON mapping edited as rows (`KeyValueRows`), or posted as JSON text. Blank rows are skipped; a
    value without a key, or a key given twice, is refused naming the row and the key."""

    default_error_messages = {"invalid": "Enter the rows, or the mapping as JSON."}  # the form may name the field

    def __init__(self, *, widget: KeyValueRows | None = None, **kwargs) -> None:
        kwargs.setdefault("required", False)
        super().__init__(widget=widget or KeyValueRows(), **kwargs)

    def prepare_value(self, value):
        return value

    def to_python(self, value):
        if isinstance(value, dict):
            return value
        if isinstance(value, Rows):
            return self._from_rows(value)
        if value in (None, ""):
            return {}
        try:
            return json.loads(value)  # the mapping as JSON text; its shape is checked by the config type
        except ValueError as error:
            raise forms.ValidationError(f"{self.error_messages['invalid']} ({error})", code="invalid") from None

    def _from_rows(self, rows: Rows) -> dict:
        mapping, errors = {}, []
        plain = getattr(self.widget, "plain_values", False)
        for index, (raw_key, text) in enumerate(rows.pairs, start=1):
            key = raw_key.strip()
            if not key and not text.strip():
                continue
            if not key:
                errors.append(f"Row {index}: the value {text.strip()!r} has no name; give it one or clear the row.")
            elif key in mapping:
                errors.append(f"Key {key!r} is given twice (rows {self._first_row(rows, key)} and {index}).")
            else:
                mapping[key] = read_value(text.strip(), plain=plain)
        if errors:
            self.widget.invalid_keys = {key.strip() for key, _ in rows.pairs if key.strip()} & set(mapping)
            raise forms.ValidationError(errors)
        return mapping

    @staticmethod
    def _first_row(rows: Rows, key: str) -> int:
        return next(index for index, (raw, _) in enumerate(rows.pairs, start=1) if raw.strip() == key)

    def has_changed(self, initial, data):
        try:
            return self.to_python(data) != (initial or {})
        except forms.ValidationError:
            return True
