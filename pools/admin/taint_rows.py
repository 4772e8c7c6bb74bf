"""A machine pool's taints edited as rows: key, value and an effect select per taint, with add and remove
buttons (the key–value rows' markup and script, static/portal/keyvalue.js), instead of JSON text.

Without the script the rows still post (the blank last row adds a taint, an emptied row removes one); a post
of the list as JSON text (the field's name alone, as the form took before) is still read. The cleaned value
is the document's list `[{"key", "value", "effect"}]`; the MACHINE_POOL parse checks it, and its errors
(`taints[1].effect`) name the row they are about (`row_error`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from django import forms
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe

from clusters.machinepools.spec import TAINT_EFFECTS
from portal.widget_classes import BUTTON, INPUT, SECONDARY_BUTTON, SELECT

ROW_PATH = re.compile(r"^taints\[(\d+)\](?:\.(\w+))?")


@dataclass
class TaintRowsPosted:
    """The rows as posted: [(key, value, effect)], in order, blank rows included."""

    rows: list[tuple[str, str, str]]


class TaintRows(forms.Widget):
    """Rows of key, value and effect posted as `<name>-key`, `<name>-value`, `<name>-effect` lists.
    `invalid_rows` (0-based, set by the form after a refused post) marks those rows."""

    class Media:
        js = ("portal/keyvalue.js",)
        css = {"all": ("portal/admin-forms.css",)}

    def __init__(self, attrs=None) -> None:
        super().__init__(attrs)
        self.invalid_rows: set[int] = set()

    def value_from_datadict(self, data, files, name):
        if f"{name}-key" in data:
            columns = [data.getlist(f"{name}-{part}") for part in ("key", "value", "effect")]
            width = len(columns[0])
            keys, values, effects = (column + [""] * (width - len(column)) for column in columns)
            return TaintRowsPosted(list(zip(keys, values, effects, strict=False)))
        return data.get(name)

    def value_omitted_from_data(self, data, files, name):
        return f"{name}-key" not in data and name not in data

    @staticmethod
    def rows(value) -> list[tuple[str, str, str]]:
        if isinstance(value, TaintRowsPosted):
            return [row for row in value.rows if row[0].strip() or row[1].strip()]
        if isinstance(value, str):
            try:
                value = json.loads(value) if value.strip() else []
            except ValueError:
                return []
        if not isinstance(value, list):
            return []
        return [
            (str(item.get("key", "")), str(item.get("value", "")), str(item.get("effect", "")))
            for item in value
            if isinstance(item, dict)
        ]

    def render(self, name, value, attrs=None, renderer=None):
        rows = [*self.rows(value), ("", "", "")]  # a blank row to add one (also without the script)
        attrs = self.build_attrs(self.attrs, attrs)
        body = format_html_join("", "{}", ((self._row(name, index, *row),) for index, row in enumerate(rows)))
        return format_html(
            '<div class="kv-rows taint-rows" data-kv-rows id="{}">'
            '<table class="kv-table"><thead><tr><th scope="col">Key</th><th scope="col">Value</th>'
            '<th scope="col">Effect</th><th></th></tr></thead><tbody>{}</tbody></table>'
            '<button type="button" class="{} kv-add" data-kv-add>Add a taint</button></div>',
            attrs.get("id", name),
            body,
            SECONDARY_BUTTON,
        )

    def _row(self, name: str, index: int, key: str, value: str, effect: str) -> str:
        invalid = index in self.invalid_rows
        number = index + 1
        return format_html(
            '<tr data-kv-row{}><td class="kv-key">{}</td><td class="kv-value">{}</td>'
            '<td class="kv-effect">{}</td><td class="kv-actions"><button type="button" class="{}" data-kv-remove'
            ' aria-label="Remove this taint"><span class="pp-wide">Remove</span>'
            '<span class="pp-narrow" aria-hidden="true">✕</span></button></td></tr>',
            mark_safe(' class="kv-invalid" aria-invalid="true"') if invalid else "",
            self._text(name, "key", key, f"Key of taint {number}", "e.g. nvidia.com/gpu"),
            self._text(name, "value", value, f"Value of taint {number}", "e.g. true"),
            self._effect(name, effect, number),
            BUTTON,
        )

    @staticmethod
    def _text(name: str, part: str, text: str, label: str, placeholder: str) -> str:
        return format_html(
            '<input type="text" name="{}-{}" value="{}" class="{}" aria-label="{}" placeholder="{}"'
            ' spellcheck="false" autocomplete="off">',
            name,
            part,
            text,
            INPUT,
            label,
            placeholder,
        )

    @staticmethod
    def _effect(name: str, effect: str, number: int) -> str:
        choices = list(TAINT_EFFECTS)
        if effect and effect not in choices:
            choices.append(effect)  # what was posted, shown as posted; the server says why it is refused
        options = format_html_join(
            "", '<option value="{}"{}>{}</option>', ((c, " selected" if c == effect else "", c) for c in choices)
        )
        return format_html(
            '<select name="{}-effect" class="{}" aria-label="Effect of taint {}">{}</select>',
            name,
            SELECT,
            number,
            options,
        )


class TaintsField(forms.Field):
    """The taints as rows (`TaintRows`) or as JSON text; blank rows are skipped, a value without a key is
    refused naming its row. The rest (key syntax, effect, duplicates) is the MACHINE_POOL parse's."""

    def __init__(self, **kwargs) -> None:
        kwargs.setdefault("required", False)
        super().__init__(widget=TaintRows(), **kwargs)

    def prepare_value(self, value):
        return value

    def to_python(self, value):
        if isinstance(value, list):
            return value
        if isinstance(value, TaintRowsPosted):
            return self._from_rows(value)
        if value in (None, ""):
            return []
        try:
            return json.loads(value)  # the list as JSON text; its shape is checked by the config type
        except ValueError as error:
            raise forms.ValidationError(f"Taints must be rows, or a JSON list ({error})", code="invalid") from None

    def _from_rows(self, posted: TaintRowsPosted) -> list[dict]:
        taints, errors, invalid = [], [], set()
        for index, (key, value, effect) in enumerate(TaintRows.rows(posted)):
            if not key.strip():
                invalid.add(index)
                errors.append(f"Taint {index + 1}: the value {value.strip()!r} has no key; give it one or clear it.")
            taints.append({"key": key.strip(), "value": value.strip(), "effect": effect})
        if errors:
            self.widget.invalid_rows = invalid  # a new set: widgets are copied shallowly per form
            raise forms.ValidationError(errors)
        return taints

    def has_changed(self, initial, data):
        try:
            return self.to_python(data) != (initial or [])
        except forms.ValidationError:
            return True


def row_error(error, widget) -> str | None:
    """A parse error at `taints[1].effect` as the form says it, naming the row, the part and the value
    ("Taint 2, effect 'Sometimes': a taint's effect is one of …"), the row marked; None when the error's
    path is not about one taint."""
    match = ROW_PATH.match(getattr(error, "field", "") or "")
    if match is None:
        return None
    index, part = int(match.group(1)), match.group(2)
    if isinstance(widget, TaintRows):
        widget.invalid_rows = {*widget.invalid_rows, index}  # a new set: widgets are copied shallowly
    value = getattr(error, "value", None)
    about = f", {part} {value!r}" if part and value not in (None, "") else f", {part}" if part else ""
    return f"Taint {index + 1}{about}: {error.reason}"
