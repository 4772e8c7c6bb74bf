"""The admin home's "Queues" panel (Unfold's DASHBOARD_CALLBACK, portal/settings.py; templates/admin/index.html):
node pools whose queue is growing (quotas.services.queues), each linked to its fair-share page. Shown to
those who may view node pools (config:Read on config/node_pool)."""

from __future__ import annotations

from django.contrib import admin

from quotas.models import NodePool
from quotas.services.queues import queues


def dashboard(request, context: dict) -> dict:
    model_admin = admin.site._registry.get(NodePool)
    if model_admin is None or not model_admin.has_view_permission(request):
        return context
    found = queues()
    return {
        **context,
        "queues_shown": True,
        "queues_growing": [q for q in found if q.growing],
        "queues_steady": [q for q in found if not q.growing],
    }
