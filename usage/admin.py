"""Admin for the usage app: the per-backend price overrides cost reads first (docs/usage.md#cost). The raw
record and its rollups are not edited by hand (append-only); they are read through the usage page and reports.
Rights: those of machine pools (who may set instance-type prices may set these)."""

from __future__ import annotations

from django import forms
from django.contrib import admin
from django.utils.timezone import localdate
from unfold.admin import ModelAdmin

from access import actions
from access.admin.site import PolicyAdminMixin
from clusters.machinepools import pricing
from configs.models import ConfigType
from usage.models import PriceOverride

PRICE_FIELDS = {"on_demand": "on_demand_hourly", "spot": "spot_hourly", "as_of": "as_of"}


class PriceOverrideForm(forms.ModelForm):
    instance_type = forms.RegexField(
        regex=r"^[a-z0-9][a-z0-9-]*\.[a-z0-9-]+$",
        max_length=64,
        error_messages={"invalid": "Instance type must be a name such as p4de.24xlarge (family.size, lowercase)"},
    )

    class Meta:
        model = PriceOverride
        fields = ["backend", "instance_type", "on_demand_hourly", "spot_hourly", "note", "as_of"]

    def clean(self):
        """Each price positive and at most pricing.MAX_HOURLY_PRICE, spot never above on-demand, the date neither
        in the future nor before EC2 (clusters.machinepools.pricing.price_problems); the error names the field
        and the value."""
        cleaned = super().clean()
        problems = pricing.price_problems(
            cleaned.get("on_demand_hourly"), cleaned.get("spot_hourly"), cleaned.get("as_of"), localdate()
        )
        for role, why in problems.items():
            field = PRICE_FIELDS[role]
            if field not in self.errors:
                self.add_error(field, f"{self.fields[field].label}: {why}")
        if cleaned.get("on_demand_hourly") is None and cleaned.get("spot_hourly") is None and not self.errors:
            self.add_error("on_demand_hourly", "Set an on-demand price, a spot price, or both")
        return cleaned


@admin.register(PriceOverride)
class PriceOverrideAdmin(PolicyAdminMixin, ModelAdmin):
    policy_resource = actions.config(ConfigType.MACHINE_POOL)
    form = PriceOverrideForm
    list_display = ["backend", "instance_type", "on_demand_hourly", "spot_hourly", "note", "as_of"]
    list_select_related = ["backend"]
    search_fields = ["instance_type", "backend__name", "note"]
