"""Object rights in the admin: a page per object listing who holds each of its model's object rights
(a pool's owners), with grant and revoke (POST only, audited, `access.services.object_rights`).

Managing them needs `config:Update` on the admin's resource through a *role*: an object right never
grants itself (a pool owner cannot make more owners).
"""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html
from django.views.decorators.http import require_http_methods

from access import actions, policy
from access.admin.site import with_field
from access.services import object_rights
from configs.revisions import Actor
from portal.errors import DomainError


class ObjectRightsAdminMixin:
    """For a ModelAdmin (with PolicyAdminMixin) whose model has object rights held on the row itself."""

    def rights(self) -> list[policy.ObjectRight]:
        return [right for right in policy.object_rights_of(self.model) if not right.via]

    def _rights_url_name(self) -> str:
        return f"{self.model._meta.app_label}_{self.model._meta.model_name}_rights"

    def get_urls(self):
        view = self.admin_site.admin_view(require_http_methods(["GET", "POST"])(self.object_rights_view))
        return [path("<path:object_id>/rights/", view, name=self._rights_url_name()), *super().get_urls()]

    def get_readonly_fields(self, request, obj=None):
        return [*super().get_readonly_fields(request, obj), "object_rights_link"]

    def get_fieldsets(self, request, obj=None):
        return with_field(super().get_fieldsets(request, obj), "object_rights_link", obj)

    def object_rights_link(self, obj):
        if obj is None or obj.pk is None or not self.rights():
            return "-"
        labels = " / ".join(f"{right.label or right.codename}s" for right in self.rights())
        return format_html(
            '<a class="underline" href="{}">{} of {}</a>',
            reverse(f"admin:{self._rights_url_name()}", args=[obj.pk]),
            labels.capitalize(),
            obj,
        )

    object_rights_link.short_description = "Object rights"

    def may_manage_rights(self, request, obj) -> bool:
        resource = self.get_policy_resource(request, obj)
        decision = policy.decide(request, actions.CONFIG_UPDATE, resource)  # roles only, on purpose
        if not decision.allowed:
            request._access_last_denial = (actions.CONFIG_UPDATE, resource, decision.because)
        return decision.allowed

    def object_rights_view(self, request, object_id):
        obj = self.get_object(request, object_id)
        if obj is None:
            raise Http404(f"no {self.model._meta.verbose_name} {object_id}")
        if not self.may_manage_rights(request, obj):
            raise PermissionDenied
        rights = self.rights()
        if request.method == "POST":
            self._change_rights(request, obj, rights)
            return HttpResponseRedirect(request.path)
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "original": obj,
            "title": f"Object rights of {self.model._meta.verbose_name} {obj}",
            "rows": [(index, right, object_rights.holders(right, obj)) for index, right in enumerate(rights)],
        }
        return TemplateResponse(request, "admin/access/object_rights.html", context)

    def _change_rights(self, request, obj, rights) -> None:
        actor = Actor.for_request(request, "admin")
        try:
            index = int(request.POST.get("right", ""))
            right = rights[index]
        except (ValueError, IndexError):
            messages.error(request, f"no such object right: {request.POST.get('right', '')!r}")
            return
        try:
            if request.POST.get("revoke"):
                object_rights.revoke(right, obj, int(request.POST["revoke"]), actor)
                messages.success(request, f"Revoked: no longer {right.label or right.codename} of {obj}.")
            else:
                username = request.POST.get("username", "").strip()
                object_rights.grant(right, obj, username, actor)
                messages.success(request, f"{username} is now {right.label or right.codename} of {obj}.")
        except (DomainError, ValueError) as error:
            messages.error(request, f"Not changed: {error}")
