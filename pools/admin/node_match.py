"""The live node match of the pool and platform pages: how many nodes of the backend the platform's pod would
match, and why the others do not, as the form stands (pools.services.node_match computes it).

The page shows it for what is saved; static/portal/pool-form.js posts the whole form to `node-match/` as
templates are picked or variables typed (debounced) and puts the answer in place. `?format=json` gives the
same figures as JSON.
"""

from __future__ import annotations

from django import forms
from django.core.exceptions import PermissionDenied
from django.http import HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join
from django.views.decorators.http import require_POST

from pools.config_types import PLATFORM, POOL
from pools.models import Platform, Pool
from pools.services.node_match import Match, PlatformDraft, match_drafts
from portal.keyvalue_widget import KeyValueField, KeyValueRows
from portal.ordered_widget import OrderedPicker

POOL_TEMPLATES = next(f for f in POOL.leaves() if f.name == "common_pod_template")
PLATFORM_TEMPLATES = next(f for f in PLATFORM.leaves() if f.name == "override_pod_template")
MAX_PLATFORM_ROWS = 200


def posted_mapping(data, name: str) -> tuple[dict, bool]:
    """A key–value field as posted: (mapping, whether it was readable)."""
    try:
        value = KeyValueField().clean(KeyValueRows().value_from_datadict(data, None, name))
    except forms.ValidationError:
        return {}, False
    return (value, True) if isinstance(value, dict) else ({}, False)


def posted_names(data, name: str) -> list[str]:
    return OrderedPicker().value_from_datadict(data, None, name)


def pool_platforms(pool: Pool | None) -> dict[int, Platform]:
    if pool is None:
        return {}
    return {p.pk: p for p in pool.platforms.prefetch_related("template_refs__template")}


def drafts_of_saved_pool(pool: Pool) -> list[PlatformDraft]:
    templates = POOL_TEMPLATES.kind.read(pool, POOL_TEMPLATES.target)
    platforms = sorted(pool_platforms(pool).values(), key=lambda p: p.name)
    return _with_pool_only(
        [
            PlatformDraft(
                p.name,
                templates + PLATFORM_TEMPLATES.kind.read(p, PLATFORM_TEMPLATES.target),
                dict(pool.common_default_variables),
                dict(p.default_variables),
            )
            for p in platforms
        ],
        templates,
        dict(pool.common_default_variables),
    )


def drafts_of_pool_post(data, pool: Pool | None) -> tuple[list[PlatformDraft], list[str]]:
    """The pool page as posted: each platform row with the pool's templates (and its own saved ones)."""
    templates = posted_names(data, "common_pod_template")
    variables, readable = posted_mapping(data, "common_default_variables")
    notes = [] if readable else ["the pool's variables have errors: matched without them"]
    saved = pool_platforms(pool)
    drafts = []
    try:
        total = min(int(data.get("platforms-TOTAL_FORMS") or 0), MAX_PLATFORM_ROWS)
    except ValueError:
        total = 0
    for index in range(total):
        name = (data.get(f"platforms-{index}-name") or "").strip()
        if not name or data.get(f"platforms-{index}-DELETE"):
            continue
        own, readable = posted_mapping(data, f"platforms-{index}-default_variables")
        if not readable:
            notes.append(f"platform {name}: its variables have errors: matched without them")
        platform = saved.get(_int(data.get(f"platforms-{index}-id")))
        overrides = PLATFORM_TEMPLATES.kind.read(platform, PLATFORM_TEMPLATES.target) if platform else []
        drafts.append(PlatformDraft(name, templates + overrides, variables, own))
    return _with_pool_only(drafts, templates, variables), notes


def drafts_of_platform_post(data, platform: Platform | None, pool: Pool) -> tuple[list[PlatformDraft], list[str]]:
    own, readable = posted_mapping(data, "default_variables")
    name = platform.name if platform else (data.get("name") or "").strip() or "new platform"
    templates = POOL_TEMPLATES.kind.read(pool, POOL_TEMPLATES.target) + posted_names(data, "override_pod_template")
    notes = [] if readable else ["the variables have errors: matched without them"]
    return [PlatformDraft(name, templates, dict(pool.common_default_variables), own)], notes


def _with_pool_only(drafts: list[PlatformDraft], templates: list[str], variables: dict) -> list[PlatformDraft]:
    """No platform yet: what the pool's own templates match."""
    return drafts or [PlatformDraft("", templates, variables, {})]


def _int(value) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


# ------------------------------------------------------------------------------------------ rendering


def render_matches(matches: list[Match], notes: list[str] = ()) -> str:
    if not matches:
        return "-"
    if matches[0].total == 0 and not any(m.error for m in matches):
        return format_html("<p>{}</p>", "The backend has no nodes yet: sync it to see which nodes match.")
    body = format_html_join("", "{}", ((_render_one(match),) for match in matches))
    extra = format_html_join("", '<p class="nm-note">{}</p>', ((note,) for note in notes))
    return format_html(
        '{}{}<p class="nm-note">Selectors, affinity, taints and cordon decide a match; resources do not.</p>',
        body,
        extra,
    )


