"""Parse and validate configuration documents in OSMO's JSON shapes (shared docs osmo-reference §1).

Pure functions: they check shape and values and return plain dataclasses; whether referenced names
exist is checked by `configs.store`, which has the database.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from configs.errors import ConfigError
from configs.validators import (
    check_name,
    check_timeouts,
    expect_bool,
    expect_mapping,
    expect_str,
    normalize_exit_actions,
)

VARIABLE_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
TIMEOUT_FIELDS = ("default_exec_timeout", "default_queue_timeout", "max_exec_timeout", "max_queue_timeout")
POD_TEMPLATE_TOP_LEVEL = ("apiVersion", "kind", "metadata", "spec")
RULE_FIELDS = ("operator", "left_operand", "right_operand", "assert_message")
RULE_OPERATORS = ("GT", "GE", "LT", "LE", "EQ", "NE")

# Fields OSMO computes or emits in verbose views; accepted on import and ignored so exports round-trip.
_POOL_READ_ONLY = ("status", "parsed_pod_template", "parsed_resource_validations", "parsed_group_templates",
                   "parsed_pod_template_for_accounting", "last_heartbeat")
_PLATFORM_READ_ONLY = ("default_mounts", "labels", "tolerations", "parsed_pod_template",
                       "parsed_resource_validations", "parsed_pod_template_for_accounting")


@dataclass
class PlatformDoc:
    name: str
    description: str = ""
    host_network_allowed: bool = False
    privileged_allowed: bool = False
    default_variables: dict = field(default_factory=dict)
    resource_validations: list[str] = field(default_factory=list)
    override_pod_template: list[str] = field(default_factory=list)
    allowed_mounts: list[str] = field(default_factory=list)


@dataclass
class PoolDoc:
    name: str
    backend: str
    description: str = ""
    default_platform: str = ""
    download_type: str = ""
    timeouts: dict[str, str] = field(default_factory=dict)
    default_exit_actions: dict[str, str] = field(default_factory=dict)
    gpu: dict | None = None
    enable_maintenance: bool = False
    common_default_variables: dict = field(default_factory=dict)
    common_resource_validations: list[str] = field(default_factory=list)
    common_pod_template: list[str] = field(default_factory=list)
    topology_keys: list[dict] = field(default_factory=list)
    platforms: list[PlatformDoc] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


@dataclass
class BackendDoc:
    name: str
    description: str = ""
    namespace: str = "default"
    scheduler_name: str = ""
    dashboard_url: str = ""
    grafana_url: str = ""
    connection: str = ""
    api_url: str = ""
    token: str | object = ""  # KEEP_SECRET: keep the stored value (the document showed a `<set …>` marker)
    ca_cert: str = ""
    verify_tls: bool = True
    kubeconfig: str | object = ""  # KEEP_SECRET as for token
    kube_context: str = ""
    warnings: list[str] = field(default_factory=list)


SECRET_FIELDS = ("token", "kubeconfig")
KEEP_SECRET = type("KeepSecret", (), {"__repr__": lambda self: "KEEP_SECRET"})()
SECRET_MARKER_RE = re.compile(r"^<set(?: [0-9a-f]{8})?>$")
CONNECTIONS = ("", "kubeconfig", "in-cluster", "url")
_CONNECTION_FIELDS = ("connection", "api_url", "token", "ca_cert", "verify_tls", "kubeconfig", "kube_context")


def parse_pool(name: str, body: object) -> PoolDoc:
    body = expect_mapping(body, "")
    check_name(name)
    warnings = _drop_read_only(body, _POOL_READ_ONLY, "pool")
    if "action_permissions" in body:
        body.pop("action_permissions")
        warnings.append("action_permissions was removed in OSMO 6.2 and is ignored; grant workflow actions with roles")
    allowed = {"name", "description", "backend", "default_platform", "download_type", *TIMEOUT_FIELDS,
               "default_exit_actions", "resources", "enable_maintenance", "common_default_variables",
               "common_resource_validations", "common_pod_template", "common_group_templates",
               "topology_keys", "platforms"}
    _reject_unknown(body, allowed, "")
    if body.get("common_group_templates"):
        raise ConfigError("group templates are not supported yet; leave this list empty",
                          field="common_group_templates", value=body["common_group_templates"])
    if not body.get("backend"):
        raise ConfigError("a pool needs a backend (the name of the cluster it runs on)", field="backend",
                          value=body.get("backend"))
    timeouts = {key: expect_str(body.get(key, ""), key) for key in TIMEOUT_FIELDS}
    check_timeouts(timeouts)
    doc = PoolDoc(
        name=name,
        backend=expect_str(body["backend"], "backend"),
        description=expect_str(body.get("description", ""), "description"),
        default_platform=expect_str(body.get("default_platform") or "", "default_platform"),
        download_type=expect_str(body.get("download_type") or "", "download_type"),
        timeouts=timeouts,
        default_exit_actions=normalize_exit_actions(body.get("default_exit_actions")),
        gpu=_parse_gpu_resources(body.get("resources")),
        enable_maintenance=expect_bool(body.get("enable_maintenance", False), "enable_maintenance"),
        common_default_variables=_variables(body.get("common_default_variables"), "common_default_variables"),
        common_resource_validations=_names(body.get("common_resource_validations"), "common_resource_validations"),
        common_pod_template=_names(body.get("common_pod_template"), "common_pod_template"),
        topology_keys=_topology_keys(body.get("topology_keys")),
        platforms=_platforms(body.get("platforms")),
        warnings=warnings,
    )
    _check_default_platform(doc)
    return doc


def _check_default_platform(doc: PoolDoc) -> None:
    names = [p.name for p in doc.platforms]
    if doc.default_platform and doc.default_platform not in names:
        known = ", ".join(names) or "none"
        raise ConfigError(f"is not a platform of this pool (platforms: {known})", field="default_platform",
                          value=doc.default_platform)


def _platforms(value: object) -> list[PlatformDoc]:
    platforms = expect_mapping(value if value is not None else {}, "platforms")
    return [_platform(name, body) for name, body in platforms.items()]


def _platform(name: str, body: object) -> PlatformDoc:
    where = f"platforms.{name}"
    check_name(name, where)
    body = expect_mapping(body if body is not None else {}, where)
    _drop_read_only(body, _PLATFORM_READ_ONLY, "platform")
    allowed = {"description", "host_network_allowed", "privileged_allowed", "default_variables",
               "resource_validations", "override_pod_template", "allowed_mounts"}
    if "override_resource_validations" in body:
        raise ConfigError("unknown field; the platform field is called resource_validations",
                          field=f"{where}.override_resource_validations", value=body["override_resource_validations"])
    _reject_unknown(body, allowed, where)
    return PlatformDoc(
        name=name,
        description=expect_str(body.get("description", ""), f"{where}.description"),
        host_network_allowed=expect_bool(body.get("host_network_allowed", False), f"{where}.host_network_allowed"),
        privileged_allowed=expect_bool(body.get("privileged_allowed", False), f"{where}.privileged_allowed"),
        default_variables=_variables(body.get("default_variables"), f"{where}.default_variables"),
        resource_validations=_names(body.get("resource_validations"), f"{where}.resource_validations"),
        override_pod_template=_names(body.get("override_pod_template"), f"{where}.override_pod_template"),
        allowed_mounts=_mounts(body.get("allowed_mounts"), f"{where}.allowed_mounts"),
    )


def _parse_gpu_resources(value: object) -> dict | None:
    if value in (None, {}):
        return None
    resources = expect_mapping(value, "resources")
    _reject_unknown(resources, {"gpu"}, "resources")
    gpu = resources.get("gpu")
    if gpu is None:
        return None
    gpu = expect_mapping(gpu, "resources.gpu")
    _reject_unknown(gpu, {"guarantee", "maximum", "weight"}, "resources.gpu")
    result = {}
    for key, default, minimum in (("guarantee", -1, -1), ("maximum", -1, -1), ("weight", 1, 0)):
        number = gpu.get(key, default)
        if isinstance(number, bool) or not isinstance(number, int) or number < minimum:
            raise ConfigError(f"must be an integer ≥ {minimum}", field=f"resources.gpu.{key}", value=number)
        result[key] = number
    if result["maximum"] != -1 and result["guarantee"] > result["maximum"]:
        raise ConfigError(f"is larger than resources.gpu.maximum ({result['maximum']})",
                          field="resources.gpu.guarantee", value=result["guarantee"])
    return result


def _topology_keys(value: object) -> list[dict]:
    keys = _list(value, "topology_keys")
    for index, item in enumerate(keys):
        where = f"topology_keys[{index}]"
        item = expect_mapping(item, where)
        _reject_unknown(item, {"key", "label"}, where)
        for part in ("key", "label"):
            if not isinstance(item.get(part), str) or not item[part]:
                raise ConfigError("is required (a non-empty string)", field=f"{where}.{part}", value=item.get(part))
    return keys


def parse_backend(name: str, body: object) -> BackendDoc:
    check_name(name)
    body = expect_mapping(body if body is not None else {}, "")
    scheduler = body.pop("scheduler_settings", None)
    body.pop("name", None)
    _drop_read_only(body, ("k8s_uid", "k8s_namespace", "version", "last_heartbeat", "created_date", "online",
                           "router_address", "tests", "node_conditions"), "backend")
    _reject_unknown(body, {"description", "namespace", "scheduler_name", "dashboard_url", "grafana_url",
                           *_CONNECTION_FIELDS}, "")
    scheduler_name = body.get("scheduler_name", "")
    if scheduler is not None:
        scheduler_name = expect_mapping(scheduler, "scheduler_settings").get("scheduler_name", scheduler_name)
    namespace = expect_str(body.get("namespace") or "default", "namespace")
    if not re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", namespace) or len(namespace) > 63:
        raise ConfigError("must be a Kubernetes namespace name (lowercase DNS-1123 label, ≤ 63 characters)",
                          field="namespace", value=namespace)
    return BackendDoc(
        name=name,
        description=expect_str(body.get("description", ""), "description"),
        namespace=namespace,
        scheduler_name=expect_str(scheduler_name or "", "scheduler_name"),
        dashboard_url=expect_str(body.get("dashboard_url") or "", "dashboard_url"),
        grafana_url=expect_str(body.get("grafana_url") or "", "grafana_url"),
        **_connection(body),
    )


def _connection(body: dict) -> dict:
    """Connection settings (shared docs design §3: kubeconfig content, in-cluster, or URL + token + CA).

    Secrets (`token`, `kubeconfig`) come back from `config show` as `<set …>` markers; a marker means
    "keep what is stored" (KEEP_SECRET), so a shown document can be applied again unchanged.
    """
    values = {key: body.get(key) for key in _CONNECTION_FIELDS if body.get(key) is not None}
    for key in ("connection", "api_url", "ca_cert", "kube_context", "token", "kubeconfig"):
        values[key] = expect_str(values.get(key, ""), key).strip()
    for key in ("token", "kubeconfig"):
        if SECRET_MARKER_RE.match(values[key]):
            values[key] = KEEP_SECRET
    values["verify_tls"] = expect_bool(values.get("verify_tls", True), "verify_tls")
    connection = values["connection"]
    if not connection:
        connection = "kubeconfig" if values["kubeconfig"] else "url" if values["api_url"] else ""
    if connection not in CONNECTIONS:
        raise ConfigError(f"unknown connection; expected one of {', '.join(c for c in CONNECTIONS if c)} "
                          "(or leave it empty)", field="connection", value=connection)
    if connection == "url" and not re.match(r"^https?://[^\s/]+", values["api_url"]):
        raise ConfigError("connection 'url' needs api_url, the API server URL (https://host:port)",
                          field="api_url", value=values["api_url"])
    if connection == "kubeconfig":
        if not values["kubeconfig"]:
            raise ConfigError("connection 'kubeconfig' needs the kubeconfig content", field="kubeconfig",
                              value="")
        if values["kubeconfig"] is not KEEP_SECRET:
            from pools.kube.kubeconfig import KubeconfigError, read_kubeconfig  # YAML only, no client

            try:
                read_kubeconfig(values["kubeconfig"], values["kube_context"])
            except KubeconfigError as error:
                raise ConfigError(str(error), field="kubeconfig", value="<not shown>") from None
    if values["ca_cert"] and "-----BEGIN CERTIFICATE-----" not in values["ca_cert"]:
        raise ConfigError("must be PEM certificates (-----BEGIN CERTIFICATE-----)", field="ca_cert",
                          value=values["ca_cert"][:40])
    values["connection"] = connection
    return values


def parse_pod_template(name: str, body: object) -> dict:
    check_name(name)
    body = expect_mapping(body, "")
    unknown = sorted(set(body) - set(POD_TEMPLATE_TOP_LEVEL))
    if unknown:
        raise ConfigError(f"a pod template is a partial Pod manifest; allowed top-level fields are "
                          f"{', '.join(POD_TEMPLATE_TOP_LEVEL)}", field=unknown[0], value=unknown[0])
    for key in ("metadata", "spec"):
        if key in body and not isinstance(body[key], dict):
            raise ConfigError("must be a mapping", field=key, value=body[key])
    return body


def parse_resource_validation(name: str, body: object) -> list[dict]:
    check_name(name)
    rules = _list(body, "")
    for index, rule in enumerate(rules):
        where = f"[{index}]"
        rule = expect_mapping(rule, where)
        _reject_unknown(rule, set(RULE_FIELDS), where)
        for key in RULE_FIELDS:
            if key not in rule:
                raise ConfigError("is required", field=f"{where}.{key}", value=None)
            if isinstance(rule[key], bool) or not isinstance(rule[key], (str, int, float)):
                raise ConfigError("must be a string or number", field=f"{where}.{key}", value=rule[key])
        if str(rule["operator"]).upper() not in RULE_OPERATORS:
            raise ConfigError(f"unknown operator; expected one of {', '.join(RULE_OPERATORS)}",
                              field=f"{where}.operator", value=rule["operator"])
    return [{**rule, "operator": str(rule["operator"]).upper()} for rule in rules]


# --- small typed readers -------------------------------------------------------------------------



def _list(value: object, where: str) -> list:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ConfigError(f"must be a list, not {type(value).__name__}", field=where or "(document)", value=value)
    return list(value)




def _names(value: object, where: str) -> list[str]:
    names = _list(value, where)
    for index, item in enumerate(names):
        check_name(item, f"{where}[{index}]")
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ConfigError("lists the same name twice", field=where, value=duplicates[0])
    return names


def _variables(value: object, where: str) -> dict:
    variables = expect_mapping(value if value is not None else {}, where)
    for key, item in variables.items():
        if not VARIABLE_NAME_RE.match(str(key)):
            raise ConfigError("variable names are letters, digits and '_', not starting with a digit",
                              field=f"{where}.{key}", value=key)
        if item is not None and not isinstance(item, (str, int, float, bool, list)):
            raise ConfigError("a variable value is a string, number, boolean or list", field=f"{where}.{key}",
                              value=item)
    return variables


def _mounts(value: object, where: str) -> list[str]:
    mounts = _list(value, where)
    for index, mount in enumerate(mounts):
        if not isinstance(mount, str) or not mount.startswith("/"):
            raise ConfigError("must be an absolute host path such as /data", field=f"{where}[{index}]", value=mount)
    return mounts


def _reject_unknown(body: dict, allowed: set[str], where: str) -> None:
    unknown = sorted(set(body) - allowed)
    if unknown:
        prefix = f"{where}." if where else ""
        raise ConfigError(f"unknown field; allowed fields are {', '.join(sorted(allowed))}",
                          field=f"{prefix}{unknown[0]}", value=unknown[0])


def _drop_read_only(body: dict, keys: tuple[str, ...], kind: str) -> list[str]:
    dropped = [key for key in keys if key in body]
    for key in dropped:
        body.pop(key)
    return [f"{kind} field {key} is computed by the portal and was ignored" for key in dropped]
