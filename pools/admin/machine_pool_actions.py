"""The machine pools' admin action "Make a platform from this machine pool" (pools.admin.machine_pools).

The action writes through `pools.services.machine_pool_platforms.make_platform`, so history holds the
template and the pool; the platform goes in the backend's only pool (with several, `machinepool
platform NAME --pool POOL` chooses).
"""

from __future__ import annotations

from django.contrib import admin, messages

from access import actions, policy
from configs.revisions import Actor
from pools.services.machine_pool_platforms import make_platform
from portal.errors import PortalError


@admin.action(description="Make a platform from this machine pool")
def make_platform_action(model_admin, request, queryset) -> None:
    for config_type in ("POD_TEMPLATE", "POOL"):
        policy.require(request, actions.CONFIG_UPDATE, actions.config(config_type))
    actor = Actor.for_request(request, "admin")
    for machine_pool in queryset.order_by("name"):
        try:
            made = make_platform(machine_pool.name, actor)
        except PortalError as error:
            model_admin.message_user(request, f"{machine_pool.name}: {error}", messages.ERROR)
            continue
        model_admin.message_user(request, f"{made.said().capitalize()}.", messages.SUCCESS)
