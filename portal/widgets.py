"""The code editor widget: a <textarea> that static/portal/vendor/editor.js turns into a YAML or JSON editor
(highlighting, line numbers, a syntax check as you type, the server's errors at their line).

    spec = forms.CharField(widget=CodeEditor("yaml"), bound_field_class=CodeBoundField)

Without the script the textarea is the editor, and it always stays the form's field. An error carries its
line when it is raised with `at_line` (or `line_error`): `CodeBoundField` hands the lines to the script
in the textarea's `data-errors` attribute, and the message keeps the line for readers of the page.
"""

from __future__ import annotations

import json

from django import forms
from django.forms.boundfield import BoundField

from portal.source_lines import error_line, without_position

LANGUAGES = ("yaml", "json")
EDITOR_SCRIPT = "portal/vendor/editor.js"


class CodeEditor(forms.Textarea):
    def __init__(self, language: str = "yaml", attrs: dict | None = None) -> None:
        if language not in LANGUAGES:
            raise ValueError(f"language must be one of {', '.join(LANGUAGES)}, not {language!r}")
        self.language = language
        base = {
            "rows": 24,
            "class": "code-editor font-mono text-sm w-full",
            "spellcheck": "false",
            "autocomplete": "off",
            "autocapitalize": "off",
            "data-code-editor": language,
        }
        super().__init__({**base, **(attrs or {})})

    class Media:
        js = (EDITOR_SCRIPT,)


def line_error(message: str, line: int | None) -> forms.ValidationError | str:
    """`message` as a form error at `line` ("line 7: …"), or the plain message when the line is unknown."""
    if not line:
        return message
    return forms.ValidationError("line %(line)s: %(reason)s", code="at_line", params={"line": line, "reason": message})


def syntax_error(text: str, error: object) -> forms.ValidationError:
    """A document that does not parse, as a form error at the line its parser named."""
    line = error_line(text, error)
    reason = str(getattr(error, "reason", error))
    located = line_error(without_position(reason) if line else reason, line)
    return located if isinstance(located, forms.ValidationError) else forms.ValidationError(located)


def at_line(form, name: str, message: str, error: object) -> forms.ValidationError | str:
    """The form error for `error` on field `name`: at its line when the field is a code editor and the line
    can be found in the text that was posted (the reason's position, or the error's path in the text)."""
    field = form.fields.get(name)
    if field is None or not isinstance(field.widget, CodeEditor) or not form.is_bound:
        return message
    text = form.data.get(form.add_prefix(name)) or ""
    return line_error(message, error_line(text, error, root=name))


def code_field_for(form, error: object) -> str | None:
    """The code editor field of `form` whose posted text holds the place `error` names, if any."""
    if not form.is_bound or not getattr(error, "field", ""):
        return None
    editors = [name for name, field in form.fields.items() if isinstance(field.widget, CodeEditor)]
    for name in editors:
        if error_line(form.data.get(form.add_prefix(name)) or "", error, root=name) is not None:
            return name
    return None


class CodeBoundField(BoundField):
    """Puts the field's errors that know their line into the textarea's `data-errors`, for the editor."""

    def build_widget_attrs(self, attrs, widget=None):
        attrs = super().build_widget_attrs(attrs, widget)
        if self.form.is_bound and self.errors:
            located = [
                {"line": error.params["line"], "message": error.params.get("reason") or " ".join(error.messages)}
                for error in self.errors.as_data()
                if error.params and error.params.get("line")
            ]
            if located:
                attrs["data-errors"] = json.dumps(located)
        return attrs
