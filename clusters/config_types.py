"""BACKEND: the config type the clusters app owns, described once (see configs.schema); its handler, with
what is particular to it (secrets kept across a shown document), is clusters.config_handlers.

Descriptions only: no model import, so clusters.models can take its described columns from here.
"""

from __future__ import annotations

import re

from clusters.kube.kubeconfig import KubeconfigError, read_kubeconfig  # YAML only, no Kubernetes client
from configs.errors import ConfigError
from configs.kinds import KEEP_SECRET, Bool, Choice, Secret, Text
from configs.models import ConfigType
from configs.schema import Field, Schema

CONNECTIONS = ("", "kubeconfig", "in-cluster", "url")
# Who enforces the quotas of this cluster's node pools: the portal's own admission (default), or the
# cluster's KAI-Scheduler or Kueue, to which the portal writes the same quotas (docs/quota-schedulers.md).
QUOTA_SCHEDULERS = ("portal", "kai", "kueue")


def _check_connection(doc) -> None:
    """Connection settings (shared docs design §3: kubeconfig content, in-cluster, or URL + token + CA);
    an empty `connection` is inferred from what is given."""
    if not doc.connection:
        doc.connection = "kubeconfig" if doc.kubeconfig else "url" if doc.api_url else ""
    if doc.connection not in CONNECTIONS:
        raise ConfigError(
            f"unknown connection; expected one of {', '.join(c for c in CONNECTIONS if c)} (or leave it empty)",
            field="connection",
            value=doc.connection,
        )
    if doc.connection == "url" and not re.match(r"^https?://[^\s/]+", doc.api_url):
        raise ConfigError(
            "connection 'url' needs api_url, the API server URL (https://host:port)", field="api_url", value=doc.api_url
        )
    if doc.connection == "kubeconfig":
        if not doc.kubeconfig:
            raise ConfigError("connection 'kubeconfig' needs the kubeconfig content", field="kubeconfig", value="")
        if doc.kubeconfig is not KEEP_SECRET:
            try:
                read_kubeconfig(doc.kubeconfig, doc.kube_context)
            except KubeconfigError as error:
                raise ConfigError(str(error), field="kubeconfig", value="<not shown>") from None
    if doc.ca_cert and "-----BEGIN CERTIFICATE-----" not in doc.ca_cert:
        raise ConfigError(
            "must be PEM certificates (-----BEGIN CERTIFICATE-----)", field="ca_cert", value=doc.ca_cert[:40]
        )


BACKEND = Schema(
    ConfigType.BACKEND,
    kind_label="backend",
    empty_body=True,
    warn_computed=False,
    computed=(
        "name",
        "k8s_uid",
        "k8s_namespace",
        "version",
        "last_heartbeat",
        "created_date",
        "online",
        "router_address",
        "tests",
        "node_conditions",
    ),
    fields=(
        Field("description", Text()),
        Field(
            "namespace",
            Text(
                pattern=r"[a-z0-9]([-a-z0-9]*[a-z0-9])?",
                max_length=63,
                message=("must be a Kubernetes namespace name (lowercase DNS-1123 label, ≤ 63 characters)"),
            ),
            default="default",
            or_default=True,
            help="Namespace for workload pods.",
        ),
        Field("scheduler_name", Text(), also_from="scheduler_settings", or_default=True),
        Field(
            "quota_scheduler",
            Choice(QUOTA_SCHEDULERS, f"must be one of {', '.join(QUOTA_SCHEDULERS)}"),
            default="portal",
            or_default=True,
            help=(
                "Who enforces quotas on this cluster: the portal (default), KAI-Scheduler (kai) or Kueue "
                "(kueue); with kai or kueue the portal writes the quotas as that scheduler's objects."
            ),
        ),
        Field("dashboard_url", Text(), or_default=True),
        Field("grafana_url", Text(), or_default=True),
        Field("connection", Text(strip=True), nullable=True),
        Field("api_url", Text(strip=True), nullable=True),
        Field("token", Secret(), nullable=True),
        Field("ca_cert", Text(strip=True), nullable=True),
        Field("verify_tls", Bool(), default=True, nullable=True),
        Field("kubeconfig", Secret(), nullable=True),
        Field("kube_context", Text(strip=True), nullable=True),
    ),
    checks=(_check_connection,),
)
