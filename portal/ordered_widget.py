"""An ordered picker for a list of names whose order means something (pod templates merge in order,
resource validations are checked in order): the chosen names as a numbered list with up, down and remove
buttons, and a select to add one (static/portal/ordered.js).

Each chosen name posts as a hidden `<name>` input in list order, and the add select posts under the same
name (blank unless something is picked), so the cleaned value is the list in order, also without the
script (then a save adds the picked name at the end).
"""

from __future__ import annotations

from django import forms
from django.utils.html import format_html, format_html_join

from portal.widget_classes import BUTTON, SELECT


class OrderedPicker(forms.Widget):
    """`choices`: every name that may be picked, set by the form (`OrderedNamesField.choices`)."""

    class Media:
        js = ("portal/ordered.js",)
        css = {"all": ("portal/admin-forms.css",)}

    def __init__(self, *, noun: str = "item", attrs=None) -> None:
        super().__init__(attrs)
        self.noun = noun
        self.choices: list[str] = []

    def value_from_datadict(self, data, files, name):
        return [value for value in data.getlist(name) if value] if hasattr(data, "getlist") else data.get(name)

    def value_omitted_from_data(self, data, files, name):
        return False  # an empty list posts nothing: that is a value (no templates), not an omission

    def render(self, name, value, attrs=None, renderer=None):
        chosen = list(value or [])
        attrs = self.build_attrs(self.attrs, attrs)
        items = format_html_join("", "{}", ((self._item(name, item),) for item in chosen))
        options = format_html_join(
            "",
            '<option value="{}"{}>{}</option>',
            ((choice, " disabled" if choice in chosen else "", choice) for choice in self.choices),
        )
        return format_html(
            '<div class="op-picker" data-ordered-picker id="{}">'
            '<ol class="op-list" data-op-list>{}</ol>'
            '<p class="op-empty" data-op-empty{}>None chosen.</p>'
            '<label class="op-add"><span>Add a {}</span>'
            '<select name="{}" class="{}" data-op-add><option value="">Choose a {}…</option>{}</select></label></div>',
            attrs.get("id", name),
            items,
            " hidden" if chosen else "",
            self.noun,
            name,
            SELECT,
            self.noun,
            options,
        )

    def _item(self, name: str, item: str) -> str:
        return format_html(
            '<li class="op-item" data-op-item><input type="hidden" name="{}" value="{}">'
            '<span class="op-name">{}</span><span class="op-buttons">'
            '<button type="button" class="{}" data-op-up aria-label="Move {} up">↑</button>'
            '<button type="button" class="{}" data-op-down aria-label="Move {} down">↓</button>'
            '<button type="button" class="{}" data-op-remove aria-label="Remove {}">Remove</button></span></li>',
            name,
            item,
            item,
            BUTTON,
            item,
            BUTTON,
            item,
            BUTTON,
            item,
        )


class OrderedNamesField(forms.Field):
    """A list of names in order, each one of `choices` and at most once."""

    def __init__(self, *, noun: str, **kwargs) -> None:
        kwargs.setdefault("required", False)
        super().__init__(widget=OrderedPicker(noun=noun), **kwargs)
        self.noun = noun

    @property
    def choices(self) -> list[str]:
        return self.widget.choices

    @choices.setter
    def choices(self, names) -> None:
        self.widget.choices = list(names)

    def to_python(self, value):
        if value in (None, ""):
            return []
        return [value] if isinstance(value, str) else list(value)

    def validate(self, value):
        super().validate(value)
        errors = [f"Unknown {self.noun} {name!r}." for name in value if name not in self.choices]
        errors += [f"{name!r} is chosen twice." for name in dict.fromkeys(n for n in value if value.count(n) > 1)]
        if errors:
            raise forms.ValidationError(errors)

    def has_changed(self, initial, data):
        return list(initial or []) != self.to_python(data)
