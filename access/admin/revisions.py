"""History per object: list revisions, read a snapshot, diff any two, roll back."""

from __future__ import annotations

from django.contrib import admin, messages
from django.http import HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe
from unfold.admin import ModelAdmin
from unfold.decorators import action, display

from access import actions, policy
from access.admin.site import PolicyAdminMixin
from configs import revisions, store
from configs.models import ConfigType, Revision
from configs.revisions import Actor
from portal.admin_base import ReadOnlyAdminMixin, confirmation_page, pretty_json
from portal.diffview import diff_view
from portal.errors import DomainError

DELETED_STYLE = "background:#fee2e2;color:#991b1b;border-radius:.25rem;padding:0 .4rem;font-size:.75rem;font-weight:600"


@admin.register(Revision)
class RevisionAdmin(ReadOnlyAdminMixin, PolicyAdminMixin, ModelAdmin):
    """Read-only. Visible per config type: revisions of types the user may read (config:Read on
    config/<type>); rolling back needs config:Update on the revision's type."""

    list_display = ["config_type", "name", "revision", "author_name", "created_at", "description", "deleted_mark"]
    list_filter = ["config_type", "deleted"]
    search_fields = ["name", "description", "author_name"]
    date_hierarchy = "created_at"
    fields = [
        "config_type",
        "name",
        "revision",
        "author_name",
        "created_at",
        "description",
        "tags",
        "deleted_mark",
        "changes",
        "data",
    ]
    readonly_fields = [*fields, "deleted_with"]
    actions_detail = ["roll_back_to_this"]

    def get_fields(self, request, obj=None):
        """A deletion that took others along (a machine pool's platform and pod template) lists them."""
        fields = list(super().get_fields(request, obj))
        if obj is not None and self._along(obj):
            fields.insert(fields.index("deleted_mark") + 1, "deleted_with")
        return fields

    @staticmethod
    def _along(obj) -> list[store.Along]:
        if not hasattr(obj, "_along"):
            obj._along = store.deleted_along(obj)
        return obj._along

    @display(description="Deleted with it")
    def deleted_with(self, obj):
        """Each object the deletion took along, linked to the revision that removed it, and what rolling the
        object back to a revision before its deletion does with it (configs.store.rollback)."""
        along = self._along(obj)
        rows = format_html_join(
            "",
            '<li><a class="underline" href="{}">{}</a> ({} {} r{}): on a rollback, {}</li>',
            (
                (reverse("admin:configs_revision_change", args=[a.revision_id]), a.what, a.config_type, a.name,
                 a.revision, a.on_rollback)
                for a in along
            ),
        )  # fmt: skip
        before = (
            Revision.objects.filter(config_type=obj.config_type, name=obj.name, revision__lt=obj.revision)
            .order_by("-revision")
            .first()
        )
        undo = ""
        if before is not None and not before.deleted:
            undo = format_html(
                "<p>Rolling {} back to a revision before this deletion makes it again and restores these "
                '(<a class="underline" href="{}">roll back to r{}</a>).</p>',
                obj.name,
                reverse("admin:configs_revision_roll_back_to_this", args=[before.pk]),
                before.revision,
            )
        return format_html('<ul class="list-disc ml-6" id="deleted-with">{}</ul>{}', rows, undo)

    def get_search_results(self, request, queryset, search_term):
        # The per-object history link filters with ?name=<exact name>.
        name = request.GET.get("name")
        queryset, duplicates = super().get_search_results(request, queryset, search_term)
        return (queryset.filter(name=name) if name else queryset), duplicates

    def lookup_allowed(self, lookup, value, request=None):
        return lookup == "name" or super().lookup_allowed(lookup, value, request)

    def readable_types(self, request) -> list[str]:
        return [
            t
            for t in ConfigType.values
            if policy.decide(request, actions.CONFIG_READ, actions.config(t))
            or policy.decide(request, actions.CONFIG_UPDATE, actions.config(t))
        ]

    # the list: PolicyAdminMixin.get_queryset (policy.restrict: revisions of the types one may read)

    def has_module_permission(self, request):
        return bool(self.readable_types(request))

    def has_view_permission(self, request, obj=None):
        if isinstance(obj, Revision):
            return self._may(request, actions.CONFIG_READ, obj) or self._may(request, actions.CONFIG_UPDATE, obj)
        return bool(self.readable_types(request))

    @display(description="Deleted", ordering="deleted")
    def deleted_mark(self, obj):
        """Quiet on the live revisions (most of them), a clear marker on a deletion; not Django's red cross."""
        if obj.deleted:
            return format_html('<span class="deleted-mark" style="{}">deleted</span>', DELETED_STYLE)
        return mark_safe('<span class="live-mark" style="opacity:.4" title="not a deletion">–</span>')

    @display(description="Snapshot")
    def data(self, obj):
        """The object at this revision, as it is edited (YAML for pod templates, JSON otherwise)."""
        if obj.snapshot is None:
            return "(deleted)"
        fmt = revisions.edit_format(obj.config_type)
        if fmt == "json":
            return pretty_json(obj.snapshot)
        return format_html(
            '<pre class="font-mono text-sm whitespace-pre-wrap" data-format="{}">{}</pre>',
            fmt,
            revisions.render(obj.snapshot, fmt),
        )

    @display(description="Changes")
    def changes(self, obj):
        """Diff against `?compare=<revision>` if given, else against the previous revision; `?diff=split`
        shows it side by side. In the format the type is edited in (YAML for pod templates)."""
        other = self._compare_with(obj)
        if other is None:
            return "First revision."
        first, second = sorted((other, obj.revision))
        old = revisions.get_revision(obj.config_type, obj.name, first).snapshot
        new = revisions.get_revision(obj.config_type, obj.name, second).snapshot
        fmt = revisions.edit_format(obj.config_type)
        view = diff_view(revisions.render(old, fmt), revisions.render(new, fmt), fmt, self._query("diff"))
        others = Revision.objects.filter(config_type=obj.config_type, name=obj.name).exclude(pk=obj.pk)
        links = format_html_join(
            " ",
            '<a class="underline" href="?compare={}&amp;diff={}">r{}</a>',
            ((n, view.mode, n) for n in others.order_by("revision").values_list("revision", flat=True)),
        )
        compare = f"?compare={other}&diff="
        return format_html(
            "<div>Comparing r{} → r{}. Compare with: {}</div>{}",
            first,
            second,
            links or "-",
            render_to_string(
                "admin/_diff.html",
                {"diff": view, "unified_url": compare + "unified", "split_url": compare + "split"},
            ),
        )

    def _query(self, name: str) -> str:
        request = getattr(self, "_request", None)
        return request.GET.get(name, "") if request else ""

    def _compare_with(self, obj) -> int | None:
        request = getattr(self, "_request", None)
        wanted = request.GET.get("compare") if request else None
        if wanted and wanted.isdigit():
            return int(wanted)
        return obj.revision - 1 if obj.revision > 1 else None

    def change_view(self, request, object_id, form_url="", extra_context=None):
        self._request = request
        try:
            return super().change_view(request, object_id, form_url, extra_context)
        except DomainError as error:
            self.message_user(request, str(error), messages.ERROR)
            return HttpResponseRedirect(request.path)

    @action(description="Roll back to this revision", url_path="rollback", permissions=["rollback"])
    def roll_back_to_this(self, request, object_id):
        """GET: a confirmation page with the diff the rollback would apply; only its POST rolls back."""
        revision = get_object_or_404(Revision, pk=object_id)
        change_url = reverse("admin:configs_revision_change", args=[object_id])
        if request.method != "POST":
            try:
                plan = store.rollback_plan(revision.config_type, revision.name, revision.revision)
            except DomainError as error:
                self.message_user(request, f"Cannot roll back: {error}", messages.ERROR)
                return HttpResponseRedirect(change_url)
            what = "delete it again" if plan.deletes else "write it back as a new revision"
            if plan.undoes is not None:
                what = f"make it again (it was deleted at r{plan.undoes}) as a new revision"
            return confirmation_page(
                self,
                request,
                heading=f"Roll {revision.config_type} {revision.name} back to r{revision.revision}?",
                explanation=f"This makes {revision.name} look as it did at r{revision.revision} and will {what}; "
                "history is kept.",
                confirm_label="Roll back",
                cancel_url=change_url,
                diff=diff_view(plan.before, plan.after, plan.fmt, request.GET.get("diff", "")),
                **_rollback_notes(plan),
            )
        try:
            result = store.rollback(
                revision.config_type, revision.name, revision.revision, Actor.for_request(request, "admin")
            )
        except DomainError as error:
            self.message_user(request, f"Not rolled back: {error}", messages.ERROR)
            return HttpResponseRedirect(change_url)
        done = f"as revision {result.revision}" if result.revision else "(already identical)"
        done += result.with_restored()
        self.message_user(
            request,
            f"{revision.config_type} {revision.name} rolled back to r{revision.revision} {done}",
            messages.SUCCESS,
        )
        return HttpResponseRedirect(
            reverse("admin:configs_revision_changelist")
            + f"?config_type__exact={revision.config_type}&name={revision.name}"
        )

    def has_rollback_permission(self, request, object_id=None):
        config_type = (
            Revision.objects.filter(pk=object_id).values_list("config_type", flat=True).first() if object_id else None
        )
        resource = actions.config(config_type) if config_type else actions.config("history")
        return policy.decide(request, actions.CONFIG_UPDATE, resource).allowed


def _rollback_notes(plan: store.RollbackPlan) -> dict:
    """What else the rollback does: puts back what the deletion it undoes took along, or deletes again with
    the object what its type's delete takes (a machine pool's platform and pod template)."""
    if plan.along:
        return {
            "notes_heading": f"Its deletion at r{plan.undoes} took these along; the rollback puts them back:",
            "notes": [f"{a.what} ({a.config_type} {a.name} r{a.revision}): {a.on_rollback}" for a in plan.along],
        }
    if plan.takes_along:
        return {"notes_heading": f"Deleting {plan.name} again takes these along:", "notes": plan.takes_along}
    return {}
