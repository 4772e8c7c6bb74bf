"""The workflow list's filters as a django-filter FilterSet (`workflows.queries.list_workflows` applies it
for the API and the CLI).

The FilterSet filters; it does not parse the query string. OSMO's parameter shapes (`users=a,b` or repeated,
OSMO's status names) and the `{code, field, value, reason}` answers stay with the API's serializer
(`workflows.api.serializers.ListQuerySerializer`); the FilterSet receives the validated values, lists
as lists (django-filter's CSV widget takes a list as it is).
"""

from __future__ import annotations

import django_filters
from django.db.models import Q, QuerySet

from portal.errors import PortalError
from workflows.models import Workflow


class NamesFilter(django_filters.BaseInFilter, django_filters.CharFilter):
    """Any of these values (an empty list: no filter)."""


class UpperNamesFilter(NamesFilter):
    """Any of these, in any case: statuses are stored upper-case (the CLI passes what the operator typed)."""

    def filter(self, qs, value):
        return super().filter(qs, [item.upper() for item in value] if value else value)


def selector(text: str) -> Q:
    """OSMO's label selector: `key=value` (the label has that value) or `key` (the workflow has the label)."""
    key, equals, value = text.partition("=")
    return Q(labels__contains={key: value}) if equals else Q(labels__has_key=key)


class LabelsFilter(NamesFilter):
    """Every selector holds (`label`), or none does (`no_label`, `exclude=True`)."""

    def filter(self, qs, value):
        for text in value or []:
            qs = qs.exclude(selector(text)) if self.exclude else qs.filter(selector(text))
        return qs


class NoneMatchFilter(NamesFilter):
    """A filter by something the portal does not record (OSMO's workflow tags and apps): no workflow has it,
    so asking for any value matches nothing, as on an OSMO service where none is set."""

    def filter(self, qs, value):
        return qs.none() if value else qs


class WorkflowFilter(django_filters.FilterSet):
    users = NamesFilter(field_name="submitted_by__username")
    pools = NamesFilter(field_name="pool__name")
    statuses = UpperNamesFilter(field_name="status")
    priority = NamesFilter(field_name="priority")
    name = django_filters.CharFilter(lookup_expr="icontains")
    submitted_after = django_filters.DateTimeFilter(field_name="created_at", lookup_expr="gte")
    submitted_before = django_filters.DateTimeFilter(field_name="created_at", lookup_expr="lt")
    label = LabelsFilter()
    no_label = LabelsFilter(exclude=True)
    tags = NoneMatchFilter()
    app = NoneMatchFilter()

    class Meta:
        model = Workflow
        fields: list[str] = []


def filter_workflows(rows: QuerySet[Workflow], values: dict) -> QuerySet[Workflow]:
    """`rows` narrowed by `values` (any of WorkflowFilter's names; others ignored). A value the FilterSet
    refuses (a caller that skipped the serializer, such as the CLI) is a PortalError naming the field."""
    filters = WorkflowFilter({n: values[n] for n in WorkflowFilter.base_filters if n in values}, queryset=rows)
    if not filters.is_valid():
        field, reasons = next(iter(filters.errors.items()))
        raise PortalError(reasons[0], field=field, value=values.get(field))
    return filters.qs