def _render_one(match: Match) -> str:
    title = format_html("<b>{}</b>: ", match.platform or "The pool's templates")
    if match.error:
        return format_html('<div class="nm-platform">{}<span class="nm-none">{}</span></div>', title, match.error)
    if match.matching == 0:
        count = format_html('<span class="nm-count nm-none">no node of {} matches</span>', match.total)
    else:
        count = format_html('<span class="nm-count">{} of {} nodes match</span>', match.matching, match.total)
    if not match.others:
        return format_html('<div class="nm-platform">{}{}.</div>', title, count)
    reasons = format_html_join(
        "",
        '<li>{} node{}: {} <span class="nm-examples">(e.g. {})</span></li>',
        (
            (reason.count, "" if reason.count == 1 else "s", reason.text, ", ".join(reason.examples))
            for reason in match.reasons
        ),
    )
    more = format_html("<li>… and {} other reasons</li>", match.more_reasons) if match.more_reasons else ""
    verb = "does" if match.others == 1 else "do"
    return format_html(
        '<div class="nm-platform">{}{}; {} {} not:<ul>{}{}</ul></div>', title, count, match.others, verb, reasons, more
    )


def respond(request, matches: list[Match], notes: list[str]) -> HttpResponse:
    if request.GET.get("format") == "json":
        return JsonResponse({"platforms": [m.as_dict() for m in matches], "notes": notes})
    return HttpResponse(render_matches(matches, notes))


# ------------------------------------------------------------------------------------------ admin mixins


class PoolNodeMatchMixin:
    """PoolAdmin: `node-match/` (add page) and `<id>/node-match/` (change page), and the `node_match` field."""

    def get_urls(self):
        view = self.admin_site.admin_view(require_POST(self.node_match_view))
        return [
            path("node-match/", view, name="pools_pool_node_match"),
            path("<int:pool_id>/node-match/", view, name="pools_pool_node_match"),
            *super().get_urls(),
        ]

    def node_match_view(self, request, pool_id: int | None = None):
        pool = get_object_or_404(Pool, pk=pool_id) if pool_id is not None else None
        if not (self.has_change_permission(request, pool) if pool else self.has_add_permission(request)):
            raise PermissionDenied
        drafts, notes = drafts_of_pool_post(request.POST, pool)
        backend_id = _int(request.POST.get("backend"))
        if backend_id is None:
            return HttpResponse(format_html("<p>{}</p>", "Choose a backend to see which of its nodes match."))
        return respond(request, match_drafts(backend_id, request.POST.get("name") or "", drafts), notes)

    def node_match(self, obj):
        if obj is None or obj.pk is None:
            content = format_html("<p>{}</p>", "Choose a backend and templates to see which of its nodes match.")
            return _panel(reverse("admin:pools_pool_node_match"), content)
        matches = match_drafts(obj.backend_id, obj.name, drafts_of_saved_pool(obj))
        return _panel(reverse("admin:pools_pool_node_match", args=[obj.pk]), render_matches(matches))

    node_match.short_description = "Nodes that match"


class PlatformNodeMatchMixin:
    """PlatformAdmin: the same for one platform (its pool's templates, then the ones picked here)."""

    def get_urls(self):
        view = self.admin_site.admin_view(require_POST(self.node_match_view))
        return [
            path("node-match/", view, name="pools_platform_node_match"),
            path("<int:platform_id>/node-match/", view, name="pools_platform_node_match"),
            *super().get_urls(),
        ]

    def node_match_view(self, request, platform_id: int | None = None):
        platform = None
        if platform_id is not None:
            platform = get_object_or_404(Platform.objects.select_related("pool"), pk=platform_id)
        if not (self.has_change_permission(request, platform) if platform else self.has_add_permission(request)):
            raise PermissionDenied
        pool = platform.pool if platform else Pool.objects.filter(pk=_int(request.POST.get("pool"))).first()
        if pool is None:
            return HttpResponse(format_html("<p>{}</p>", "Choose a pool to see which nodes of its backend match."))
        drafts, notes = drafts_of_platform_post(request.POST, platform, pool)
        return respond(request, match_drafts(pool.backend_id, pool.name, drafts), notes)

    def node_match(self, obj):
        if obj is None or obj.pk is None:
            content = format_html("<p>{}</p>", "Choose a pool and templates to see which nodes of its backend match.")
            return _panel(reverse("admin:pools_platform_node_match"), content)
        pool = obj.pool
        templates = POOL_TEMPLATES.kind.read(pool, POOL_TEMPLATES.target)
        draft = PlatformDraft(
            obj.name,
            templates + PLATFORM_TEMPLATES.kind.read(obj, PLATFORM_TEMPLATES.target),
            dict(pool.common_default_variables),
            dict(obj.default_variables),
        )
        matches = match_drafts(pool.backend_id, pool.name, [draft])
        return _panel(reverse("admin:pools_platform_node_match", args=[obj.pk]), render_matches(matches))

    node_match.short_description = "Nodes that match"


def _panel(url: str, content: str) -> str:
    """`content` now; static/portal/pool-form.js replaces it from `url` as the form changes."""
    return format_html('<div class="node-match" data-node-match="{}" aria-live="polite">{}</div>', url, content)
