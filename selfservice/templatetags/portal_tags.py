"""Small template helpers of the self-service pages."""

from __future__ import annotations

from django import template
from django.utils import timezone

from access import policy
from selfservice.services.quota_panels import workflow_note
from selfservice.timeline import duration
from teams.quota_visibility import EVERYTHING, request_quota_view

register = template.Library()

_STATUS_TONES = {
    "COMPLETED": "ok",
    "RUNNING": "run",
    "WAITING": "wait",
    "PENDING": "wait",
    "QUEUED": "wait",  # waiting for quota admission (docs/quotas.md)
    "CANCELLED": "muted",
    "APPROVED": "ok",
    "DENIED": "bad",
    "WITHDRAWN": "muted",
    "ONLINE": "ok",
    "MAINTENANCE": "warn",
    "OFFLINE": "bad",
}


@register.simple_tag(takes_context=True)
def may_open_admin(context) -> bool:
    """Show the admin console link? Asked of access.policy (memoised per request: no extra query)."""
    request = context.get("request")
    return bool(request and request.user.is_authenticated and policy.admin_access(request).allowed)


@register.filter
def tone(status: str) -> str:
    """CSS tone of a status badge: FAILED_* are bad, the rest by name."""
    status = str(status or "")
    return "bad" if status.startswith("FAILED") else _STATUS_TONES.get(status, "muted")


@register.filter
def availability(percent_free: int) -> str:
    """Bar colour by how much is free: plenty (green), getting scarce (amber), nearly none (red)."""
    return "high" if percent_free <= 10 else ("mid" if percent_free <= 40 else "")


@register.filter
def quota_note(workflow, request=None):
    """Why a queued workflow waits or a preempted one was stopped (selfservice.services.quota_panels), as
    `request`'s viewer may read it: `workflow|quota_note:request`."""
    named = request is not None and workflow.status == "FAILED_PREEMPTED"  # only a preemption names others
    return workflow_note(workflow, request_quota_view(request) if named else EVERYTHING)


@register.filter
def took(start, end) -> str:
    """How long from `start` to `end`, as a person reads it (selfservice.timeline.duration)."""
    return duration(end - start) if start and end else ""


@register.filter
def elapsed(start) -> str:
    """How long since `start`, written as the page's ticking clock writes it (static/portal/workflow.js), so
    a refresh of the status part shows the same text until the clock's next tick."""
    return duration(timezone.now() - start) if start else ""
