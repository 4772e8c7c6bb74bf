"""The request queues in the admin console: read a request, then approve or deny it with a comment.

Two doors, one service (`selfservice.services.requests`):
- the "Decide…" button on a request's page opens a decision form (approve / deny, comment, and for a
  pool request the name of the pool to create);
- changelist actions "Approve selected…" / "Deny selected…" ask for one comment for all of them.
Who may see the queues is `config:Read` / `config:Update` on `config/request` (PolicyAdminMixin); who
may decide is checked again by the service (it also needs `config:Update` on what approval writes).
"""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.http import HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html
from unfold.admin import ModelAdmin
from unfold.decorators import action, display
from unfold.widgets import UnfoldAdminTextareaWidget

from access.admin.site import PolicyAdminMixin
from configs.revisions import Actor
from portal.errors import DomainError
from selfservice import usage_admin  # noqa: F401  (registers the usage page: Usage › Usage and cost)
from selfservice.forms import DecisionForm
from selfservice.models import AccessRequest, PoolRequest, RequestStatus
from selfservice.services import requests as service

STATUS_LABELS = {
    RequestStatus.PENDING: "warning",
    RequestStatus.APPROVED: "success",
    RequestStatus.DENIED: "danger",
    RequestStatus.WITHDRAWN: "info",
}


class BulkDecisionForm(forms.Form):
    comment = forms.CharField(
        widget=UnfoldAdminTextareaWidget(attrs={"rows": 3}),
        required=False,
        help_text="Shown to every requester. Required when denying.",
    )


class RequestAdmin(PolicyAdminMixin, ModelAdmin):
    policy_resource = "config/request"
    kind = "access"
    list_filter = ["status"]
    actions = ["approve_selected", "deny_selected"]
    actions_detail = ["decide_detail"]
    date_hierarchy = None
    list_per_page = 50

    # requests are made by researchers on /requests/ and decided here: nothing is edited in a form
    def has_add_permission(self, request, *args):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_decide_permission(self, request, object_id=None):
        return service.may_decide(request, self.kind).allowed

    def get_readonly_fields(self, request, obj=None):
        return [field.name for field in self.model._meta.fields]

    @display(description="Status", label=STATUS_LABELS, ordering="status")
    def status_badge(self, obj):
        return obj.status

    @display(description="Requester", ordering="requester__username")
    def requester_name(self, obj):
        return obj.requester.get_username()

    def get_urls(self):
        opts = self.model._meta
        view = self.admin_site.admin_view(self.decide_view)
        return [
            path("<int:object_id>/decide/", view, name=f"{opts.app_label}_{opts.model_name}_decide"),
            *super().get_urls(),
        ]

    @action(description="Decide…", url_path="decide-button", permissions=["decide"])
    def decide_detail(self, request, object_id):
        return HttpResponseRedirect(self._url("decide", object_id))

    def _url(self, name, *args):
        return reverse(f"admin:{self.model._meta.app_label}_{self.model._meta.model_name}_{name}", args=args)

    def decide_view(self, request, object_id: int):
        obj = get_object_or_404(self.get_queryset(request), pk=object_id)
        if not self.has_decide_permission(request, object_id):
            return self._refuse(request, object_id)
        is_pool = self.kind == "pool"
        initial = {"decision": "approve", **({"pool_name": obj.pool_name} if is_pool else {})}
        form = DecisionForm(request.POST or None, pool_request=is_pool, initial=initial)
        if request.method == "POST" and obj.is_pending and form.is_valid():
            try:
                self._decide(request, obj.pk, form.cleaned_data)
                return HttpResponseRedirect(self._url("changelist") + "?status__exact=PENDING")
            except DomainError as error:
                form.add_error(error.field if error.field in form.fields else None, str(error))
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "obj": obj,
            "form": form,
            "title": f"Decide: {obj}",
            "kind": self.kind,
            "change_url": self._url("change", obj.pk),
            "summary": self.summary(obj),
        }
        return TemplateResponse(request, "admin/selfservice/decide.html", context)

    def _refuse(self, request, object_id):
        self.message_user(request, "Your roles do not allow deciding these requests.", messages.ERROR)
        return HttpResponseRedirect(self._url("change", object_id))

    def _decide(self, request, pk: int, data: dict) -> None:
        actor = Actor.for_request(request, "admin")
        comment = data.get("comment", "")
        if data["decision"] == "deny":
            outcome = service.deny(self.kind, pk, request, comment, actor=actor)
            self.message_user(request, f"Denied: {outcome.request}.", messages.SUCCESS)
            return
        if self.kind == "pool":
            outcome = service.approve_pool(pk, request, comment, pool_name=data.get("pool_name", ""), actor=actor)
            done = f"pool {outcome.pool} created"
        else:
            outcome = service.approve_access(pk, request, comment, actor=actor)
            done = f"access to {outcome.pool}"
        created = " (created now)" if outcome.role_created else ""
        self.message_user(
            request,
            f"Approved: {done}; {outcome.request.requester.get_username()} now holds role {outcome.role}{created}.",
            messages.SUCCESS,
        )
        for warning in outcome.warnings or []:
            self.message_user(request, warning, messages.WARNING)

    # --- bulk actions with one comment ----------------------------------------------------------------

    @admin.action(description="Approve selected requests…", permissions=["decide"])
    def approve_selected(self, request, queryset):
        return self._bulk(request, queryset, "approve")

    @admin.action(description="Deny selected requests…", permissions=["decide"])
    def deny_selected(self, request, queryset):
        return self._bulk(request, queryset, "deny")

    def _bulk(self, request, queryset, decision: str):
        pending = list(queryset.filter(status=RequestStatus.PENDING))
        form = BulkDecisionForm(request.POST if "confirm" in request.POST else None)
        if form.is_bound and form.is_valid():
            comment = form.cleaned_data["comment"]
            if decision == "deny" and not comment.strip():
                form.add_error("comment", "Say why, for the requesters.")
            else:
                for obj in pending:
                    try:
                        self._decide(
                            request,
                            obj.pk,
                            {"decision": decision, "comment": comment, "pool_name": getattr(obj, "pool_name", "")},
                        )
                    except DomainError as error:
                        self.message_user(request, f"#{obj.pk} not decided: {error}", messages.ERROR)
                return None
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "form": form,
            "requests": pending,
            "decision": decision,
            "action": f"{decision}_selected",
            "title": f"{decision.capitalize()} {len(pending)} request(s)",
            "checkbox_name": ACTION_CHECKBOX_NAME,
            "skipped": queryset.count() - len(pending),
        }
        return TemplateResponse(request, "admin/selfservice/decide_bulk.html", context)


