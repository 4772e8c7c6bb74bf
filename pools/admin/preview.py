"""Admin Preview: choose a platform and resources, see the resolved Pod with the origin of each line, the
verdict and which nodes would take it, the way the self-service submit preview shows a task
(templates/pools/_task_preview.html, pools.presenters). Every invalid input is reported at once."""

from __future__ import annotations

import yaml
from django import forms
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from unfold.widgets import UnfoldAdminSelectWidget, UnfoldAdminTextareaWidget, UnfoldAdminTextInputWidget

from pools.engine.k8s_syntax import dns1123_label_error
from pools.engine.variables import task_input_problems
from pools.models import Pool
from pools.presenters import task_preview
from pools.services.preview import RESOURCE_KEYS, PreviewRequest, preview
from portal.errors import PortalError


def _text(help_text: str = "", placeholder: str = "", required: bool = False) -> forms.CharField:
    widget = UnfoldAdminTextInputWidget(attrs={"placeholder": placeholder, "autocomplete": "off"})
    return forms.CharField(required=required, help_text=help_text, widget=widget)


class PreviewForm(forms.Form):
    platform = forms.ChoiceField(widget=UnfoldAdminSelectWidget)
    task = _text("A task name: lower-case letters, digits and -.", "preview-task", required=True)
    cpu = _text("CPU cores: 4, 0.5 or 500m. Empty: the platform's default.", "default", required=False)
    gpu = _text("Whole GPUs: 0, 1, 8. Empty: the default.", "default")
    memory = _text("For example 64Gi. Empty: the default.", "default")
    storage = _text("For example 100Gi. Empty: the default.", "default")
    variables = forms.CharField(
        required=False,
        widget=UnfoldAdminTextareaWidget(attrs={"rows": 3, "placeholder": "NAME=value"}),
        help_text="Extra variables, one NAME=value per line (the task's own layer).",
    )

    field_order = ["platform", "task", "cpu", "gpu", "memory", "storage", "variables"]

    def __init__(self, *args, platforms: list[str], **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["platform"].choices = [(name, name) for name in platforms]
        self.fields["cpu"].label, self.fields["gpu"].label = "CPU", "GPUs"

    def clean(self):
        """Check every input, so that all mistakes show at once (resolving stops at the first)."""
        data = super().clean()
        name_problem = dns1123_label_error(data.get("task") or "")
        if data.get("task") and name_problem:
            self.add_error("task", f"{name_problem} (got {data['task']!r})")
        variables = self._variables(data.get("variables") or "")
        resources = {key: (data.get(key) or "").strip() for key in RESOURCE_KEYS}
        for problem in task_input_problems(resources, variables):
            field = problem.field.removeprefix("resources.")
            field = field if field in RESOURCE_KEYS else "variables"
            self.add_error(field, f"{problem.reason} (got {problem.value!r})")
        data["resources"], data["variable_values"] = resources, variables
        return data

    def _variables(self, text: str) -> dict[str, str]:
        found = {}
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            name, sep, value = line.partition("=")
            if not sep or not name.strip():
                self.add_error("variables", f"line {number}: expected NAME=value (got {line.strip()!r})")
                continue
            found[name.strip()] = value.strip()
        return found

    def all_errors(self) -> list[tuple[str, str]]:
        """(label, message) of every error, in the form's order: the summary above the form."""
        labels = {name: field.label or name.capitalize() for name, field in self.fields.items()}
        return [(labels.get(name, "Preview"), message) for name, errors in self.errors.items() for message in errors]


class PoolPreviewMixin:
    """Adds `<pool id>/preview/` to the pool admin."""

    def get_urls(self):
        view = self.admin_site.admin_view(self.preview_view)
        return [path("<int:pool_id>/preview/", view, name="pools_pool_preview"), *super().get_urls()]

    def preview_view(self, request, pool_id: int):
        pool = get_object_or_404(Pool.objects.prefetch_related("platforms"), pk=pool_id)
        if not self.has_view_permission(request, pool):
            return self.admin_site.login(request)
        platforms = sorted(p.name for p in pool.platforms.all())
        initial = {"platform": request.GET.get("platform") or pool.default_platform, "task": "preview-task"}
        form = PreviewForm(request.GET if "task" in request.GET else None, platforms=platforms, initial=initial)
        task, given, error = None, None, None
        if form.is_bound and form.is_valid():
            wanted = _request(pool, form.cleaned_data)
            given = _task_as_given(wanted)
            task, error = _run(wanted, form)
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "pool": pool,
            "form": form,
            "form_errors": form.all_errors() if form.is_bound else [],
            "task": task,
            "given": given,
            "error": error,
            "title": f"Preview a pod on pool {pool.name}",
            "change_url": reverse("admin:pools_pool_change", args=[pool.pk]),
        }
        return TemplateResponse(request, "admin/pools/preview.html", context)


def _request(pool: Pool, data: dict) -> PreviewRequest:
    return PreviewRequest(
        pool=pool.name,
        platform=data["platform"],
        task=data["task"],
        resources=data["resources"],
        variables=data["variable_values"],
    )


def _run(request: PreviewRequest, form: PreviewForm):
    """The resolved task, or the engine's refusal (also put on its field, if it names one of the form's)."""
    try:
        result = preview(request)
    except PortalError as error:
        field = str(getattr(error, "field", "") or "").removeprefix("resources.")
        if field in form.fields:
            form.add_error(field, getattr(error, "reason", str(error)))
        return None, error
    return task_preview({**result, "name": request.task}), None


def _task_as_given(request: PreviewRequest) -> str:
    """The inputs the preview resolves, as the task would be written in a spec."""
    task = {"name": request.task, "image": request.image, "command": request.command}
    resources = {key: value for key, value in request.resources.items() if value}
    if resources:
        task["resources"] = resources
    if request.variables:
        task["variables"] = request.variables
    return yaml.safe_dump({"platform": request.platform, "task": task}, sort_keys=False)
