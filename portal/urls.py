from django.contrib import admin
from django.shortcuts import redirect
from django.templatetags.static import static
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from portal.api_index import api_index
from portal.apps import load_admin

load_admin()  # every app's ModelAdmins, on the policy admin site (not at start-up: see portal.apps)


def favicon(request):
    """Browsers ask for /favicon.ico on pages that name no icon (the admin's): the portal's, not a 404."""
    return redirect(static("portal/favicon.svg"))


urlpatterns = [
    path("favicon.ico", favicon),
    path("admin/", admin.site.urls),
    path("oidc/", include("access.oidc.views")),  # sign-in, callback, logout (POST), failure and no-role pages
    path("api/", api_index, name="api-index"),  # the parts of the API, with links (portal/api_index.py)
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/schema/ui/", SpectacularSwaggerView.as_view(url_name="schema"), name="schema-ui"),
    path("api/", include("pools.api.urls")),
    path("api/", include("access.api.urls")),  # /api/auth/access_token[/NAME]
    path("api/", include("teams.api.urls")),  # /api/teams/departments[/NAME], /api/teams/projects[/NAME]
    path("api/", include("workflows.api.urls")),  # /api/pool/<pool>/workflow, /api/workflow[/<id>[/spec|events|cancel]]
    path("api/", include("usage.api.urls")),  # /api/usage/report
    path("api/", include("quotas.api.urls")),  # /api/quotas/node_pools[/NAME[/projects|departments/TEAM]], pool_quota
    path("", include("selfservice.urls")),  # self-service pages; its catalog is the home page "/" (before access's)
    path("", include("access.urls")),  # /tokens/ (personal API tokens); its fallback home "/" is shadowed
]
