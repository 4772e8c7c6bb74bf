"""The machine pools' admin action "Make a platform from this machine pool" (pools.admin.machine_pools: the
list's bulk action and the page's "Make a platform" button, which asks first), each message linking to the
platform made (or, refused, to the pool's platform that already serves the machine pool), and deleting a machine
pool with what was made for it.

The action writes through `pools.services.machine_pool_platforms.make_platform`, so history holds the
template and the pool; the platform goes in the backend's only pool (with several, `machinepool
platform NAME --pool POOL` chooses). Deletes go through `pools.services.machine_pool_removal`.
"""

from __future__ import annotations

from django.contrib import admin, messages
from django.http import HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.utils.html import format_html
from unfold.decorators import action

from access import actions, policy
from clusters.models import MachinePool
from configs.revisions import Actor
from pools.models import Platform, PodTemplate
from pools.services.machine_pool_platforms import AlreadyServed, MadePlatform, make_platform
from pools.services.machine_pool_removal import delete_machine_pool, plan
from portal.admin_base import confirmation_page
from portal.errors import PortalError


@admin.action(description="Make a platform from this machine pool")
def make_platform_action(model_admin, request, queryset) -> None:
    _policy_for_platform(request)
    actor = Actor.for_request(request, "admin")
    for machine_pool in queryset.order_by("name"):
        _make_one(model_admin, request, machine_pool.name, actor)


def _policy_for_platform(request) -> None:
    """Making a platform writes a pod template and a pool: the admin's rights must cover both."""
    for config_type in ("POD_TEMPLATE", "POOL"):
        policy.require(request, actions.CONFIG_UPDATE, actions.config(config_type))


def _make_one(model_admin, request, name: str, actor: Actor) -> None:
    try:
        made = make_platform(name, actor)
    except AlreadyServed as served:  # the platform to use instead, a link
        model_admin.message_user(request, served_message(name, served), messages.WARNING)
        return
    except PortalError as error:
        model_admin.message_user(request, f"{name}: {error}", messages.ERROR)
        return
    model_admin.message_user(request, made_message(made), messages.SUCCESS)


def made_message(made: MadePlatform):
    """`Platform rosa/gpu created from machine pool gpu (…).` with the platform's name a link to its page."""
    said = made.said()
    platform = f"{made.pool}/{made.platform}"
    pk = Platform.objects.filter(pool__name=made.pool, name=made.platform).values_list("pk", flat=True).first()
    if pk is None:  # pragma: no cover - make_platform has just written it
        return f"{said[0].upper()}{said[1:]}."
    before, _, after = said.partition(platform)
    url = reverse("admin:pools_platform_change", args=[pk])
    return format_html('{}<a class="underline" href="{}">{}</a>{}.', before.capitalize(), url, platform, after)


def served_message(name: str, served: AlreadyServed):
    """`additional: platform robotics-spot/batch already serves machine pool additional (…); no second platform
    made.` with the platform a link to its page."""
    pk = Platform.objects.filter(pool__name=served.pool, name=served.platform).values_list("pk", flat=True).get()
    return format_html(
        '{}: platform <a class="underline" href="{}">{}/{}</a> already serves machine pool {} (pod template {}); '
        "no second platform made.",
        name,
        reverse("admin:pools_platform_change", args=[pk]),
        served.pool,
        served.platform,
        served.machine_pool,
        served.template,
    )


class MakePlatformMixin:
    """The machine pool page's "Make a platform" button: a confirmation page, then the same service as the list's
    bulk action (`pools.services.machine_pool_platforms.make_platform`)."""

    actions_detail = ["make_platform_detail"]

    @action(description="Make a platform", url_path="make-platform", permissions=["change"], icon="add_box")
    def make_platform_detail(self, request, object_id):
        machine_pool = get_object_or_404(MachinePool, pk=object_id)
        change_url = reverse("admin:clusters_machinepool_change", args=[object_id])
        if request.method != "POST":
            return confirmation_page(
                self,
                request,
                heading=f"Make a platform from machine pool {machine_pool.name}?",
                explanation=f"This writes a pod template that steers pods onto {machine_pool.name}'s nodes (its "
                "labels and taints) and a platform using it in the backend's pool, or brings them up to date; "
                "each is a revision in the history.",
                confirm_label="Make the platform",
                cancel_url=change_url,
            )
        _policy_for_platform(request)
        _make_one(self, request, machine_pool.name, Actor.for_request(request, "admin"))
        return HttpResponseRedirect(change_url)


class DeleteWithPlatformMixin:
    """Deleting a machine pool (the delete page, the bulk action) removes the platform and pod template made for
    it (`pools.services.machine_pool_removal`): the confirmation page lists them, and a machine pool whose
    platform unfinished workflows use is refused, naming them."""

    def get_deleted_objects(self, objs, request):
        to_delete, model_count, perms_needed, protected = super().get_deleted_objects(objs, request)
        removals = plan([obj.name for obj in objs])
        platforms = templates = 0
        for removal in removals.values():
            to_delete.extend(line[0].upper() + line[1:] for line in removal.removed())
            platforms, templates = platforms + len(removal.platforms), templates + bool(removal.template)
            for (pool, platform), ids in sorted(removal.busy.items()):
                where = f"unfinished, on platform {pool}/{platform} made from machine pool {removal.machine_pool}"
                protected.extend(f"Workflow: {workflow_id} ({where})" for workflow_id in ids)
            for kept in removal.kept if not request.POST.get("post") else ():  # the confirmation page says it
                self.message_user(request, f"{removal.machine_pool}: kept {kept}.", messages.INFO)
        if platforms:
            model_count[Platform._meta.verbose_name_plural] = platforms
        if templates:
            model_count[PodTemplate._meta.verbose_name_plural] = templates
        return to_delete, model_count, set() if protected else perms_needed, protected

    def delete_view(self, request, object_id, extra_context=None):
        obj = self.get_object(request, object_id)
        refusal = plan([obj.name])[obj.name].refusal if obj is not None else ""
        if refusal:  # refused before the page: nothing to confirm
            self.message_user(request, f"Machine pool {obj.name} {refusal}.", messages.ERROR)
            return HttpResponseRedirect(reverse("admin:clusters_machinepool_change", args=[obj.pk]))
        return super().delete_view(request, object_id, extra_context)

    def delete_model(self, request, obj):
        self._policy_for_platforms(request)
        deleted = delete_machine_pool(obj.name, Actor.for_request(request, "admin"))
        said = deleted.said()
        self.message_user(request, f"{said[0].upper()}{said[1:]}.", messages.SUCCESS)  # keeps "POOL" as it is

    def delete_queryset(self, request, queryset):
        self._policy_for_platforms(request)
        for obj in queryset.order_by("name"):
            try:
                self.delete_model(request, obj)
            except PortalError as error:  # refused since the confirmation page (a workflow started)
                self.message_user(request, f"{obj.name}: not deleted: {error}", messages.ERROR)

    def _policy_for_platforms(self, request) -> None:
        """Removing what was made for it writes pools and pod templates: the admin's rights must cover them."""
        _policy_for_platform(request)
