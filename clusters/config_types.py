"""BACKEND and MACHINE_POOL: the config types the clusters app owns, described once (see configs.schema);
their handlers, with what needs the database (secrets kept across a shown document, known backends and
instance types), are clusters.config_handlers. MACHINE_POOL's document is described in docs/machine-pools.md.

Descriptions only: no model import, so clusters.models can take its described columns from here.
"""

from __future__ import annotations

import re

from clusters.kube.kubeconfig import KubeconfigError, read_kubeconfig  # YAML only, no Kubernetes client
from clusters.machinepools.kinds import (
    DISK_DEFAULT_GIB,
    DISK_MAX_GIB,
    DISK_MIN_GIB,
    Autoscaling,
    DiskSize,
    Labels,
    Price,
    Replicas,
    Taints,
)
from clusters.machinepools.provider_limits import (
    REGION_RE,
    ROSA_TOPOLOGIES,
    AwsTags,
    Disruption,
    NodePoolLimits,
    Requirements,
    SecurityGroups,
    Subnets,
    Zones,
)
from clusters.machinepools.providers import registry as providers
from clusters.machinepools.syntax import pool_name_problem
from configs.errors import ConfigError
from configs.kinds import KEEP_SECRET, Bool, Choice, Reference, Secret, Text
from configs.models import ConfigType
from configs.schema import Doc, Field, Schema

CONNECTIONS = ("", "kubeconfig", "in-cluster", "url")
# Who enforces the quotas of this cluster's node pools: the portal's own admission (default), or the
# cluster's KAI-Scheduler or Kueue, to which the portal writes the same quotas (docs/quota-schedulers.md).
QUOTA_SCHEDULERS = ("portal", "kai", "kueue")
# Who provisions the machines beneath the cluster's nodes (clusters.machinepools.providers.registry); "" =
# nobody, the portal only exports its machine pools (Terraform, `rosa create machinepool`).
MACHINE_PROVIDERS = tuple(name for name, _ in providers.CHOICES)
OCM_URL = "https://api.openshift.com"
CONTROL_IMAGE_HELP = (
    "Image of the osmo-ctrl container when its pod template names none (OSMO's default_ctrl); empty uses the "
    "OSMO_CTRL_IMAGE setting."
)  # OpenShift Cluster Manager's public API, what `rosa` talks to


