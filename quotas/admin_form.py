"""The node pool's add and change form (quotas.admin): the selector as rows (what it selects by, then the label's
key and value or the OSMO platform), the over-quota switch, time-based fair share, the admission and reclaim
periods, and a preview of the nodes the selector as typed would take from the live inventory
(quotas.services.selector_preview), with the node pool each comes from.

The form's values become a NODE_POOL document, checked by the type's own parse in `clean` so an error is shown
at the field it is about (`field_of`); the admin saves it through `configs.store.apply` (one revision), which
runs the handler's database checks (unknown platform, a selector another node pool already holds), shown at
their field too. The "Preview the nodes" button posts the form and saves nothing: the form runs the save's own
selector checks (so what the save would refuse is refused at its field) and, to keep the admin from saving, holds
a non-field error (`PREVIEW_ONLY`) that the admin takes off before it renders the page (quotas.admin
.NodePoolAdmin.render_change_form): a preview that works shows no error, one that does not shows its own.
"""

from __future__ import annotations

from django import forms
from django.core.exceptions import NON_FIELD_ERRORS
from django.utils.html import format_html, format_html_join
from unfold.widgets import UnfoldAdminSelectWidget, UnfoldBooleanSwitchWidget

from configs.errors import ConfigError
from pools.models import Platform
from portal.widget_classes import SECONDARY_BUTTON
from quotas.config_types import NODE_POOL
from quotas.models import NodePool, SelectorKind, default_name
from quotas.services import selector_preview, writer

PREVIEW_BUTTON = "_preview_nodes"
PREVIEW_ONLY = "previewed, not saved"  # the error that keeps a valid form from being saved; never shown
FAIR_SHARE = ("fair_share_window_days", "fair_share_half_life_hours", "fair_share_k")
FAIR_SHARE_DEFAULTS = {"fair_share_window_days": 7, "fair_share_k": 1}
# where an error at a document path is shown (the rest match a form field by name)
FIELD_OF = {
    "selector.label.key": "label_key",
    "selector.label.value": "label_value",
    "selector.label": "label_key",
    "selector.platform.pool": "platform",
    "selector.platform.platform": "platform",
    "selector.platform": "platform",
    "selector": "selector_kind",
    "time_based_fair_share.window_days": "fair_share_window_days",
    "time_based_fair_share.half_life_hours": "fair_share_half_life_hours",
    "time_based_fair_share.k": "fair_share_k",
    "time_based_fair_share": "time_based",
}


def field_of(path: str, fields) -> str | None:
    """The form field a NODE_POOL error path is about (`selector.label.key` → label_key); None: the form's."""
    name = FIELD_OF.get(path) or path.split(".")[0].split("[")[0]
    return name if name in fields else None


class NodesPreview(forms.Widget):
    """Not an input: the nodes the selector would take (set by the form as `preview`, or a `note` saying why
    there is none), and the button that posts the form to see them again."""

    class Media:
        css = {"all": ("portal/admin-forms.css",)}  # the portal's buttons and the preview's tables

    def __init__(self, attrs=None) -> None:
        super().__init__(attrs)
        self.preview: selector_preview.SelectorPreview | None = None
        self.previewed = False  # the preview button's answer (else: the saved selector's nodes, or none)
        self.note = "Choose a backend and a selector, then preview the nodes."

    def value_from_datadict(self, data, files, name):
        return None

    def render(self, name, value, attrs=None, renderer=None):
        button = format_html(
            '<button type="submit" name="{}" value="1" class="{}" id="preview-nodes">Preview the nodes '
            "(saves nothing)</button>",
            PREVIEW_BUTTON,
            SECONDARY_BUTTON,
        )
        return format_html('<div class="np-preview" id="nodes-preview">{}{}</div>', self._body(), button)

    def _body(self) -> str:
        found = self.preview
        if found is None:
            return format_html("<p>{}</p>", self.note)
        summary = format_html(
            "<p><b>{} of {} nodes</b> of backend {} ({} GPUs) would be in this node pool.{}</p>",
            len(found.taken),
            found.total,
            found.backend,
            found.gpus,
            " Previewed as typed: nothing was saved." if self.previewed else "",
        )
        return format_html(
            "{}{}{}{}",
            summary,
            _table(
                "Taken, with the node pool each is in now",
                "np-taken",
                [(n.name, n.gpus, n.now_in or "none yet") for n in found.taken],
            ),
            _table(
                "Matching, but held by another node pool: the save is refused (each node is in one node pool)",
                "np-held",
                [(n.name, n.gpus, n.now_in) for n in found.held],
            ),
            _table(
                "Matching, but another node pool claims them first (label node pools before platform ones, by name)",
                "np-kept",
                [(n.name, n.gpus, who) for n, who in found.kept],
            ),
        )


def _table(caption: str, css_id: str, rows: list[tuple]) -> str:
    if not rows:
        return ""
    more = len(rows) - selector_preview.SHOWN
    body = format_html_join("", "<tr><td>{}</td><td>{}</td><td>{}</td></tr>", rows[: selector_preview.SHOWN])
    tail = format_html("<p>and {} more</p>", more) if more > 0 else ""
    return format_html(
        '<div class="np-table"><table id="{}"><caption>{}</caption><tr><th scope="col">Node</th>'
        '<th scope="col">GPUs</th><th scope="col">In node pool now</th></tr>{}</table>{}</div>',
        css_id,
        caption,
        body,
        tail,
    )


