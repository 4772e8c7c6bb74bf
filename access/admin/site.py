"""The admin console asks `access.policy`, never Django's is_staff / is_superuser / model permissions.

- Entering `/admin/`: holders of a role that allows a config action (`osmo-admin`, or roles granted
  `config:Read` / `config:Update` on some `config/<type>`). Anyone else who is signed in is sent to the
  self-service home page `/`.
- Each ModelAdmin (`PolicyAdminMixin`): view = `config:Read` (or `config:Update`), add / change /
  delete = `config:Update`, on the admin's `policy_resource` (`config/pool`, `config/role`, …), or an
  object right on the row (a pool's owners edit that pool); its changelist is `policy.restrict`ed.
- Every refusal (a 403 from a ModelAdmin, a signed-in user turned away at the door) is audited.
- The login form accepts any active account (not only is_staff), so researchers sign in here too.

The project keeps Django's default admin site object (every `admin.register` uses it); the policy
behaviour is installed by giving that object this subclass, in `portal.apps.load_admin()` (before the admin
modules are imported: by the URLconf, or by the admin system checks).
"""

from __future__ import annotations

from functools import update_wrapper

from django.contrib import admin
from django.contrib.auth import REDIRECT_FIELD_NAME
from django.contrib.auth.forms import AuthenticationForm as PlainAuthenticationForm
from django.core.exceptions import PermissionDenied
from django.db.models import Model
from django.http import HttpResponseRedirect
from django.urls import reverse
from django.utils.html import format_html
from django.utils.http import url_has_allowed_host_and_scheme
from unfold.forms import AuthenticationForm
from unfold.sites import UnfoldAdminSite

from access import actions, policy
from access.services import audit
from portal.resources import PolicyResources

READ, UPDATE = actions.CONFIG_READ, actions.CONFIG_UPDATE


class PortalLoginForm(AuthenticationForm):
    """Unfold's login form without the is_staff requirement: access is decided by roles."""

    def confirm_login_allowed(self, user):
        PlainAuthenticationForm.confirm_login_allowed(self, user)


class PolicyAdminSite(UnfoldAdminSite):
    index_title = "Dashboard"  # the admin home (templates/admin/index.html), not "Site administration"

    def has_permission(self, request):
        return request.user.is_active and policy.admin_access(request).allowed

    def login(self, request, extra_context=None):
        """Signed in but not an admin: go to `?next=` when it is a safe page outside the admin, else home."""
        if request.method == "GET" and request.user.is_authenticated and not self.has_permission(request):
            audit.denied(
                request,
                policy.principal(request),
                actions.ADMIN_ACCESS,
                "",
                "admin",
                policy.admin_access(request).because,
            )
            target = request.GET.get(REDIRECT_FIELD_NAME, "")
            safe = url_has_allowed_host_and_scheme(target, {request.get_host()}, request.is_secure())
            return HttpResponseRedirect(target if safe and not target.startswith(reverse("admin:index")) else "/")
        return super().login(request, extra_context)

    def admin_view(self, view, cacheable=False):
        wrapped = super().admin_view(view, cacheable)

        def audited(request, *args, **kwargs):
            try:
                return wrapped(request, *args, **kwargs)
            except PermissionDenied:
                action, resource, because = getattr(
                    request,
                    "_access_last_denial",
                    (actions.ADMIN_VIEW, request.path, ["the admin page refused this request"]),
                )
                audit.denied(request, policy.principal(request), action, resource, "admin", because)
                raise

        return update_wrapper(audited, wrapped)


def install_policy_admin_site() -> None:
    site = admin.site
    if not isinstance(site, PolicyAdminSite):
        site.__class__ = PolicyAdminSite
    site.login_form = PortalLoginForm


class PolicyAdminMixin:
    """ModelAdmin / inline permissions from the policy. Set `policy_resource` (e.g. `config/pool`)."""

    policy_resource: str = ""

    def get_policy_resource(self, request, obj=None) -> str:
        return self.policy_resource

    def _may(self, request, action: str, obj=None, *, some_row: bool = False) -> bool:
        """Django asks booleans: decide here, and the site audits the page if it ends up refused. An object
        right on the row (`obj`), or with `some_row` on any row of the model (module and list pages),
        allows what no role does; never adding rows."""
        if obj is not None and not isinstance(obj, Model):  # Unfold's action buttons pass the object id
            obj, some_row = None, False
        resource = self.get_policy_resource(request, obj)
        decision = policy.decide(request, action, resource, obj=self.model if obj is None and some_row else obj)
        if not decision.allowed:  # remembered for the audit event if the page ends up refused
            request._access_last_denial = (action, resource, decision.because)
        return decision.allowed

    def get_queryset(self, request):
        """Rows of a model that declares its policy resources are the ones the policy lets one see."""
        queryset = super().get_queryset(request)
        if isinstance(getattr(self.model, "policy_resources", None), PolicyResources):
            return policy.restrict(queryset, request, (READ, UPDATE))
        return queryset

    def has_module_permission(self, request):
        return self._may(request, READ, some_row=True) or self._may(request, UPDATE, some_row=True)

    def has_view_permission(self, request, obj=None):
        return self._may(request, READ, obj, some_row=True) or self._may(request, UPDATE, obj, some_row=True)

    def has_add_permission(self, request, *args):
        parent = args[0] if args else None  # an inline is asked with the row it belongs to
        return self._may(request, UPDATE, parent)

    def has_change_permission(self, request, obj=None):
        return self._may(request, UPDATE, obj, some_row=True)

    def has_delete_permission(self, request, obj=None):
        return self._may(request, UPDATE, obj)

    def get_deleted_objects(self, objs, request):
        """Protected objects (workflow history, ...) block a delete whatever one's permissions: show the page
        that lists them, not Django's "you lack permission to delete workflows", which would mislead."""
        to_delete, model_count, perms_needed, protected = super().get_deleted_objects(objs, request)
        return to_delete, model_count, set() if protected else perms_needed, protected


def with_field(fieldsets, name: str, obj):
    """`fieldsets` with the read-only field `name` appended to the first one, on change pages only."""
    if obj is None:
        return fieldsets
    first = (fieldsets[0][0], {**fieldsets[0][1], "fields": [*fieldsets[0][1]["fields"], name]})
    return [first, *fieldsets[1:]]


class PoolAccessLinkMixin:
    """Adds a "who may use this pool" link (to the explain page) to the pool change page."""

    def get_readonly_fields(self, request, obj=None):
        return [*super().get_readonly_fields(request, obj), "who_may_use"]

    def get_fieldsets(self, request, obj=None):
        return with_field(super().get_fieldsets(request, obj), "who_may_use", obj)

    def who_may_use(self, obj):
        if obj is None or obj.pk is None:
            return "-"
        return format_html(
            '<a class="underline" href="{}?pool={}">Why can / can\'t a user use {}?</a>',
            reverse("admin:access_explain"),
            obj.name,
            obj.name,
        )

    who_may_use.short_description = "Access"
