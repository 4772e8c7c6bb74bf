"""Admin pages write configs the way the CLI and the API do: the form and its inlines become an OSMO
document (derived from the type's schema) that `configs.store.apply` parses, validates, saves and records
as one revision. The admin never saves a config model itself.

Mixed into each app's ModelAdmin (with its permission mixin); registers nothing.
"""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.admin.utils import flatten_fieldsets
from unfold.widgets import UnfoldAdminTextInputWidget

from configs import registry, store
from configs.kinds import Children
from configs.revisions import Actor
from configs.schema import Schema


class FormWordsMixin:
    """Form fields of described fields in the form's words: labels as people write them ("GPU guarantee", not
    "Gpu guarantee") and error messages that name the field and what it allows ("GPU guarantee must be a
    whole number, −1 for none", not Django's "Enter a whole number."). For ModelAdmins and inlines; set
    `words_schema` (SchemaAdminMixin uses the schema its form edits)."""

    words_schema: Schema | None = None

    def formfield_for_dbfield(self, db_field, request, **kwargs):
        formfield = super().formfield_for_dbfield(db_field, request, **kwargs)
        described = self.words_schema.described(db_field.name) if self.words_schema and formfield else None
        if described is not None:
            in_the_forms_words(formfield, described)
        return formfield


def in_the_forms_words(formfield, described) -> None:
    label = described.form_label()
    formfield.label = label
    words = {**_choice_words(formfield, label), **described.kind.form_messages(label)}
    if described.required:
        words["required"] = f"{label} is required: {described.required}"
    formfield.error_messages = {**formfield.error_messages, **words}
    formfield.validators = [*formfield.validators, *described.kind.form_validators(label)]


def _choice_words(formfield, label: str) -> dict[str, str]:
    """A refused choice names the field and the values it allows (a list of objects: "one of those listed")."""
    if isinstance(formfield, forms.ModelChoiceField):
        return {"invalid_choice": f"{label} must be one of those listed, not “%(value)s”"}
    if isinstance(formfield, forms.ChoiceField):
        values = [str(value) for value, _ in formfield.choices if value not in ("", None)]
        return {"invalid_choice": f"{label} must be one of {', '.join(values)}, not “%(value)s”"}
    return {}


CHANGE_DESCRIPTION_MAX = 500  # characters (docs/limits.md)


def change_description_field() -> forms.CharField:
    return forms.CharField(
        label="Change description",
        widget=UnfoldAdminTextInputWidget(attrs={"placeholder": "e.g. more GPUs for the spring training runs"}),
        required=False,
        max_length=CHANGE_DESCRIPTION_MAX,
        strip=True,
        help_text=f"Optional: why you make this change (at most {CHANGE_DESCRIPTION_MAX} characters). It becomes "
        "the revision's description in the history, as the CLI's --description does.",
        error_messages={
            "max_length": f"Change description is at most {CHANGE_DESCRIPTION_MAX} characters "
            "(this one has %(show_value)d)"
        },
    )


class ChangeDescriptionMixin:
    """An optional "Change description" on the add/change form of a config-store object, kept out of the
    document and given to `configs.store` as the revision's description (`revision_description`). The field
    is the form's last fieldset, beside the save button."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.form = type(self.form.__name__, (self.form,), {"change_description": change_description_field()})

    def get_fieldsets(self, request, obj=None):
        return self.with_change_description(request, obj, super().get_fieldsets(request, obj))

    def with_change_description(self, request, obj, fieldsets) -> list:
        """`fieldsets` and, where the page writes, the change description's. An admin whose own `get_fieldsets`
        picks its fieldsets (the backend's, the machine pool's, the role's: another set on the add page) ends
        with this, or the form has no such field and its saves' history rows say "-"."""
        fieldsets = list(fieldsets)
        writes = self.has_change_permission(request, obj) if obj is not None else self.has_add_permission(request)
        if not writes:  # a read-only page has no form field to show it in
            return fieldsets
        return [*fieldsets, ("This change", {"fields": ["change_description"]})]

    def revision_description(self, form) -> str:
        """What the admin typed, after what the page says of the change itself (a platform's "platform x")."""
        own = self.config_description(form)
        typed = (form.cleaned_data.get("change_description") or "").strip()
        return f"{own}: {typed}" if own and typed else own or typed

    def config_description(self, form) -> str:
        return ""


class SchemaAdminMixin(ChangeDescriptionMixin, FormWordsMixin):
    config_type: str

    form_schema: Schema | None = None  # the schema the page's own form edits, if not the type's

    @property
    def schema(self) -> Schema:
        return registry.get(self.config_type).schema

    @property
    def words_schema(self) -> Schema:
        return self.form_schema or self.schema

    def get_fieldsets(self, request, obj=None):
        """The page's fieldsets, plus any described field they do not place (a newly described field shows
        up without touching the admin)."""
        fieldsets = super().get_fieldsets(request, obj)
        placed = set(flatten_fieldsets(fieldsets))
        missing = [name for name in (self.form_schema or self.schema).form_fields() if name not in placed]
        return [*fieldsets, ("More", {"fields": missing})] if missing else fieldsets

    def save_model(self, request, obj, form, change):
        """Nothing yet: `save_related` writes the object with its inlines, through the config service."""

    def save_related(self, request, form, formsets, change):
        name = self.config_name(form)
        result = store.apply(
            self.config_type,
            name,
            self.config_body(form, formsets, change),
            Actor.for_request(request, "admin"),
            description=self.revision_description(form),
        )
        for warning in result.warnings:
            self.message_user(request, warning, messages.WARNING)
        form.instance.pk = self.saved_pk(form)
        for formset in formsets:  # the change message reads what the formsets would have saved
            formset.new_objects, formset.changed_objects, formset.deleted_objects = [], [], []

    def config_name(self, form) -> str:
        return form.instance.name if form.instance.pk else form.cleaned_data["name"]

    def config_body(self, form, formsets, change) -> object:
        base = store.show(self.config_type, form.instance.name) if change else None
        body = self.schema.body_from_form(form.cleaned_data, base)
        for formset in formsets:
            apply_formset(self.schema, body, formset, base)
        return body

    def saved_pk(self, form) -> int:
        return self.model._default_manager.values_list("pk", flat=True).get(name=self.config_name(form))


def apply_formset(schema: Schema, body: dict, formset, base: dict | None) -> None:
    """Put an inline's rows (named child objects, e.g. a pool's platforms) into `body`. The schema field is
    the one whose relation the inline edits; ordered reference lists are form fields (portal.ordered_widget)."""
    relation = formset.fk.remote_field.get_accessor_name()
    rows = [form for form in formset.forms if form.cleaned_data and not form.cleaned_data.get("DELETE")]
    for field in schema.leaves():
        if isinstance(field.kind, Children) and field.target == relation:
            current = (base or {}).get(field.name) or {}
            body[field.name] = {
                form.cleaned_data["name"]: field.kind.schema.body_from_form(
                    form.cleaned_data, current.get(form.initial.get("name"))
                )
                for form in rows
            }
