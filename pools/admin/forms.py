"""Admin forms, derived from the config types' descriptions (pools.config_types): their fields, and each
field checked as every door checks it, so errors read the same. Whole-document and cross-field checks run
when the config service saves (portal.admin_base.ServiceBackedAdmin shows what it refuses)."""

from __future__ import annotations

from django import forms

from configs.errors import ConfigError
from configs.schema import Schema
from configs.validators import check_name
from pools.config_types import POD_TEMPLATE, POOL, RESOURCE_VALIDATION
from pools.models import PodTemplate, Pool, ResourceValidation
from portal.admin_base import DocumentField
from portal.widgets import at_line


class SchemaForm(forms.ModelForm):
    """A ModelForm on a config type: `schema` names its fields and checks each one."""

    schema: Schema

    def clean_name(self):
        try:
            return check_name(self.cleaned_data["name"])
        except ConfigError as error:
            raise forms.ValidationError(str(error)) from None

    def clean(self):
        cleaned = super().clean()
        for field in self.schema.leaves():
            value = cleaned.get(field.target)
            if field.target not in self.fields or field.target in self.errors or value is None:
                continue
            try:
                field.kind.parse(field.kind.from_form(value), field.target)
            except ConfigError as error:
                message = error.reason if error.field == field.target else str(error)
                self.add_error(field.target, at_line(self, field.target, message, error))
        return cleaned


def schema_form(schema: Schema, model, **declared) -> type[SchemaForm]:
    meta = type("Meta", (), {"model": model, "fields": ["name", *schema.form_fields()]})
    return type(
        f"{model.__name__}Form", (SchemaForm,), {"schema": schema, "Meta": meta, "__module__": __name__, **declared}
    )


PodTemplateForm = schema_form(
    POD_TEMPLATE,
    PodTemplate,
    body=DocumentField(
        help_text="A partial Pod manifest in YAML or JSON, e.g. spec.nodeSelector and spec.tolerations. Use "
        "{{USER_CPU}}-style variables."
    ),
)
ResourceValidationForm = schema_form(
    RESOURCE_VALIDATION,
    ResourceValidation,
    rules=DocumentField(
        help_text="A list of rules: operator (GT GE LT LE EQ NE), left_operand, right_operand, assert_message. "
        "Example: {{USER_GPU}} LE {{K8_GPU}}."
    ),
)
PoolForm = schema_form(POOL, Pool)
