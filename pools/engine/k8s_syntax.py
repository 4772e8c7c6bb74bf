"""Kubernetes name and label syntax (apimachinery/pkg/util/validation), plus the path style we report.

Each `*_error` function returns None when the value is valid, else a short human reason.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_LABEL_PART = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_LABEL = re.compile(_LABEL_PART)
_DNS1123_SUBDOMAIN = re.compile(rf"{_LABEL_PART}(\.{_LABEL_PART})*")
_QUALIFIED_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
_IANA_SVC_NAME = re.compile(r"[a-z0-9]([a-z0-9-]*[a-z0-9])*")
_SIMPLE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_DECIMAL_INTEGER = re.compile(r"-?(0|[1-9][0-9]*)")

LABEL_MAX = 63
SUBDOMAIN_MAX = 253


def dns1123_label_error(value: str) -> str | None:
    if len(value) > LABEL_MAX:
        return f"must be no more than {LABEL_MAX} characters"
    if not _DNS1123_LABEL.fullmatch(value):
        return "must be a DNS-1123 label: lowercase letters, digits and '-', starting and ending with a letter or digit"
    return None


def dns1123_subdomain_error(value: str) -> str | None:
    if len(value) > SUBDOMAIN_MAX:
        return f"must be no more than {SUBDOMAIN_MAX} characters"
    if not _DNS1123_SUBDOMAIN.fullmatch(value):
        return (
            "must be a DNS-1123 subdomain: lowercase letters, digits, '-' and '.', starting and ending "
            "with a letter or digit"
        )
    return None


def qualified_name_error(value: str) -> str | None:
    """Label keys, annotation keys, resource names: optional `prefix/` (a DNS subdomain) then a name."""
    parts = value.split("/")
    if len(parts) > 2:
        return "must be a qualified name: an optional DNS subdomain prefix and '/', then a name"
    if len(parts) == 2:
        prefix, name = parts
        if not prefix:
            return "prefix part must be non-empty"
        if (reason := dns1123_subdomain_error(prefix)) is not None:
            return f"prefix part {reason}"
    else:
        name = parts[0]
    if not name:
        return "name part must be non-empty"
    if len(name) > LABEL_MAX:
        return f"name part must be no more than {LABEL_MAX} characters"
    if not _QUALIFIED_NAME.fullmatch(name):
        return (
            "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
            "with an alphanumeric character"
        )
    return None


def is_label_value(value: object) -> bool:
    return isinstance(value, str) and len(value) <= LABEL_MAX and _LABEL_VALUE.fullmatch(value) is not None


def label_value_error(value: str) -> str | None:
    if len(value) > LABEL_MAX:
        return f"must be no more than {LABEL_MAX} characters"
    if not _LABEL_VALUE.fullmatch(value):
        return (
            "must be empty or consist of alphanumeric characters, '-', '_' or '.', and must start and end "
            "with an alphanumeric character"
        )
    return None


def port_name_error(value: str) -> str | None:
    """IANA_SVC_NAME: at most 15 characters, lowercase alphanumerics and '-', at least one letter."""
    if len(value) > 15:
        return "must be no more than 15 characters"
    if not _IANA_SVC_NAME.fullmatch(value):
        return "must contain only lowercase letters, digits and '-', starting and ending with a letter or digit"
    if "--" in value:
        return "must not contain consecutive hyphens"
    if not any(c.isalpha() for c in value):
        return "must contain at least one letter"
    return None


def is_canonical_decimal_integer(value: str) -> bool:
    """IsDecimalInteger: an optional '-', no '+', no leading zeros (used by Gt/Lt tolerations)."""
    return _DECIMAL_INTEGER.fullmatch(value) is not None


def path_join(base: str, key: str | int) -> str:
    """Append a key to a dotted path; ints and keys with '.' or '/' go in brackets: limits[nvidia.com/gpu]."""
    if isinstance(key, int):
        return f"{base}[{key}]"
    if _SIMPLE_KEY.fullmatch(key):
        return f"{base}.{key}" if base else key
    return f"{base}[{key}]"


def format_path(parts: Iterable[str | int]) -> str:
    path = ""
    for part in parts:
        path = path_join(path, part)
    return path
