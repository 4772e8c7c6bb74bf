"""Admin for machine pools and instance types (issue #14; docs/machine-pools.md).

Machine pools are written like every config type, through `configs.store.apply` (ConfigAdmin): each save is
one MACHINE_POOL revision. The status the provider last answered is read-only, with capacity now and at
maximum (nodes, GPUs from the instance type) and the hourly cost: the figures of `clusters.machinepools.figures`,
which the REST API and `machinepool list|describe` show too. "Add from preset" links prefill the add form with the
seed's two pools (clusters.machinepools.presets). The list's query count does not grow with rows: the figures
are computed for the page at once and laid on the rows.

Instance types are plain rows an admin adds or corrects over the shipped catalog (not a config type).
"""

from __future__ import annotations

from django import forms
from django.contrib import admin
from django.utils.html import format_html
from django.utils.timezone import localdate
from unfold.admin import ModelAdmin
from unfold.decorators import display

from access import actions
from access.admin.site import PolicyAdminMixin
from clusters.config_types import MACHINE_POOL
from clusters.machinepools import catalog as shipped_catalog
from clusters.machinepools import instance_types, pricing
from clusters.machinepools.figures import MachinePoolStatus, statuses
from clusters.machinepools.presets import PRESETS
from clusters.models import InstanceType, MachinePool
from configs import store
from configs.admin import in_the_forms_words
from configs.errors import ConfigError
from configs.models import ConfigType
from pools.admin.config import ConfigAdmin
from pools.admin.machine_pool_actions import DeleteWithPlatformMixin, MakePlatformMixin, make_platform_action
from pools.admin.taint_rows import TaintsField, row_error
from portal.admin_base import pretty_json
from portal.keyvalue_widget import KeyValueField, KeyValueRows
from portal.widgets import at_line

STATUS_FIELDS = [
    "state_badge",
    "nodes_in_inventory",
    "provider_nodes",
    "last_answer",
    "last_answer_at",
    "attempts",
    "provider_id",
]
SHAPE_FIELDS = ["machine", "capacity", "hourly_cost"]
# The provider-specific settings (clusters.machinepools.provider_limits), as JSON.
PROVIDER_FIELDS = ("availability_zones", "subnets", "security_groups", "aws_tags", "requirements", "limits",
                   "disruption")  # fmt: skip
# Where a document path's error is shown on the form (the rest match a form field by name).
FORM_FIELD_OF = {"autoscaling": "autoscaling", "disk_size": "disk_size_gib", "labels": "labels", "taints": "taints"}


class MachinePoolForm(forms.ModelForm):
    labels = KeyValueField(
        widget=KeyValueRows(key_label="Label", value_label="Value", value_placeholder="e.g. gpu", plain_values=True)
    )
    taints = TaintsField()

    class Meta:
        model = MachinePool
        fields = ["name", "autoscaling", *MACHINE_POOL.form_fields()]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        known = sorted(instance_types.catalog().values(), key=lambda t: t.name)
        self.fields["instance_type"] = forms.ChoiceField(choices=[(t.name, t.describe()) for t in known])
        in_the_forms_words(self.fields["instance_type"], MACHINE_POOL.described("instance_type"))
        in_the_forms_words(self.fields["labels"], MACHINE_POOL.described("labels"))
        self.fields["taints"].help_text = (
            "One row per taint: pods need a matching toleration to land on the nodes (the platform made from "
            "this pool carries them). Effect: NoSchedule, PreferNoSchedule or NoExecute."
        )
        self.fields["autoscaling"].help_text = "Between min and max replicas; otherwise a fixed replicas count."

    @staticmethod
    def field_of(path: str, fields) -> str | None:
        """Where a refused save's error (the handler's provider checks) is shown."""
        return form_field(path, fields)

    def clean(self):
        """The document's own checks, shown on the field they are about (the handler's run on save)."""
        cleaned = super().clean()
        if self.errors:
            return cleaned
        try:
            MACHINE_POOL.parse(cleaned.get("name") or self.instance.name, document_of(MACHINE_POOL, cleaned))
        except ConfigError as error:
            field = form_field(error.field, self.fields)
            message = row_error(error, self.fields["taints"].widget) if field == "taints" else None
            self.add_error(field, message or (at_line(self, field, error.reason, error) if field else str(error)))
        return cleaned


def document_of(schema, cleaned: dict, base: dict | None = None) -> dict:
    """The form's values as a MACHINE_POOL document: replicas or autoscaling, as the checkbox says."""
    body = schema.body_from_form(cleaned, base)
    if cleaned.get("autoscaling"):
        body["replicas"] = None
    else:
        body["autoscaling"] = None
    return body


