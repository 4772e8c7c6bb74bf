"""Admin for the usage app: the per-backend price overrides cost reads first (docs/usage.md#cost). The raw
record and its rollups are not edited by hand (append-only); they are read through the usage page and reports.
Rights: those of machine pools (who may set instance-type prices may set these)."""

from __future__ import annotations

from django import forms
from django.contrib import admin
from unfold.admin import ModelAdmin

from access import actions
from access.admin.site import PolicyAdminMixin
from configs.models import ConfigType
from usage.models import PriceOverride


class PriceOverrideForm(forms.ModelForm):
    instance_type = forms.RegexField(
        regex=r"^[a-z0-9][a-z0-9-]*\.[a-z0-9-]+$",
        max_length=64,
        error_messages={"invalid": "Instance type must be a name such as p4de.24xlarge (family.size, lowercase)"},
    )

    class Meta:
        model = PriceOverride
        fields = ["backend", "instance_type", "on_demand_hourly", "spot_hourly", "note"]

    def clean(self):
        cleaned = super().clean()
        for field in ("on_demand_hourly", "spot_hourly"):
            price = cleaned.get(field)
            if price is not None and price <= 0:
                self.add_error(field, f"{self.fields[field].label} must be a positive USD amount, or empty")
        if cleaned.get("on_demand_hourly") is None and cleaned.get("spot_hourly") is None:
            self.add_error("on_demand_hourly", "Set an on-demand price, a spot price, or both")
        return cleaned


@admin.register(PriceOverride)
class PriceOverrideAdmin(PolicyAdminMixin, ModelAdmin):
    policy_resource = actions.config(ConfigType.MACHINE_POOL)
    form = PriceOverrideForm
    list_display = ["backend", "instance_type", "on_demand_hourly", "spot_hourly", "note"]
    list_select_related = ["backend"]
    search_fields = ["instance_type", "backend__name", "note"]
