"""Forms of the self-service pages and of the admin decision page. Parsing only: services decide."""

from __future__ import annotations

from django import forms
from unfold.widgets import UnfoldAdminRadioSelectWidget, UnfoldAdminTextareaWidget, UnfoldAdminTextInputWidget

from portal.widgets import CodeBoundField, CodeEditor
from selfservice.services.requests import hardware_choices
from workflows.models import WorkflowStatus


class SpecForm(forms.Form):
    spec = forms.CharField(
        widget=CodeEditor("yaml", attrs={"class": "mono", "rows": 26, "id": "spec-editor"}),
        label="Workflow spec (YAML)",
        strip=False,
        bound_field_class=CodeBoundField,
    )
    priority = forms.ChoiceField(choices=[("NORMAL", "normal"), ("HIGH", "high"), ("LOW", "low")], initial="NORMAL")
    project = forms.CharField(
        required=False,
        max_length=128,
        strip=True,
        help_text=("The project to charge; leave empty for your only project (docs/teams.md)."),
    )


class AccessRequestForm(forms.Form):
    pool = forms.ChoiceField(help_text="Pools you may not use yet.")
    justification = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}),
        max_length=2000,
        help_text="What you will run there, and for which project.",
    )

    def __init__(self, *args, pools: list[str] = (), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["pool"].choices = [(name, name) for name in pools]


class PoolRequestForm(forms.Form):
    team = forms.RegexField(
        regex=r"^[a-z][a-z0-9-]{0,30}[a-z0-9]$",
        max_length=32,
        help_text="Lowercase letters, digits and '-'. The pool is named after it, e.g. "
        "vision-h100, and your team's role osmo-<team> will allow it.",
        error_messages={"invalid": "2-32 lowercase letters, digits and '-', starting with a letter"},
    )
    hardware = forms.ChoiceField(help_text="The GPU kinds the portal knows, each copied from an existing platform.")
    gpus = forms.IntegerField(
        min_value=0,
        max_value=100_000,
        label="Size (GPUs)",
        initial=8,
        help_text="How many GPUs the team needs at most (0 for CPU only).",
    )
    purpose = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), max_length=2000)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["hardware"].choices = [(c.key, c.label) for c in hardware_choices()]


class DecisionForm(forms.Form):
    """The admin's decision on one request (Unfold widgets: it is rendered in the admin console)."""

    decision = forms.ChoiceField(
        choices=[("approve", "Approve"), ("deny", "Deny")], widget=UnfoldAdminRadioSelectWidget
    )
    comment = forms.CharField(
        widget=UnfoldAdminTextareaWidget(attrs={"rows": 3}),
        required=False,
        max_length=2000,
        help_text="Shown to the requester. Required when denying.",
    )
    pool_name = forms.CharField(
        required=False,
        max_length=128,
        widget=UnfoldAdminTextInputWidget,
        help_text="Name of the pool to create (pool requests only).",
    )

    def __init__(self, *args, pool_request: bool = False, **kwargs):
        super().__init__(*args, **kwargs)
        if not pool_request:
            del self.fields["pool_name"]

    def clean(self):
        cleaned = super().clean()
        if cleaned.get("decision") == "deny" and not (cleaned.get("comment") or "").strip():
            self.add_error("comment", "Say why, for the requester.")
        return cleaned


class NotificationsForm(forms.Form):
    """The profile page's notification settings. The webhook is write-only: never rendered back, left empty it
    stays as it is (portal.webhooks)."""

    email_notification = forms.BooleanField(required=False, label="Email me when my workflows end or wait long")
    slack_notification = forms.BooleanField(required=False, label="Post to Slack when my workflows end or wait long")
    slack_webhook = forms.CharField(
        required=False,
        strip=True,
        max_length=2000,
        label="My Slack incoming-webhook URL",
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "off"}),
    )
    clear_slack_webhook = forms.BooleanField(required=False, label="Remove my webhook (use my project's)")

    def changes(self) -> dict:
        """The profile fields to write (pools.services.profiles.update's shape)."""
        data = self.cleaned_data
        changes = {key: data[key] for key in ("email_notification", "slack_notification")}
        if data["clear_slack_webhook"]:
            changes["slack_webhook"] = ""
        elif data["slack_webhook"]:
            changes["slack_webhook"] = data["slack_webhook"]
        return changes


class CredentialForm(forms.Form):
    """The profile page's new credential: what `osmo credential set NAME --type T --payload k=v …` sends.
    Parsing only: access.services.credentials checks the name, keys and values."""

    name = forms.CharField(max_length=63, strip=True, help_text="Letters, digits, - and _; starts with a letter.")
    cred_type = forms.ChoiceField(
        label="Type", choices=[("GENERIC", "GENERIC"), ("REGISTRY", "REGISTRY"), ("DATA", "DATA")], initial="GENERIC"
    )
    payload = forms.CharField(
        label="Keys and values",
        strip=False,
        max_length=300_000,
        widget=forms.Textarea(attrs={"rows": 4, "autocomplete": "off", "class": "mono"}),
        help_text=(
            "One key=value per line. REGISTRY: registry=nvcr.io, username=…, auth=… (required). "
            "DATA: endpoint=…, access_key_id=…, access_key=…, region=…. GENERIC: any keys."
        ),
    )

    def clean_payload(self) -> dict[str, str]:
        values = {}
        for number, line in enumerate(self.cleaned_data["payload"].splitlines(), start=1):
            if not line.strip():
                continue
            key, equals, value = line.partition("=")
            if not equals or not key.strip() or not value:
                raise forms.ValidationError(f"line {number}: write key=value, with a key and a value")
            values[key.strip()] = value.rstrip("\r")
        if not values:
            raise forms.ValidationError("give at least one key=value")
        return values

    def body(self) -> dict:
        """OSMO's request body (credential.py _run_set_command)."""
        kind, payload = self.cleaned_data["cred_type"], self.cleaned_data["payload"]
        if kind == "GENERIC":
            payload = {"credential": payload}
        return {f"{kind.lower()}_credential": payload}


class WorkflowFilterForm(forms.Form):
    """My workflows' filters (a GET form): every field optional and bounded (docs/limits.md)."""

    status = forms.ChoiceField(required=False, choices=[("", "any status"), *WorkflowStatus.choices])
    pool = forms.CharField(required=False, max_length=128)
    q = forms.CharField(required=False, max_length=80, label="Search")
    after = forms.CharField(required=False, max_length=40)