def form_field(path: str, fields) -> str | None:
    """The form field an error at a document path is about: `autoscaling.min_replicas` → min_replicas."""
    head, _, rest = path.partition(".")
    head = head.split("[")[0]
    if head == "autoscaling" and rest in fields:
        return rest
    name = FORM_FIELD_OF.get(head, head)
    return name if name in fields else None


@admin.register(MachinePool)
class MachinePoolAdmin(MakePlatformMixin, DeleteWithPlatformMixin, ConfigAdmin):
    config_type = ConfigType.MACHINE_POOL
    form = MachinePoolForm
    # What an operator compares at a glance fits 1440 px; the node counts (inventory, provider) are on the page
    list_display = ["name", "backend", "machine", "scaling", "capacity_type", "state_badge", "capacity",
                    "hourly_cost"]  # fmt: skip
    list_filter = ["backend", "state", "spot", "instance_type"]
    search_fields = ["name", "description", "instance_type"]
    list_select_related = ["backend"]
    list_before_template = "admin/clusters/machinepool_presets.html"
    actions = [make_platform_action]
    fieldsets = [
        (None, {"fields": ["name", "backend", "description", "history"]}),
        ("Machines", {"fields": ["instance_type", "spot", "max_price", "disk_size_gib"]}),
        ("Scaling", {"fields": ["autoscaling", "replicas", "min_replicas", "max_replicas"]}),
        ("Nodes", {"fields": ["labels", "taints"]}),
        (
            "Provider settings (ROSA: zones to tags; Karpenter: requirements to disruption)",
            {"fields": [*PROVIDER_FIELDS]},
        ),
        ("Status (inventory now, provider's last answer)", {"fields": [*STATUS_FIELDS, *SHAPE_FIELDS, "document"]}),
    ]

    def get_fieldsets(self, request, obj=None):
        if obj is None:  # the add form: no status yet, the presets instead
            fieldsets = [
                (None, {"fields": ["presets", "name", "backend", "description"]}),
                *self.fieldsets[1:5],
            ]
        else:
            fieldsets = self.fieldsets
        return self.with_change_description(request, obj, fieldsets)

    def get_readonly_fields(self, request, obj=None):
        return [*super().get_readonly_fields(request, obj), *STATUS_FIELDS, *SHAPE_FIELDS, "document", "presets"]

    def get_changeform_initial_data(self, request):
        """`?preset=gpu-spot-pool`: the form prefilled with that preset (clusters.machinepools.presets)."""
        preset = PRESETS.get(request.GET.get("preset", ""))
        if preset is None:
            return super().get_changeform_initial_data(request)
        body = preset.body
        scaling = body.get("autoscaling") or {}
        return {
            "name": preset.name,
            "description": body["description"],
            "instance_type": body["instance_type"],
            "autoscaling": bool(scaling),
            "min_replicas": scaling.get("min_replicas", 0),
            "max_replicas": scaling.get("max_replicas", 0),
            "replicas": body.get("replicas") or 0,
            "labels": dict(body["labels"]),
            "taints": [dict(taint) for taint in body["taints"]],
            "spot": body["spot"],
            "max_price": body["max_price"],
            "disk_size_gib": body["disk_size"],
        }

    def changelist_view(self, request, extra_context=None):
        return super().changelist_view(request, {**(extra_context or {}), "presets": list(PRESETS.values())})

    def get_changelist_instance(self, request):
        """The rows with their status laid on (clusters.machinepools.figures, as the API and the CLI compute it:
        one catalog read, one node count and one price-override read for the page, not one per row)."""
        changelist = super().get_changelist_instance(request)
        found = statuses(changelist.result_list)
        for pool in changelist.result_list:
            pool.figures = found[pool.pk]
        return changelist

    def get_object(self, request, object_id, from_field=None):
        pool = super().get_object(request, object_id, from_field)
        if pool is not None:
            pool.figures = statuses([pool])[pool.pk]
        return pool

    def config_body(self, form, formsets, change):
        return document_of(self.schema, form.cleaned_data, self._base(form, change))

    def _base(self, form, change):
        return store.show(self.config_type, form.instance.name) if change else None

    @display(description="Add from preset")
    def presets(self, obj):
        links = [
            format_html('<a class="underline" href="?preset={}">{}</a>', preset.slug, preset.title)
            for preset in PRESETS.values()
        ]
        return format_html(" · ".join(["{}"] * len(links)), *links)

    @display(description="State", label={"ready": "success", "failed": "danger", "retrying": "warning",
                                         "drifted": "warning", "pending": "info", "scaling": "info"})  # fmt: skip
    def state_badge(self, obj):
        return obj.state

    @display(description="Nodes now (inventory)")
    def nodes_in_inventory(self, obj):
        """The inventory's live count (the watcher's, within seconds of the cluster): what placement sees."""
        return str(figures_of(obj).inventory)

    @display(description="Nodes (provider, last reconcile)")
    def provider_nodes(self, obj):
        return obj.nodes_now

    @display(description="Instance type", ordering="instance_type")
    def machine(self, obj):
        return figures_of(obj).machine

    @display(description="Scaling")
    def scaling(self, obj):
        return figures_of(obj).scaling

    @display(description="Capacity type", label={"spot": "warning", "on-demand": "info"})
    def capacity_type(self, obj):
        return "spot" if obj.spot else "on-demand"

    @display(description="Capacity now / at max")
    def capacity(self, obj):
        return figures_of(obj).capacity_line

    @display(description="Hourly cost now / at max")
    def hourly_cost(self, obj):
        """On-demand, or for spot the spot price (an estimate said so, with its source) beside the on-demand
        price and the saving (clusters.machinepools.pricing, for the backend's region)."""
        return figures_of(obj).cost.line()

    @display(description="MACHINE_POOL document")
    def document(self, obj):
        return pretty_json(MACHINE_POOL.snapshot(obj)) if obj and obj.pk else "-"


