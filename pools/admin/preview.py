"""Admin Preview: choose a platform and resources, see the resolved Pod with provenance per line and the verdict."""

from __future__ import annotations

from django import forms
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse

from pools.models import Pool
from pools.services.preview import PreviewRequest, annotated_yaml, parse_assignments, preview
from portal.errors import PortalError


class PreviewForm(forms.Form):
    platform = forms.ChoiceField()
    cpu = forms.CharField(required=False, help_text="e.g. 4, 0.5 or 500m; empty uses the defaults")
    gpu = forms.CharField(required=False)
    memory = forms.CharField(required=False, help_text="e.g. 64Gi")
    storage = forms.CharField(required=False)
    variables = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 3}), help_text="One NAME=VALUE per line (task layer)."
    )
    task = forms.CharField(initial="preview-task")

    def __init__(self, *args, platforms: list[str], **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["platform"].choices = [(name, name) for name in platforms]


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
        form = PreviewForm(request.GET if "platform" in request.GET else None, platforms=platforms, initial=initial)
        result, error = None, None
        if form.is_bound and form.is_valid():
            result, error = self._run(pool, form.cleaned_data)
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "pool": pool,
            "form": form,
            "result": result,
            "error": error,
            "title": f"Preview {pool.name}",
            "lines": annotated_yaml(result["pod"], result["provenance"]) if result else [],
            "change_url": reverse("admin:pools_pool_change", args=[pool.pk]),
        }
        return TemplateResponse(request, "admin/pools/preview.html", context)

    @staticmethod
    def _run(pool: Pool, data: dict):
        try:
            variables = parse_assignments([line for line in data["variables"].splitlines() if line.strip()])
            request = PreviewRequest(
                pool=pool.name,
                platform=data["platform"],
                task=data["task"],
                resources={k: data[k] for k in ("cpu", "gpu", "memory", "storage")},
                variables=variables,
            )
            return preview(request), None
        except PortalError as error:
            return None, str(error)
