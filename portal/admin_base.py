"""Admin base classes: Unfold look, and saves that go through services.

A service may refuse a save only after the ORM has written the form and its inlines (it validates the
object as a whole: references, defaults, the resolved pod). `ServiceBackedAdmin` runs the whole save in
a transaction; if a domain error escapes, the transaction is rolled back and the same POST is rendered
again with the error on the form, so the admin keeps what they typed and nothing half-saved remains.
"""

from __future__ import annotations

import json

import yaml
from django import forms
from django.contrib.admin import helpers
from django.db import transaction
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import translation
from django.utils.html import escape, format_html
from django.utils.safestring import mark_safe
from unfold.admin import ModelAdmin
from unfold.admin import checkbox as unfold_checkbox

from portal.diffview import DiffView
from portal.docfiles import DocumentError, parse_document
from portal.errors import PortalError
from portal.widgets import CodeBoundField, CodeEditor, at_line, code_field_for, syntax_error

_PENDING_ERROR = "_portal_admin_error"


class ServiceBackedAdmin(ModelAdmin):
    def changeform_view(self, request, object_id=None, form_url="", extra_context=None):
        if request.method != "POST":
            return super().changeform_view(request, object_id, form_url, extra_context)
        try:
            with transaction.atomic():
                return super().changeform_view(request, object_id, form_url, extra_context)
        except PortalError as error:
            setattr(request, _PENDING_ERROR, error)
            return super().changeform_view(request, object_id, form_url, extra_context)

    def get_form(self, request, obj=None, change=False, **kwargs):
        form_class = super().get_form(request, obj, change, **kwargs)
        error = getattr(request, _PENDING_ERROR, None)
        if error is None:
            return form_class

        class FormWithServiceError(form_class):
            def clean(self):
                cleaned = super().clean()
                # a form may say which of its fields a document path is about (`field_of(path, fields)`)
                field = self.field_of(error.field, self.fields) if hasattr(self, "field_of") else error.field
                if field in self.fields:
                    self.add_error(field, at_line(self, field, error.reason, error))
                elif (editor := code_field_for(self, error)) is not None:  # a path inside a document
                    self.add_error(editor, at_line(self, editor, f"Not saved: {error}", error))
                else:
                    self.add_error(None, f"Not saved: {error}")
                return cleaned

        return FormWithServiceError


def pending_error(request) -> PortalError | None:
    """The error a refused save is being shown again with (None on a first render)."""
    return getattr(request, _PENDING_ERROR, None)


class ReadOnlyAdminMixin:
    """An admin (or inline) that shows rows and never adds, changes or deletes them: services write them."""

    def has_add_permission(self, request, *args):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


class DocumentField(forms.Field):
    """A YAML or JSON editor for a document (portal.widgets.CodeEditor); the cleaned value is the parsed
    document. A syntax error is shown at its line."""

    widget = CodeEditor("yaml")
    bound_field_class = CodeBoundField

    def prepare_value(self, value):
        if isinstance(value, (dict, list)):
            return yaml.safe_dump(value, sort_keys=False, allow_unicode=True)
        return value

    def to_python(self, value):
        if isinstance(value, (dict, list)):
            return value
        text = value or ""
        if not text.strip():
            raise forms.ValidationError("Enter a YAML or JSON document.")
        try:
            return parse_document(text, source="document")  # not stripped: its line numbers are the editor's
        except DocumentError as error:
            raise syntax_error(text, error) from None


def pretty_json(data) -> str:
    return format_html(
        '<pre class="font-mono text-sm">{}</pre>',  # wraps inside `.readonly` (static/portal/admin.css)
        json.dumps(data, indent=2, sort_keys=True),
    )


def confirmation_page(
    admin,
    request,
    *,
    heading: str,
    explanation: str,
    confirm_label: str,
    cancel_url: str,
    diff: DiffView | None = None,
    busy_label: str = "",
    notes_heading: str = "",
    notes: list[str] = (),
    message_label: str = "",
) -> TemplateResponse:
    """A GET of an admin action that changes state shows this page; its button POSTs (with the CSRF token)
    to the same URL, and only that POST acts. `diff` is shown as a revision page shows one
    (templates/admin/_diff.html: coloured, unified or side by side with `?diff=split`). With `busy_label`
    ("Syncing…"), the button is disabled and says so while a long action runs. `notes`, under
    `notes_heading`, list what else the action does (a rollback's restored platform and template). With
    `message_label`, the form has an optional one-line `message` under that label (a cancel's reason)."""
    return TemplateResponse(
        request,
        "admin/confirm_action.html",
        {
            **admin.admin_site.each_context(request),
            "title": heading,
            "heading": heading,
            "explanation": explanation,
            "confirm_label": confirm_label,
            "cancel_url": cancel_url,
            "diff": diff,
            "unified_url": "?diff=unified",
            "split_url": "?diff=split",
            "busy_label": busy_label,
            "notes_heading": notes_heading,
            "notes": list(notes),
            "message_label": message_label,
            "opts": admin.model._meta,
        },
    )


_PK_MARK = "pool-portal-row-pk-mark"
_ROW_CHECKBOX: dict[str, tuple[str, str]] = {}


def row_checkbox(pk: object) -> str:
    """unfold's per-row action checkbox, exactly as `unfold.admin.checkbox.render` writes it, at the cost of
    one string join: the widget's template is rendered once per language (its aria-label is translated)
    around a marker, then the escaped pk goes where the marker was. A list page renders one per row."""
    language = translation.get_language() or ""
    parts = _ROW_CHECKBOX.get(language)
    if parts is None:
        before, _, after = str(unfold_checkbox.render(helpers.ACTION_CHECKBOX_NAME, _PK_MARK)).partition(_PK_MARK)
        parts = _ROW_CHECKBOX[language] = (before, after)
    return mark_safe(parts[0] + escape(str(pk)) + parts[1])  # noqa: S308 (the widget's own markup, pk escaped)


class RowCheckboxMixin:
    """Lists of many rows: the action checkbox without a template render per row (`row_checkbox`)."""

    def action_checkbox(self, obj):
        return row_checkbox(obj.pk)

    action_checkbox.__dict__.update(ModelAdmin.action_checkbox.__dict__)  # unfold's column header


def saved_object_link(obj, url_name: str, text: str) -> str:
    """A link to one of the object's own admin pages (`url_name` takes its pk); "-" before it is saved."""
    if obj is None or obj.pk is None:
        return "-"
    return format_html('<a class="underline" href="{}">{}</a>', reverse(url_name, args=[obj.pk]), text)


def revisions_link(config_type: str, obj) -> str:
    """The object's revisions in the config history; "-" before it is saved."""
    if obj is None or obj.pk is None:
        return "-"
    url = reverse("admin:configs_revision_changelist")
    return format_html(
        '<a href="{}?config_type__exact={}&name={}">Revisions of {}</a>', url, config_type, obj.name, obj.name
    )
