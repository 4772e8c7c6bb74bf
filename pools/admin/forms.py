"""Admin forms: field-level checks reuse the validators every other door uses, so errors read the same."""

from __future__ import annotations

from django import forms

from configs.errors import ConfigError
from configs.validators import check_name, check_timeouts, normalize_exit_actions, parse_timeout
from pools.models import PodTemplate, Pool, ResourceValidation
from pools.services import documents
from portal.admin_base import DocumentField


def _as_validation_error(call, *args):
    try:
        return call(*args)
    except ConfigError as error:
        raise forms.ValidationError(str(error)) from None


class NamedForm(forms.ModelForm):
    def clean_name(self):
        return _as_validation_error(check_name, self.cleaned_data["name"])


class PodTemplateForm(NamedForm):
    body = DocumentField(help_text="A partial Pod manifest in YAML or JSON, e.g. spec.nodeSelector and "
                                   "spec.tolerations. Use {{USER_CPU}}-style variables.")

    class Meta:
        model = PodTemplate
        fields = ["name", "body"]

    def clean(self):
        cleaned = super().clean()
        if "body" in cleaned and cleaned.get("name"):
            try:
                cleaned["body"] = documents.parse_pod_template(cleaned["name"], cleaned["body"])
            except ConfigError as error:
                self.add_error("body", str(error))
        return cleaned


class ResourceValidationForm(NamedForm):
    rules = DocumentField(help_text="A list of rules: operator (GT GE LT LE EQ NE), left_operand, right_operand, "
                                    "assert_message. Example: {{USER_GPU}} LE {{K8_GPU}}.")

    class Meta:
        model = ResourceValidation
        fields = ["name", "rules"]

    def clean(self):
        cleaned = super().clean()
        if "rules" in cleaned and cleaned.get("name"):
            try:
                cleaned["rules"] = documents.parse_resource_validation(cleaned["name"], cleaned["rules"])
            except ConfigError as error:
                self.add_error("rules", str(error))
        return cleaned


class PoolForm(NamedForm):
    class Meta:
        model = Pool
        fields = ["name", "description", "backend", "default_platform", "enable_maintenance",
                  "common_default_variables", "default_exec_timeout", "max_exec_timeout", "default_queue_timeout",
                  "max_queue_timeout", "default_exit_actions", "download_type", "gpu_guarantee", "gpu_maximum",
                  "gpu_weight", "topology_keys"]

    def clean(self):
        cleaned = super().clean()
        for key in documents.TIMEOUT_FIELDS:
            try:
                parse_timeout(cleaned.get(key), key)
            except ConfigError as error:
                self.add_error(key, error.reason)
        if not self.errors:
            try:
                check_timeouts({key: cleaned.get(key, "") for key in documents.TIMEOUT_FIELDS})
            except ConfigError as error:
                self.add_error(error.field, error.reason)
        return cleaned

    def clean_default_exit_actions(self):
        return _as_validation_error(normalize_exit_actions, self.cleaned_data.get("default_exit_actions"))
