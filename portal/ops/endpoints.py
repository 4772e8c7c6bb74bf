"""The operations endpoints, answered before the rest of the middleware (first in MIDDLEWARE).

Kubelet probes and Prometheus call a pod by its IP address, over plain HTTP: through the usual stack
they would meet ALLOWED_HOSTS (a 400 for an unknown Host), the HTTPS redirect, sessions, the sign-in
redirect and the API guard. So these paths are matched here, exactly, and answered at once:
- `/healthz`, `/readyz` (portal.ops.health): open to anyone, they say nothing secret;
- `/metrics`: only to a peer in METRICS_ALLOWED_NETWORKS (default loopback) or presenting
  `Authorization: Bearer <METRICS_TOKEN>` when that is set; anyone else gets a 403.
"""

from __future__ import annotations

import hmac
import ipaddress

from django.conf import settings
from django.http import HttpResponse, JsonResponse

from portal.ops import health
from portal.ops.collectors import metrics_page


def metrics(request) -> HttpResponse:
    if not metrics_allowed(request):
        return JsonResponse({"status": "error", "reason": "metrics are not served to this client"}, status=403)
    body, content_type = metrics_page()
    return HttpResponse(body, content_type=content_type)


def metrics_allowed(request) -> bool:
    token = settings.METRICS_TOKEN
    sent = request.headers.get("Authorization", "")
    if token and hmac.compare_digest(sent.encode(), f"Bearer {token}".encode()):
        return True
    try:
        peer = ipaddress.ip_address(request.META.get("REMOTE_ADDR", ""))
    except ValueError:
        return False
    return any(peer in ipaddress.ip_network(network) for network in settings.METRICS_ALLOWED_NETWORKS)


ENDPOINTS = {"/healthz": health.healthz, "/readyz": health.readyz, "/metrics": metrics}
METHODS = {"GET", "HEAD"}


class OpsEndpointsMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        view = ENDPOINTS.get(request.path_info)
        if view is None:
            return self.get_response(request)
        if request.method not in METHODS:
            return JsonResponse({"status": "error", "reason": "only GET and HEAD"}, status=405)
        response = view(request)
        response["Cache-Control"] = "no-store"
        return response
