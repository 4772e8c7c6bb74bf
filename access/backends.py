"""Django permission checks answered by `access.policy`, for code that asks `user.has_perm(...)`.

ModelAdmins of this project use `access.admin.site.PolicyAdminMixin`; this backend covers every other
place that asks Django for a model permission (an admin registered without the mixin, a third-party
view): `<app>.view_<model>` is `config:Read` on `config/<model>`, `add_`/`change_`/`delete_` (and any
other codename) are `config:Update`. It authenticates nobody.

Note: Django's `User.has_perm` answers True for active superusers before asking any backend; superusers
hold `osmo-admin` anyway (access.signals), and the admin pages themselves ignore the flag.
"""

from __future__ import annotations

from access import actions, policy


class PolicyPermissionBackend:
    def authenticate(self, request, **credentials):
        return None

    def get_user(self, user_id):
        return None

    def has_perm(self, user_obj, perm: str, obj=None) -> bool:
        if not user_obj.is_active or "." not in perm:
            return False
        codename = perm.split(".", 1)[1]
        verb, _, model = codename.partition("_")
        action = actions.CONFIG_READ if verb == "view" else actions.CONFIG_UPDATE
        return policy.decide(_principal(user_obj), action, actions.config(model)).allowed

    def has_module_perms(self, user_obj, app_label: str) -> bool:
        return user_obj.is_active and policy.admin_access(_principal(user_obj)).allowed


def _principal(user) -> policy.Principal:
    """One principal per user object: a request's `request.user` is loaded per request, so this is the
    per-request cache for code that only has the user."""
    cached = user.__dict__.get("_access_principal")
    if cached is None:
        cached = user.__dict__["_access_principal"] = policy.Principal(user)
    return cached
