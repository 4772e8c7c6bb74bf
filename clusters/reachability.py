"""Is at least one connected backend reachable? The cluster part of `/readyz` (docs/operations.md).

Backends that were online last are tried first, so a healthy one answers before a dead one costs its
timeout; at most MAX_TRIED are tried, which bounds how long one readiness answer can take.
"""

from __future__ import annotations

from dataclasses import dataclass

from clusters.kube.connection import connect
from clusters.kube.errors import KubeError
from clusters.kube.probe import server_version
from clusters.models import Backend

MAX_TRIED = 3


@dataclass(frozen=True)
class Reachability:
    ok: bool
    reason: str
    configured: bool = True


def any_backend_reachable(timeout: float) -> Reachability:
    backends = list(Backend.objects.exclude(connection="").order_by("-online", "name")[:MAX_TRIED])
    if not backends:
        return Reachability(True, "no backend configured", configured=False)
    failures = []
    for backend in backends:
        try:
            with connect(backend, timeout=(timeout, timeout)) as kube:
                version = server_version(kube)
        except KubeError as error:
            failures.append(f"{backend.name}: {'timeout or network error' if error.transient else 'refused'}")
            continue
        return Reachability(True, f"backend {backend.name} answers (Kubernetes {version})")
    return Reachability(False, "no backend reachable (" + "; ".join(failures) + ")")
