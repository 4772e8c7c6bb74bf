"""Kubernetes' label and taint syntax, as the API server checks it (pure): a machine pool's labels and taints
are refused here, naming what is wrong, rather than by the provider after the portal accepted them.

Label key: an optional prefix (a DNS subdomain, ≤ 253 characters) and '/', then a name of ≤ 63 characters:
alphanumerics, '-', '_', '.', beginning and ending with an alphanumeric. Label value: empty or a name.
A taint's key is a label key, its value a label value, its effect one of TAINT_EFFECTS.
"""

from __future__ import annotations

import re

from clusters.machinepools.spec import TAINT_EFFECTS

NAME_RE = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")
PREFIX_RE = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
DNS_LABEL_RE = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
NAME_MAX, PREFIX_MAX = 63, 253


def label_key_problem(key: object) -> str:
    """Why `key` is not a Kubernetes label key ("" if it is one)."""
    if not isinstance(key, str) or not key:
        return "a label key is a non-empty string"
    prefix, _, name = key.rpartition("/")
    if "/" in key and (not prefix or len(prefix) > PREFIX_MAX or not PREFIX_RE.fullmatch(prefix)):
        return "the prefix before '/' must be a DNS subdomain (lowercase letters, digits, '-', '.'; ≤ 253 characters)"
    if len(name) > NAME_MAX or not NAME_RE.fullmatch(name):
        return (
            "a label name is at most 63 characters: letters, digits, '-', '_', '.', "
            "beginning and ending with a letter or digit"
        )
    return ""


def label_value_problem(value: object) -> str:
    """Why `value` is not a Kubernetes label value ("" if it is one)."""
    if not isinstance(value, str):
        return 'a label value is a string (quote numbers and booleans: "true")'
    if value and (len(value) > NAME_MAX or not NAME_RE.fullmatch(value)):
        return (
            "a label value is empty or at most 63 characters: letters, digits, '-', '_', '.', "
            "beginning and ending with a letter or digit"
        )
    return ""


def taint_effect_problem(effect: object) -> str:
    if effect not in TAINT_EFFECTS:
        return f"a taint's effect is one of {', '.join(TAINT_EFFECTS)}"
    return ""


def pool_name_problem(name: str) -> str:
    """A machine pool's name is a node label value and the prefix of its node names: a DNS label."""
    if len(name) > NAME_MAX or not DNS_LABEL_RE.fullmatch(name):
        return (
            "a machine pool name is a DNS label: at most 63 lowercase letters, digits and '-', "
            "starting with a letter and ending with a letter or digit"
        )
    return ""
