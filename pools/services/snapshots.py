"""Configuration objects → OSMO JSON shapes. What `config show` prints is what `config update` reads."""

from __future__ import annotations

import hashlib
import hmac

from django.conf import settings
from django.db.models import Prefetch, QuerySet

from clusters.models import Backend
from pools.models import Platform, PodTemplate, Pool, ResourceValidation


def pools_for_snapshot() -> QuerySet[Pool]:
    """Everything a pool snapshot reads, in a constant number of queries whatever the pool count."""
    platforms = Platform.objects.order_by("name").prefetch_related(
        "template_refs__template", "validation_refs__validation"
    )
    return Pool.objects.select_related("backend").prefetch_related(
        "template_refs__template", "validation_refs__validation", Prefetch("platforms", queryset=platforms)
    )


def pool_snapshot(pool: Pool) -> dict:
    gpu = None
    if pool.gpu_guarantee is not None or pool.gpu_maximum is not None or pool.gpu_weight is not None:
        gpu = {"guarantee": _or(pool.gpu_guarantee, -1), "maximum": _or(pool.gpu_maximum, -1),
               "weight": _or(pool.gpu_weight, 1)}
    return {
        "name": pool.name,
        "description": pool.description,
        "backend": pool.backend.name,
        "default_platform": pool.default_platform or None,
        "download_type": pool.download_type or None,
        "default_exec_timeout": pool.default_exec_timeout,
        "default_queue_timeout": pool.default_queue_timeout,
        "max_exec_timeout": pool.max_exec_timeout,
        "max_queue_timeout": pool.max_queue_timeout,
        "default_exit_actions": dict(pool.default_exit_actions),
        "resources": {"gpu": gpu},
        "enable_maintenance": pool.enable_maintenance,
        "common_default_variables": dict(pool.common_default_variables),
        "common_resource_validations": [ref.validation.name for ref in _ordered(pool.validation_refs.all())],
        "common_pod_template": [ref.template.name for ref in _ordered(pool.template_refs.all())],
        "common_group_templates": [],
        "topology_keys": list(pool.topology_keys),
        "platforms": {platform.name: platform_snapshot(platform) for platform in pool.platforms.all()},
    }


def pool_doc_snapshot(doc) -> dict:
    """The snapshot a pool will have once `doc` (a parsed PoolDoc) is saved; equals `pool_snapshot`."""
    return {
        "name": doc.name,
        "description": doc.description,
        "backend": doc.backend,
        "default_platform": doc.default_platform or None,
        "download_type": doc.download_type or None,
        **{key: doc.timeouts.get(key, "") for key in ("default_exec_timeout", "default_queue_timeout",
                                                      "max_exec_timeout", "max_queue_timeout")},
        "default_exit_actions": dict(doc.default_exit_actions),
        "resources": {"gpu": dict(doc.gpu) if doc.gpu else None},
        "enable_maintenance": doc.enable_maintenance,
        "common_default_variables": dict(doc.common_default_variables),
        "common_resource_validations": list(doc.common_resource_validations),
        "common_pod_template": list(doc.common_pod_template),
        "common_group_templates": [],
        "topology_keys": list(doc.topology_keys),
        "platforms": {p.name: {
            "description": p.description,
            "host_network_allowed": p.host_network_allowed,
            "privileged_allowed": p.privileged_allowed,
            "default_variables": dict(p.default_variables),
            "resource_validations": list(p.resource_validations),
            "override_pod_template": list(p.override_pod_template),
            "allowed_mounts": list(p.allowed_mounts),
        } for p in sorted(doc.platforms, key=lambda p: p.name)},
    }


def platform_snapshot(platform: Platform) -> dict:
    return {
        "description": platform.description,
        "host_network_allowed": platform.host_network_allowed,
        "privileged_allowed": platform.privileged_allowed,
        "default_variables": dict(platform.default_variables),
        "resource_validations": [ref.validation.name for ref in _ordered(platform.validation_refs.all())],
        "override_pod_template": [ref.template.name for ref in _ordered(platform.template_refs.all())],
        "allowed_mounts": list(platform.allowed_mounts),
    }


def backend_snapshot(backend: Backend) -> dict:
    """Secrets never leave as values: `token` and `kubeconfig` show a `<set xxxxxxxx>` marker (a keyed
    hash, so a changed secret is a changed snapshot), which `parse_backend` accepts back as "keep"."""
    return {
        "description": backend.description,
        "namespace": backend.namespace,
        "scheduler_name": backend.scheduler_name,
        "dashboard_url": backend.dashboard_url,
        "grafana_url": backend.grafana_url,
        "connection": backend.connection,
        "api_url": backend.api_url,
        "token": secret_marker(backend.token),
        "ca_cert": backend.ca_cert,
        "verify_tls": backend.verify_tls,
        "kubeconfig": secret_marker(backend.kubeconfig),
        "kube_context": backend.kube_context,
    }


def secret_marker(value: str) -> str:
    if not value:
        return ""
    digest = hmac.new(settings.SECRET_KEY.encode(), value.encode(), hashlib.sha256).hexdigest()
    return f"<set {digest[:8]}>"


def pod_template_snapshot(template: PodTemplate) -> dict:
    return template.body


def resource_validation_snapshot(validation: ResourceValidation) -> list:
    return validation.rules


def _ordered(refs):
    # Prefetched rows arrive in Meta.ordering already; sorting again keeps this correct for unprefetched use.
    return sorted(refs, key=lambda ref: (ref.position, ref.id))


def _or(value, default):
    return default if value is None else value
