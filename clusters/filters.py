"""The machine pool list's filters as a django-filter FilterSet: `GET /api/machine_pools` (DRF's filter backend
applies it) and `machinepool list --backend B --state S` (the command applies it) narrow the same query.

A value that names nothing is refused, not answered with an empty list: an unknown backend (with the backends
there are) or state (with the states there are) is a 400 at the API and one error line at the CLI, naming the
field, the value and why.
"""

from __future__ import annotations

import django_filters
from django import forms

from clusters.models import Backend, MachinePool
from portal.errors import PortalError

STATES = MachinePool.State.values


class BackendNameField(forms.CharField):
    """A backend's name; one that no backend has is refused with the names there are (one query)."""

    def clean(self, value):
        name = super().clean(value)
        if name and not Backend.objects.filter(name=name).exists():
            known = ", ".join(Backend.objects.order_by("name").values_list("name", flat=True)[:50]) or "none"
            raise forms.ValidationError(f"no backend by this name (backends: {known})", code="invalid_choice")
        return name


class BackendFilter(django_filters.CharFilter):
    field_class = BackendNameField


class MachinePoolFilter(django_filters.FilterSet):
    backend = BackendFilter(field_name="backend__name", help_text="Only this backend's machine pools.")
    state = django_filters.ChoiceFilter(
        choices=MachinePool.State.choices,
        help_text=f"Only machine pools in this state: {', '.join(STATES)}.",
        error_messages={"invalid_choice": f"unknown state %(value)s; a state is one of {', '.join(STATES)}"},
    )

    class Meta:
        model = MachinePool
        fields: list[str] = []


def filter_machine_pools(rows, values: dict):
    """`rows` narrowed by `values` (`backend`, `state`; None: no filter), as the CLI applies the FilterSet; a
    refused value is a PortalError naming the field and the value."""
    given = {name: value for name, value in values.items() if name in MachinePoolFilter.base_filters and value}
    filters = MachinePoolFilter(given, queryset=rows)
    if not filters.is_valid():
        field, reasons = next(iter(filters.errors.items()))
        raise PortalError(reasons[0], field=field, value=given.get(field))
    return filters.qs
