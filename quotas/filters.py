"""The node pool list's filter as a django-filter FilterSet: `GET /api/quotas/node_pools` (DRF's filter
backend applies it) and `node-pool list NAME…` (the command applies it) narrow the same query."""

from __future__ import annotations

import django_filters
from django import forms

from quotas.models import NodePool


class RepeatedNamesField(forms.Field):
    """A repeated query parameter (`node_pools=a&node_pools=b`, read whole: a name may hold a comma) or a
    list; empty values dropped, so `node_pools=` alone names none and filters nothing."""

    widget = forms.MultipleHiddenInput  # reads every value of a repeated parameter

    def to_python(self, value):
        return [name for name in value or () if name]


class RepeatedNamesFilter(django_filters.Filter):
    field_class = RepeatedNamesField


class NodePoolFilter(django_filters.FilterSet):
    node_pools = RepeatedNamesFilter(field_name="name", lookup_expr="in")  # unknown names are left out

    class Meta:
        model = NodePool
        fields: list[str] = []
