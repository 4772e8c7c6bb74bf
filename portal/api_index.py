"""`GET /api/`: the index of the API, for anyone (signed in or not): its parts and where their documentation is.

Only paths and one line each, nothing about the caller or the data (the parts themselves check who asks).
The paths are the URLconf's (portal/urls.py); tests/security/test_api_index.py checks each answers.
"""

from __future__ import annotations

from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_GET

DOCS = {
    "openapi": ("/api/schema/", "the OpenAPI 3 schema of every endpoint (YAML; ?format=json)"),
    "docs_ui": ("/api/schema/ui/", "the same, browsable (Swagger UI)"),
}
# (part, its root, what it holds); roots with a parameter are URL templates (TEMPLATES), as in the schema
PARTS = [
    ("pools", "/api/pool", "the pools you may use, their platforms and capacity (OSMO's shape)"),
    ("resources", "/api/resources", "the nodes of each pool and what they hold"),
    ("workflows", "/api/workflow", "your workflows; submit with POST /api/pool/{pool}/workflow"),
    ("tasks", "/api/task", "tasks across workflows (OSMO's `osmo task list`)"),
    ("configs", "/api/configs/{config_type}", "config documents (pool, backend, role, …) with history and rollback"),
    ("config_history", "/api/configs/history", "every revision of every config document"),
    ("teams", "/api/teams/departments", "departments and their projects (/api/teams/projects)"),
    ("machine_pools", "/api/machine_pools", "machine pools: state, nodes, capacity, hourly cost (config:Read)"),
    ("quotas", "/api/quotas/node_pools", "node pools with their teams' quotas and fair shares"),
    ("usage", "/api/usage/report", "GPU, CPU and memory hours by team, node pool and time"),
    ("tokens", "/api/auth/access_token", "your API tokens; exchange one for a JWT at /api/auth/jwt/access_token"),
    ("version", "/api/version", "the portal's version"),
]


TEMPLATES = "a URL with {name} in it is a template (RFC 6570): put a value in place of {name}"


@require_GET
def api_index(request: HttpRequest) -> JsonResponse:
    def link(path: str) -> str:
        """Absolute, like the page's own URL; a template's `{…}` kept as written (not percent-encoded)."""
        fixed, brace, rest = path.partition("{")
        return request.build_absolute_uri(fixed) + brace + rest

    return JsonResponse(
        {
            "name": "Pool Portal API",
            "authentication": "Authorization: Bearer <API token or JWT>, or the session of a signed-in browser",
            "url_templates": TEMPLATES,
            "docs": {key: {"url": link(path), "about": about} for key, (path, about) in DOCS.items()},
            "parts": [{"name": name, "url": link(path), "about": about} for name, path, about in PARTS],
        },
        # "…" as itself, not "\u2026": the index is read in a browser
        json_dumps_params={"indent": 2, "ensure_ascii": False},
        content_type="application/json; charset=utf-8",
    )