def _check_connection(doc) -> None:
    """Connection settings (docs/clusters.md: kubeconfig content, in-cluster, or URL + token + CA);
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


def _check_machine_provider(doc) -> None:
    """Each provider's needs (providers.registry: ROSA the cluster's OCM id, Karpenter the EC2NodeClass its
    NodePools refer to); ROSA's API is OpenShift Cluster Manager's unless said."""
    kind = providers.BY_NAME.get(doc.machine_provider)
    for need in kind.needs if kind else ():
        if not getattr(doc, need.setting):
            raise ConfigError(f"machine_provider '{kind.name}' needs {need.what}", field=need.setting, value="")
    if doc.machine_provider == "rosa":
        doc.ocm_url = doc.ocm_url or OCM_URL
    if doc.ocm_url and not re.match(r"^https?://[^\s/]+", doc.ocm_url):
        raise ConfigError(
            "must be an http(s) URL such as https://api.openshift.com", field="ocm_url", value=doc.ocm_url
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
            "control_image",
            Text(
                strip=True,
                pattern=r"[a-z0-9][^\s]*",
                max_length=1024,
                message=(
                    "must be an image reference such as nvcr.io/nvidia/osmo/osmo-ctrl:6.0 (no spaces, at most "
                    "1024 characters), or empty for the OSMO_CTRL_IMAGE setting"
                ),
            ),
            or_default=True,
            help=CONTROL_IMAGE_HELP,
        ),
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
        Field(
            "machine_provider",
            Choice(
                MACHINE_PROVIDERS, "must be rosa, karpenter or empty (no provider: machine pools are only exported)"
            ),
            nullable=True,
            help="Who provisions machine pools: rosa (OpenShift Cluster Manager) or karpenter; empty: none.",
        ),
        Field("ocm_url", Text(strip=True), nullable=True, label="OCM URL"),
        Field("ocm_cluster_id", Text(strip=True), nullable=True, label="OCM cluster id"),
        Field("ocm_token", Secret(), nullable=True, label="OCM token"),
        Field("karpenter_node_class", Text(strip=True), default="default", or_default=True),
        Field(
            "rosa_topology",
            Choice(ROSA_TOPOLOGIES, "must be hcp (hosted control planes) or classic"),
            default="hcp",
            or_default=True,
            omit_default=True,
            label="ROSA topology",
            help="ROSA only: hcp (hosted control planes, up to 500 nodes) or classic (up to 249 nodes).",
        ),
        Field(
            "aws_region",
            Text(strip=True, pattern=f"({REGION_RE.pattern})?", message="must be an AWS region such as us-east-1"),
            default="",
            or_default=True,
            omit_default=True,
            label="AWS region",
            help="The cluster's AWS region (e.g. us-east-1): machine pool zones and instance types are checked in it.",
        ),
    ),
    checks=(_check_connection, _check_machine_provider),
)

# Secrets of a backend document: shown as `<set …>` markers, kept when a document brings the marker back.
BACKEND_SECRETS = ("token", "kubeconfig", "ocm_token")


def _check_machine_pool(doc: Doc) -> None:
    """Cross-field rules: a name that is a DNS label, replicas or autoscaling (exactly one of them; min ≤ max
    is the autoscaling kind's own check), a max price only for spot."""
    problem = pool_name_problem(doc.name)
    if problem:
        raise ConfigError(problem, field="name", value=doc.name)
    scaling = doc.min_replicas is not None
    if scaling and doc.replicas is not None:
        raise ConfigError(
            "give either replicas (a fixed node count) or autoscaling {min_replicas, max_replicas}, not both",
            field="replicas",
            value=doc.replicas,
        )
    if not scaling and doc.replicas is None:
        raise ConfigError(
            "give replicas (a fixed node count) or autoscaling {min_replicas, max_replicas}",
            field="autoscaling",
            value=None,
        )
    doc.autoscaling = scaling
    if scaling:
        doc.replicas = 0
    else:
        doc.min_replicas = doc.max_replicas = 0
    if doc.max_price is not None and not doc.spot:
        raise ConfigError(
            "a max price is for spot instances only: set spot to true, or leave max_price null",
            field="max_price",
            value=str(doc.max_price),
        )


MACHINE_POOL = Schema(
    ConfigType.MACHINE_POOL,
    kind_label="machine pool",
    fields=(
        Field(
            "backend",
            Reference(),
            required="a machine pool needs a backend (the name of the cluster its machines join)",
        ),
        Field("description", Text()),
        Field(
            "instance_type",
            Text(strip=True),
            required="a machine pool needs an instance type (e.g. m5.xlarge, g4dn.xlarge)",
            help="The machines' instance type (the catalog under Clusters > Instance types).",
        ),
        Field("replicas", Replicas(), default=None, help="A fixed node count (instead of autoscaling)."),
        Field("autoscaling", Autoscaling(), attr=None),
        Field("labels", Labels(), default={}, help='Node labels, e.g. {"node-type": "gpu"}.'),
        Field(
            "taints",
            Taints(),
            default=[],
            help='[{"key", "value", "effect"}], effect NoSchedule, PreferNoSchedule or NoExecute.',
        ),
        Field("spot", Bool(), default=False, help="Spot instances (cheaper; may be reclaimed at two minutes' notice)."),
        Field("max_price", Price(), default=None, help="Spot only: USD per hour; empty = capped at on-demand."),
        Field(
            "disk_size",
            DiskSize(),
            default=DISK_DEFAULT_GIB,
            attr="disk_size_gib",
            label="Disk size (GiB)",
            help=f"Root volume, GiB ({DISK_MIN_GIB}–{DISK_MAX_GIB}).",
        ),
        Field(
            "availability_zones",
            omit_default=True,
            kind=Zones(),
            default=[],
            help="AWS availability zones; empty: the cluster's.",
        ),
        Field(
            "subnets",
            omit_default=True,
            kind=Subnets(),
            default=[],
            help="ROSA: one subnet for a single-AZ pool; empty: the cluster's.",
        ),
        Field(
            "security_groups",
            omit_default=True,
            kind=SecurityGroups(),
            default=[],
            help="ROSA: additional security group ids.",
        ),
        Field(
            "aws_tags",
            omit_default=True,
            kind=AwsTags(),
            default={},
            label="AWS tags",
            help="ROSA: AWS tags on the pool's instances.",
        ),
        Field(
            "requirements",
            omit_default=True,
            kind=Requirements(),
            default=[],
            help="Karpenter: further NodePool requirements.",
        ),
        Field(
            "limits",
            omit_default=True,
            kind=NodePoolLimits(),
            default={},
            help="Karpenter: cpu, memory, nvidia.com/gpu limits.",
        ),
        Field(
            "disruption",
            omit_default=True,
            kind=Disruption(),
            default={},
            help="Karpenter: consolidation policy and budgets.",
        ),
    ),
    checks=(_check_machine_pool,),
)
