"""Admin forms, derived from the config types' descriptions (pools.config_types): their fields, and each
field checked as every door checks it, so errors read the same. Whole-document and cross-field checks run
when the config service saves (portal.admin_base.ServiceBackedAdmin shows what it refuses).

Mappings (default variables, exit actions) are edited as key–value rows, template and validation lists
with ordered pickers, the default platform as a choice among the pool's platforms; each posts the value
the OSMO document holds, so a save stores what the JSON text stored before (docs/admin.md).
"""

from __future__ import annotations

from django import forms

from configs.admin import in_the_forms_words
from configs.errors import ConfigError
from configs.kinds import OrderedRefs
from configs.models import ConfigType
from configs.schema import Schema
from configs.validators import EXIT_ACTION_KEYS, check_name
from pools.config_types import PLATFORM, POD_TEMPLATE, POOL, RESOURCE_VALIDATION
from pools.models import Platform, PodTemplate, Pool, ResourceValidation
from portal.admin_base import DocumentField
from portal.keyvalue_widget import KeyValueField, KeyValueRows
from portal.ordered_widget import OrderedNamesField
from portal.widget_classes import SELECT
from portal.widgets import at_line

NAMES_OF = {ConfigType.POD_TEMPLATE: PodTemplate, ConfigType.RESOURCE_VALIDATION: ResourceValidation}
SAVE_ANYWAY_HELP = "Save even though a platform matches no node of the backend."


def variables_field(help_text: str) -> KeyValueField:
    return KeyValueField(
        widget=KeyValueRows(
            key_label="Variable",
            value_label="Value",
            key_pattern="[A-Za-z_][A-Za-z0-9_]*",
            key_hint="Letters, digits and _, not starting with a digit",
            value_placeholder="e.g. 4",
        ),
        help_text=help_text,
    )


def exit_actions_field() -> KeyValueField:
    return KeyValueField(
        widget=KeyValueRows(
            key_label="Exit action",
            value_label="Exit codes",
            key_choices=EXIT_ACTION_KEYS,
            value_placeholder="e.g. 0,1-10,16",
            plain_values=True,
        ),
        help_text="What a task's exit code leads to: COMPLETE, FAIL or RESCHEDULE, each with codes and ranges.",
    )


class SchemaForm(forms.ModelForm):
    """A ModelForm on a config type: `schema` names its fields and checks each one."""

    schema: Schema

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for item in self.schema.leaves():  # rows fields are declared here, not made from the model: name them
            if isinstance(self.fields.get(item.target), KeyValueField):
                in_the_forms_words(self.fields[item.target], item)
        for item in self.schema.leaves():  # ordered reference lists: their choices, and the saved order
            if isinstance(item.kind, OrderedRefs) and item.target in self.fields:
                model = NAMES_OF[item.kind.config_type]
                self.fields[item.target].choices = model.objects.order_by("name").values_list("name", flat=True)
                if self.instance.pk and item.target not in self.initial:
                    self.initial[item.target] = item.kind.read(self.instance, item.target)

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
            if isinstance(self.fields[field.target], KeyValueField) and isinstance(value, dict):
                self._check_rows(field, value)
                continue
            try:
                field.kind.parse(field.kind.from_form(value), field.target)
            except ConfigError as error:
                # in the form's words: "Default exec timeout must be a duration such as '2h', …"
                reason = f"{field.form_label()} {error.reason}" if error.field == field.target else str(error)
                self.add_error(field.target, at_line(self, field.target, reason, error))
        return cleaned

    def _check_rows(self, field, mapping: dict) -> None:
        """Each row on its own, so every bad row is named at once, by its key."""
        errors, invalid = [], set()
        for key, value in mapping.items():
            try:
                field.kind.parse({key: value}, field.target)
            except ConfigError as error:
                invalid.add(key)
                errors.append(f"{key}: {error.reason}" + (f" (value: {value!r})" if error.value != key else ""))
        if errors:
            self.fields[field.target].widget.invalid_keys = invalid
            self.add_error(field.target, errors)


def schema_form(schema: Schema, model, base: type[SchemaForm] | None = None, **declared) -> type[SchemaForm]:
    meta = type("Meta", (), {"model": model, "fields": ["name", *schema.form_fields()]})
    return type(
        f"{model.__name__}Form",
        (base or SchemaForm,),
        {"schema": schema, "Meta": meta, "__module__": __name__, **declared},
    )


class PlatformChoice(forms.Select):
    """The pool's default platform: one of its platforms. The options are the platforms the pool has and the
    ones being added on the same page (static/portal/pool-form.js follows the names as they are typed)."""

    def __init__(self):
        super().__init__(attrs={"class": SELECT, "data-default-platform": ""})
        self.names: list[str] = []

    def render(self, name, value, attrs=None, renderer=None):
        names = list(self.names)
        if value and value not in names:
            names.append(value)  # shown as posted; the save names the pool's platforms if it is not one
        self.choices = [("", "None (a task must name its platform)"), *((n, n) for n in names)]
        return super().render(name, value, attrs, renderer)


def posted_platform_names(data) -> list[str]:
    """The platform names of the pool page's platform rows as posted (deleted ones left out)."""
    try:
        total = int(data.get("platforms-TOTAL_FORMS") or 0)
    except ValueError:
        return []
    names = []
    for index in range(min(total, 1000)):
        name = (data.get(f"platforms-{index}-name") or "").strip()
        if name and not data.get(f"platforms-{index}-DELETE"):
            names.append(name)
    return names


class PoolFormBase(SchemaForm):
    default_platform = forms.CharField(
        required=False,
        widget=PlatformChoice(),
        help_text="Where a task goes when it names no platform; one of the platforms below.",
    )
    common_default_variables = variables_field("Variables every platform of the pool starts from.")
    default_exit_actions = exit_actions_field()
    common_pod_template = OrderedNamesField(
        noun="pod template", label="Common pod templates", help_text="Merged in this order; a later one wins."
    )
    common_resource_validations = OrderedNamesField(
        noun="resource validation", label="Common resource validations", help_text="Checked in this order."
    )
    save_anyway = forms.BooleanField(required=False, label="Save anyway", help_text=SAVE_ANYWAY_HELP)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        saved = list(self.instance.platforms.values_list("name", flat=True)) if self.instance.pk else []
        posted = posted_platform_names(self.data) if self.is_bound else []
        self.fields["default_platform"].widget.names = sorted(set(posted) if self.is_bound and posted else saved)


class PlatformFormBase(SchemaForm):
    default_variables = variables_field("Variables of this platform; they override the pool's.")
    override_pod_template = OrderedNamesField(
        noun="pod template",
        label="Override pod templates",
        help_text="Merged after the pool's common templates, in this order; a later one wins.",
    )
    resource_validations = OrderedNamesField(
        noun="resource validation", label="Resource validations", help_text="Checked after the pool's, in order."
    )
    save_anyway = forms.BooleanField(required=False, label="Save anyway", help_text=SAVE_ANYWAY_HELP)


class PlatformRowForm(forms.ModelForm):
    """A platform row on the pool page (its templates are edited on its own page)."""

    default_variables = variables_field("Variables of this platform; they override the pool's.")

    class Meta:
        model = Platform
        fields = ["name", *PLATFORM.form_fields()]


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
PoolForm = schema_form(POOL, Pool, PoolFormBase)
PlatformForm = schema_form(PLATFORM, Platform, PlatformFormBase)