@admin.register(AccessRequest)
class AccessRequestAdmin(RequestAdmin):
    kind = "access"
    list_display = ["id", "requester_name", "pool", "status_badge", "created_at", "decided_by", "granted_role"]
    search_fields = ["requester__username", "pool__name", "justification"]
    list_select_related = ["requester", "pool", "decided_by"]
    fieldsets = [
        (None, {"fields": ["requester", "pool", "justification", "created_at"]}),
        ("Decision", {"fields": ["status", "decided_by", "decided_at", "comment", "granted_role"]}),
    ]

    def summary(self, obj):
        return format_html(
            "<b>{}</b> asks to submit to pool <b>{}</b>:<br>{}",
            obj.requester.get_username(),
            obj.pool.name,
            obj.justification,
        )


@admin.register(PoolRequest)
class PoolRequestAdmin(RequestAdmin):
    kind = "pool"
    list_display = ["id", "requester_name", "team", "hardware", "gpus", "status_badge", "created_at", "created_pool"]
    search_fields = ["requester__username", "team", "purpose", "pool_name"]
    list_select_related = ["requester", "decided_by"]
    fieldsets = [
        (None, {"fields": ["requester", "team", "hardware", "gpus", "purpose", "pool_name", "template", "created_at"]}),
        ("Decision", {"fields": ["status", "decided_by", "decided_at", "comment", "created_pool", "granted_role"]}),
    ]

    def summary(self, obj):
        return format_html(
            "<b>{}</b> asks for a pool for team <b>{}</b>: {} × {} GPUs, copied from {}.<br>{}",
            obj.requester.get_username(),
            obj.team,
            obj.hardware,
            obj.gpus,
            obj.template or "-",
            obj.purpose,
        )
