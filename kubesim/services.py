"""Services and pod DNS names as an API server validates them (k8s.io/kubernetes pkg/apis/core/validation).

* A Service's name is a DNS-1035 label (`ValidateServiceName`); `spec.ports` is required unless the Service is
  headless (`clusterIP: None`) or an ExternalName; each port is 1-65535; `spec.clusterIP` is "", "None" or an
  IP address; `spec.selector` keys and values are valid label keys and values.
* A pod's `spec.hostname` and `spec.subdomain` are DNS-1123 labels (`ValidatePodSpec`). With both set the pod
  is reachable as `<hostname>.<subdomain>.<namespace>.svc.cluster.local` while a headless Service named
  `<subdomain>` in its namespace selects it; inside the pod, `hostname` prints `spec.hostname`.

Refusals are 422 Invalid with the API server's words.
"""

from __future__ import annotations

import ipaddress
import re

from .resources import ApiError
from .selectors import LABEL_VALUE_RE

SERVICES = ("", "services")
_DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_DNS1123 = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_LABEL_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_DNS1035_MESSAGE = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic "
    "character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for "
    "validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)
_DNS1123_MESSAGE = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and "
    "end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)


def _label(value: object, pattern: re.Pattern, message: str, field: str) -> list[str]:
    text = str(value)
    if len(text) > 63:
        return [f'{field}: Invalid value: "{text}": must be no more than 63 characters']
    if not isinstance(value, str) or not pattern.match(text):
        return [f'{field}: Invalid value: "{text}": {message}']
    return []


def validate_service(obj: dict) -> None:
    name = str((obj.get("metadata") or {}).get("name", ""))
    problems = _label(name, _DNS1035, _DNS1035_MESSAGE, "metadata.name")
    spec = obj.get("spec") or {}
    if not isinstance(spec, dict):
        spec = {}
        problems.append("spec: Invalid value: must be an object")
    cluster_ip = spec.get("clusterIP", "")
    if cluster_ip not in ("", "None"):
        try:
            ipaddress.ip_address(str(cluster_ip))
        except ValueError:
            problems.append(f'spec.clusterIPs[0]: Invalid value: "{cluster_ip}": must be a valid IP address')
    ports = spec.get("ports") or []
    headless = cluster_ip == "None"
    if not ports and not headless and spec.get("type") != "ExternalName":
        problems.append("spec.ports: Required value")
    for index, port in enumerate(ports if isinstance(ports, list) else []):
        number = (port or {}).get("port") if isinstance(port, dict) else None
        if isinstance(number, bool) or not isinstance(number, int) or not 1 <= number <= 65535:
            problems.append(
                f"spec.ports[{index}].port: Invalid value: {number}: must be between 1 and 65535, inclusive"
            )
    selector = spec.get("selector") or {}
    for key, value in selector.items() if isinstance(selector, dict) else ():
        _, _, key_name = str(key).rpartition("/")
        if not _LABEL_NAME.match(key_name) or len(key_name) > 63:
            problems.append(f'spec.selector: Invalid value: "{key}": name part must be a valid label key')
        if not isinstance(value, str) or len(value) > 63 or not LABEL_VALUE_RE.match(value):
            problems.append(
                f'spec.selector: Invalid value: "{value}": a valid label must be an empty string or '
                "consist of alphanumeric characters, '-', '_' or '.'"
            )
    if problems:
        raise ApiError(422, f'Service "{name}" is invalid: ' + ", ".join(problems), "Invalid")


def validate_pod_dns(obj: dict) -> None:
    spec = obj.get("spec") or {}
    problems = []
    for field in ("hostname", "subdomain"):
        value = spec.get(field) if isinstance(spec, dict) else None
        if value not in (None, ""):
            problems += _label(value, _DNS1123, _DNS1123_MESSAGE, f"spec.{field}")
    if problems:
        name = (obj.get("metadata") or {}).get("name", "")
        raise ApiError(422, f'Pod "{name}" is invalid: ' + ", ".join(problems), "Invalid")


def hostname(pod: dict) -> str:
    """What `hostname` prints inside the pod: `spec.hostname`, else the pod's name."""
    return (pod.get("spec") or {}).get("hostname") or (pod.get("metadata") or {}).get("name", "")
