"""The admin's editable quota grid of one node pool (`<node pool id>/quotas/`): departments, each followed by its
projects, × resources (GPU, CPU, memory), each cell a deserved, limit and weight. Saving writes every team that
changed as one NODE_POOL revision, through `quotas.services.grid` (nothing at all when anything is refused; each
refusal is shown on its cell): an applied preview is one entry in the history, undone by one rollback. Viewing
needs what the node pool list needs; saving, config:Update on `config/node_pool` (`quotas.set_team_quotas`
decides). "Preview this change" tries the grid's GPU edits first (quotas.services.what_if: the last 7 days
replayed, and what it does to the live queue right now) and shows the grid again with them, so "Save quotas"
applies what was previewed.

Beside it, the grid as Run:ai shows it (`projects/`): projects × node pools, read-only, each cell the deserved
GPUs opening to the rest (quotas.services.project_grid), linking to the node pool's grid and the project's page."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.http import HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse

from access import actions, policy
from configs.admin import CHANGE_DESCRIPTION_MAX
from configs.models import ConfigType
from portal.errors import PermissionDenied, PortalError
from quotas import units
from quotas.config_types import QUOTA_KEYS, RESOURCES
from quotas.models import NodePool
from quotas.services import grid, node_pool_quotas, overview, what_if
from quotas.services.project_grid import project_grid
from quotas.services.quotas import quotas_of
from teams.quota_visibility import request_quota_view


class QuotaGridMixin:
    def get_urls(self):
        view = self.admin_site.admin_view(self.quota_grid_view)
        by_project = self.admin_site.admin_view(self.project_grid_view)
        return [
            path("<int:node_pool_id>/quotas/", view, name="quotas_nodepool_quotas"),
            path("projects/", by_project, name="quotas_nodepool_projects"),
            *super().get_urls(),
        ]

    def project_grid_view(self, request):
        if not self.has_view_permission(request):
            raise DjangoPermissionDenied
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": "Quotas: projects × node pools",
            "grid": project_grid(),
            "list_url": reverse("admin:quotas_nodepool_changelist"),
        }
        return TemplateResponse(request, "admin/quotas/project_grid.html", context)

    def quota_grid_view(self, request, node_pool_id: int):
        node_pool = get_object_or_404(overview.with_totals(NodePool.objects.select_related("backend")), pk=node_pool_id)
        if not self.has_view_permission(request, node_pool):
            raise DjangoPermissionDenied
        may_write = policy.decide(request, actions.CONFIG_UPDATE, actions.config(ConfigType.NODE_POOL)).allowed
        errors, submitted, preview = {}, {}, None
        if request.method == "POST" and "preview" in request.POST:
            submitted = {key: value for key, value in request.POST.items() if key.count(":") == 3}
            preview, errors = _preview(request, node_pool, submitted)
        elif request.method == "POST":
            submitted = {key: value for key, value in request.POST.items() if key.count(":") == 3}
            description = request.POST.get("change_description", "").strip()
            if len(description) > CHANGE_DESCRIPTION_MAX:
                messages.error(
                    request,
                    f"Not saved: the change description has {len(description)} characters, at most "
                    f"{CHANGE_DESCRIPTION_MAX}",
                )
                return HttpResponseRedirect(request.path)
            try:
                saved = grid.save(request, node_pool, submitted, description)
            except PermissionDenied as refusal:
                messages.error(request, str(refusal))
                return HttpResponseRedirect(request.path)
            if saved.ok:
                count = len(saved.teams)
                said = f"{count} team(s) changed, one revision (r{saved.revision})" if count else "nothing changed"
                messages.success(request, f"Quotas of {node_pool.name} saved: {said}.")
                return HttpResponseRedirect(request.path)
            errors = saved.errors
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": f"Quotas of node pool {node_pool.name}",
            "node_pool": node_pool,
            "selector": node_pool_quotas.selector_text(node_pool),
            "totals": _totals(node_pool),
            "resources": [(r, grid.RESOURCE_WORDS[r]) for r in RESOURCES],
            "keys": QUOTA_KEYS,
            "lend_choices": list(grid.LEND_CHOICES),
            "rows": _rows(node_pool, submitted, errors),
            "team_errors": [text for where, text in errors.items() if len(where) == 2],
            "may_write": may_write,
            "change_url": reverse("admin:quotas_nodepool_change", args=[node_pool.pk]),
            "projects_url": reverse("admin:quotas_nodepool_projects"),
            "preview": preview,
            "what_if_more": request.POST.get("what_if_more", ""),
        }
        return TemplateResponse(request, "admin/quotas/grid.html", context)


def _preview(request, node_pool, submitted: dict) -> tuple[dict | None, dict]:
    """The grid's GPU edits tried on the last 7 days and on the live queue (quotas.services.what_if); nothing is
    written. The page shows the grid with the edits kept, so "Save quotas" applies them (one revision, as any
    save). A refused cell: no preview, the cell says why."""
    changes, refused = grid.what_if_changes(node_pool, submitted)
    if refused.errors:
        return None, refused.errors
    # what the grid cannot say (capacity, a machine pool's max), typed: tried, never saved
    changes += [line.strip() for line in request.POST.get("what_if_more", "").splitlines() if line.strip()]
    start, end = what_if.period()
    try:
        answer = what_if.what_if(start, end, changes, view=request_quota_view(request)) if changes else None
    except PortalError as error:  # e.g. a limit below the deserved: the save would refuse it too
        return None, {("preview", node_pool.name): f"cannot preview: {error}"}
    if answer:
        for row in answer["projects"]:  # the template walks the three runs of each project
            row["runs"] = [(run, row[run]) for run in ("actual", "baseline", "proposed")]
    return {"changes": changes, "answer": answer}, {}


def _totals(node_pool) -> list[dict]:
    over = overview.overcommitted(node_pool)
    return [
        {
            "resource": grid.RESOURCE_WORDS[r],
            "deserved": units.show(r, getattr(node_pool, f"deserved_{r}")),
            "capacity": units.show(r, getattr(node_pool, f"capacity_{r}")),
            "over": r in over,
        }
        for r in RESOURCES
    ]


def _rows(node_pool, submitted: dict, errors: dict) -> list[dict]:
    """Departments, each followed by its projects; per resource the three inputs (what was submitted when the
    save was refused, else what is stored) and their cell's error."""
    rows = []
    for department in quotas_of(node_pool)["departments"]:
        teams = [("department", department)] + [("project", project) for project in department["projects"]]
        for kind, team in teams:
            cells = []
            for resource in RESOURCES:
                inputs = []
                for key in QUOTA_KEYS:
                    name = grid.input_name(kind, team["name"], resource, key)
                    value = submitted.get(name, grid.shown(resource, key, team["quotas"][resource][key]))
                    label = f"{kind} {team['name']}: {grid.RESOURCE_WORDS[resource]} {key}"  # the input's name
                    inputs.append({"name": name, "key": key, "value": value, "label": label})
                here = (kind, team["name"], resource)
                cells.append({"inputs": inputs, "error": next((errors[c] for c in errors if c[:3] == here), "")})
            rows.append({"kind": kind, "name": team["name"], "cells": cells})
    return rows