class NodePoolForm(forms.ModelForm):
    platform = forms.ChoiceField(
        required=False,
        widget=UnfoldAdminSelectWidget,
        label="Platform",
        help_text="The OSMO platform whose member nodes this node pool holds (pool / platform, on this backend).",
    )
    time_based = forms.BooleanField(
        required=False,
        widget=UnfoldBooleanSwitchWidget,
        label="Time-based fair share",
        help_text="Past usage moves the over-quota split (KAI-Scheduler's time-based fair share); off: only "
        "deserved, weight and priority do. Empty settings below take their defaults (7 days, no decay, k 1).",
    )
    nodes_preview = forms.Field(required=False, label="Nodes it takes", widget=NodesPreview)

    class Meta:
        model = NodePool
        fields = ["name", "selector_kind", "label_key", "label_value", *NODE_POOL.form_fields()]
        labels = {"selector_kind": "Selects nodes by", "label_key": "Label key", "label_value": "Label value"}
        help_texts = {
            "selector_kind": "A node label (key = value), an OSMO platform's member nodes, or (the backend's "
            "Default node pool only) every node no other node pool claims.",
            "label_key": "e.g. nvidia.com/gpu.product (at most 317 characters)",
            "label_value": "e.g. NVIDIA-A100-SXM4-80GB (at most 63 characters; empty matches an empty value)",
        }

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        platforms = Platform.objects.select_related("pool__backend").order_by("pool__name", "name")
        self.fields["platform"].choices = [("", "—")] + [
            (f"{p.pool.name}/{p.name}", f"{p.pool.name} / {p.name} (backend {p.pool.backend.name})") for p in platforms
        ]
        for name in ("label_key", "label_value"):
            if name in self.fields:
                self.fields[name].required = False
        if "selector_kind" in self.fields:
            self.fields["selector_kind"].error_messages["invalid_choice"] = (
                "Selects nodes by must be one of default, label, platform, not “%(value)s”"
            )
        instance = self.instance
        if instance.pk:
            if instance.selector_kind == SelectorKind.PLATFORM:
                self.initial["platform"] = f"{instance.pool_name}/{instance.platform_name}"
            self.initial["time_based"] = instance.fair_share_window_days is not None
            self._preview(instance.backend_id, instance.backend.name, instance.name, _selector_of_row(instance))

    def clean(self):
        cleaned = super().clean()
        if not cleaned.get("time_based"):
            cleaned.update(dict.fromkeys(FAIR_SHARE))
        else:
            for name, default in FAIR_SHARE_DEFAULTS.items():
                if cleaned.get(name) is None and name not in self.errors:
                    cleaned[name] = default
        if self.errors:
            return cleaned
        name = cleaned.get("name") or self.instance.name
        try:
            doc = NODE_POOL.parse(name, {**NODE_POOL.body_from_form(cleaned), "selector": self.selector_body()})
        except ConfigError as error:
            field = field_of(error.field, self.fields)
            self.add_error(field, f"{self.fields[field].label} {error.reason}" if field else str(error))
            return cleaned
        backend = cleaned["backend"]
        if doc.selector["kind"] == SelectorKind.DEFAULT and name != default_name(backend.name):
            self.add_error(  # the handler's refusal, said before the model's one-Default constraint would
                "selector_kind",
                f"only the Default node pool ({default_name(backend.name)}) selects no nodes; choose a node label "
                "or an OSMO platform",
            )
            return cleaned
        self._preview(backend.pk, backend.name, name, doc.selector)
        if PREVIEW_BUTTON in self.data:  # the preview button: show the form again, write nothing
            self.fields["nodes_preview"].widget.previewed = True
            try:  # what the save would refuse (a portal label, nodes another node pool holds), at its field now
                writer.check_selector(doc, self.instance if self.instance.pk else None, writer.References.load([doc]))
            except ConfigError as error:  # worded as the save's refusal is (portal.admin_base.ServiceBackedAdmin)
                field = field_of(error.field, self.fields)
                self.add_error(field, error.reason if field else str(error))
            self.add_error(None, PREVIEW_ONLY)
        return cleaned

    def drop_preview_guard(self) -> None:
        """Take off `PREVIEW_ONLY` once the admin has not saved: the page shows the errors there are, if any."""
        kept = [message for message in self.errors.get(NON_FIELD_ERRORS, ()) if message != PREVIEW_ONLY]
        if kept:
            self.errors[NON_FIELD_ERRORS] = self.error_class(kept, error_class="nonfield", renderer=self.renderer)
        else:
            self.errors.pop(NON_FIELD_ERRORS, None)

    def selector_body(self) -> dict:
        """The form's selector rows as the document's `selector`."""
        cleaned = self.cleaned_data
        kind = cleaned.get("selector_kind") or self.instance.selector_kind
        if kind == SelectorKind.LABEL:
            return {"label": {"key": cleaned.get("label_key", ""), "value": cleaned.get("label_value", "")}}
        if kind == SelectorKind.PLATFORM:
            pool, _, platform = (cleaned.get("platform") or "").partition("/")
            return {"platform": {"pool": pool, "platform": platform}}
        return {}

    def _preview(self, backend_id, backend_name: str, name: str, selector: dict) -> None:
        if "nodes_preview" in self.fields:
            widget = self.fields["nodes_preview"].widget
            widget.preview = selector_preview.preview(backend_id, backend_name, name, selector)


def _selector_of_row(node_pool: NodePool) -> dict:
    return {
        "kind": node_pool.selector_kind,
        "key": node_pool.label_key,
        "value": node_pool.label_value,
        "pool": node_pool.pool_name,
        "platform": node_pool.platform_name,
    }
