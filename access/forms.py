"""Forms of the self-service pages."""

from __future__ import annotations

from django import forms

from access.services import tokens


class TokenForm(forms.Form):
    name = forms.RegexField(
        regex=tokens.NAME_RE, max_length=128, error_messages={"invalid": "1-128 letters, digits, '_', '.', '-'"}
    )
    expires_at = forms.DateField(
        required=False,
        widget=forms.DateInput(attrs={"type": "date"}),
        help_text=f"Default and maximum: {tokens.max_lifetime().days} days from now.",
    )
    roles = forms.MultipleChoiceField(
        required=False, widget=forms.CheckboxSelectMultiple, help_text="None ticked: all of your roles."
    )

    def __init__(self, *args, role_names: list[str], **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["roles"].choices = [(name, name) for name in role_names]
