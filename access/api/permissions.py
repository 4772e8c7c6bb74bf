"""DRF permission classes: every API decision is `access.policy.decide`.

- `PolicyPermission`: the view names what it needs with `policy_action` / `policy_resource` (strings,
  or methods `get_policy_action(request)` / `get_policy_resource(request)`). A view that names nothing
  needs `api:Call` on `api/<view name>`, which only roles allowing everything (`osmo-admin`) hold:
  a new endpoint is closed until it says what it needs.
- `ConfigPermission`: the config API (`config:Read` for GET/HEAD/OPTIONS, `config:Update` for writes,
  rollback included, on `config/<type>`; history without a type filter is `config/history`).

Refusals: anonymous → 401 (`not_authenticated`), otherwise 403 with the envelope
`{"code": "forbidden", "field": "resource", "value": <resource>, "reason": <who may not do what, why>}`;
every refusal is audited (`access.policy.require`).
"""

from __future__ import annotations

from rest_framework import exceptions
from rest_framework.permissions import SAFE_METHODS, BasePermission

from access import actions, policy
from portal.api import APIRefusal
from portal.errors import PermissionDenied


class PolicyPermission(BasePermission):
    def target(self, request, view) -> tuple[str, str]:
        if hasattr(view, "get_policy_action"):
            action = view.get_policy_action(request)
        else:
            action = getattr(view, "policy_action", None)
        if action is None:
            return actions.API_CALL, f"api/{type(view).__name__}"
        if hasattr(view, "get_policy_resource"):
            return action, view.get_policy_resource(request)
        return action, getattr(view, "policy_resource", "")

    def has_permission(self, request, view):
        action, resource = self.target(request, view)
        try:
            policy.require(request, action, resource)  # audits a refusal
        except PermissionDenied as refusal:
            if not request.user.is_authenticated:
                raise exceptions.NotAuthenticated() from None
            raise APIRefusal(refusal) from None
        return True


class ConfigPermission(PolicyPermission):
    def target(self, request, view):
        action = actions.CONFIG_READ if request.method in SAFE_METHODS else actions.CONFIG_UPDATE
        return action, actions.config(config_type_of(request, view))


def config_type_of(request, view) -> str:
    """The config type a request is about: in the path, the query (diff, history) or the body (rollback)."""
    value = (
        view.kwargs.get("config_type")
        or request.query_params.get("config_type")
        or request.query_params.get("config_types")
    )
    if not value and request.method not in SAFE_METHODS:
        data = request.data  # a malformed body is a 400 (ParseError) before any policy question
        value = data.get("config_type") if hasattr(data, "get") else None
    return str(value).lower() if value else "history"