def figures_of(pool: MachinePool) -> MachinePoolStatus:
    """The status laid on by the list or the change page; computed here for a row that came another way."""
    if not isinstance(getattr(pool, "figures", None), MachinePoolStatus):
        pool.figures = statuses([pool])[pool.pk]
    return pool.figures


PRICE_FIELDS = {"on_demand": "hourly_price", "spot": "spot_hourly_price", "as_of": "prices_as_of"}


class InstanceTypeForm(forms.ModelForm):
    name = forms.RegexField(
        regex=r"^[a-z0-9][a-z0-9-]*\.[a-z0-9-]+$",
        max_length=64,
        error_messages={"invalid": "Name must be an instance type such as g5.xlarge (family.size, lowercase)"},
    )

    class Meta:
        model = InstanceType
        fields = ["name", "vcpu", "memory_mib", "arch", "gpu_count", "gpu_model", "gpu_product", "gpu_memory_mib",
                  "hourly_price", "spot_hourly_price", "note", "prices_as_of"]  # fmt: skip

    def clean(self):
        cleaned = super().clean()
        gpus, model = cleaned.get("gpu_count") or 0, cleaned.get("gpu_model", "")
        if gpus and not model:
            self.add_error("gpu_model", "GPU model is required when the type has GPUs (e.g. T4, A10G, H100)")
        if model and not gpus:
            self.add_error("gpu_count", "GPU count must be at least 1 when a GPU model is given")
        for field in ("vcpu", "memory_mib"):
            if cleaned.get(field) == 0:
                self.add_error(field, f"{self.fields[field].label} must be at least 1")
        problems = pricing.price_problems(
            cleaned.get("hourly_price"), cleaned.get("spot_hourly_price"), cleaned.get("prices_as_of"), localdate()
        )
        for role, why in problems.items():
            field = PRICE_FIELDS[role]
            if field not in self.errors:
                self.add_error(field, f"{self.fields[field].label}: {why}")
        return cleaned


@admin.register(InstanceType)
class InstanceTypeAdmin(PolicyAdminMixin, ModelAdmin):
    """Types an admin adds, or corrects over the shipped catalog (the row wins). Rights: those of machine pools."""

    policy_resource = actions.config(ConfigType.MACHINE_POOL)
    form = InstanceTypeForm
    list_display = ["name", "vcpu", "memory_mib", "gpus", "arch", "hourly_price", "spot", "overrides", "note"]
    search_fields = ["name", "gpu_model", "note"]

    @display(description="GPUs")
    def gpus(self, obj):
        return f"{obj.gpu_count} × {obj.gpu_model}" if obj.gpu_count else "-"

    @display(description=f"Spot ({shipped_catalog.region()})")
    def spot(self, obj):
        """The spot price cost reads for this type (the row's, else the shipped table's, else an estimate)."""
        price = pricing.spot_price(obj.name, instance_types.from_row(obj))
        if price.hourly is None:
            return "-"
        return f"{'≈ ' if price.estimate else ''}${price.hourly} ({price.source})"

    @display(description="Overrides the shipped type", boolean=True)
    def overrides(self, obj):
        return obj.name in shipped_catalog.shipped()
