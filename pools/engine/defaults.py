"""OSMO's shipped defaults (osmo-reference §1.9): pod templates, resource validations and pool variables.

As OSMO ships them: `DEFAULT_POD_TEMPLATES`, `DEFAULT_RESOURCE_CHECKS` and `DEFAULT_VARIABLES` of NVIDIA/OSMO
src/service/core/config/objects.py (what `create_default_pool` in src/service/core/service.py installs), and the
chart's `default_gpu`. `default_ctrl`'s `osmo-ctrl` has no image, as in OSMO, whose service fills it in: the
resolution gives it the backend's control image (`WorkflowContext.control_image`, OSMO_CTRL_IMAGE by default).
"""

from __future__ import annotations

from types import MappingProxyType

from portal.json_paths import json_copy

__all__ = [
    "OSMO_CTRL_IMAGE",
    "OSMO_DEFAULT_POOL",
    "OSMO_DEFAULT_TEMPLATES",
    "OSMO_DEFAULT_VALIDATIONS",
    "OSMO_DEFAULT_VARIABLES",
    "default_templates",
    "default_validations",
]

OSMO_CTRL_IMAGE = "nvcr.io/nvidia/osmo/osmo-ctrl:6.0"  # the control image when neither backend nor settings name one


def _limits(*, gpu: bool) -> dict:
    limits = {"cpu": "{{USER_CPU}}", "memory": "{{USER_MEMORY}}"}
    if gpu:
        limits["nvidia.com/gpu"] = "{{USER_GPU}}"
    limits["ephemeral-storage"] = "{{USER_STORAGE}}"
    return limits


def _rule(operator: str, left: str, right: str, message: str) -> dict:
    return {"operator": operator, "left_operand": left, "right_operand": right, "assert_message": message}


_TEMPLATES = {
    "default_ctrl": {
        "spec": {
            "containers": [
                {
                    "name": "osmo-ctrl",
                    "resources": {
                        "limits": _limits(gpu=False),
                        "requests": {"cpu": "1", "memory": "1Gi", "ephemeral-storage": "1Gi"},
                    },
                }
            ],
        },
    },
    "default_user": {
        "spec": {
            "containers": [
                {
                    "name": "{{USER_CONTAINER_NAME}}",
                    "resources": {"limits": _limits(gpu=True), "requests": _limits(gpu=True)},
                }
            ],
        },
    },
}

_VALIDATIONS = {
    "default_cpu": [
        _rule("LE", "{{USER_CPU}}", "{{K8_CPU}}", "Value {{USER_CPU}} too high for CPU"),
        _rule("GT", "{{USER_CPU}}", "0", "Value {{USER_CPU}} needs to be greater than 0 for CPU"),
    ],
    "default_memory": [
        _rule("LE", "{{USER_MEMORY}}", "{{K8_MEMORY}}", "Value {{USER_MEMORY}} too high for memory"),
        _rule("GT", "{{USER_MEMORY}}", "0", "Value {{USER_MEMORY}} needs to be greater than 0 for memory"),
    ],
    "default_storage": [
        _rule("LT", "{{USER_STORAGE}}", "{{K8_STORAGE}}", "Value {{USER_STORAGE}} too high for storage"),
        _rule("GT", "{{USER_STORAGE}}", "0", "Value {{USER_STORAGE}} needs to be greater than 0 for storage"),
    ],
    "default_gpu": [  # from OSMO's Helm chart
        _rule("LE", "{{USER_GPU}}", "{{K8_GPU}}", "Value {{USER_GPU}} too high for GPU"),
        _rule("GE", "{{USER_GPU}}", "0", "Value {{USER_GPU}} needs to be at least 0 for GPU"),
    ],
}

# Read-only views; call default_templates()/default_validations() for mutable copies.
OSMO_DEFAULT_TEMPLATES = MappingProxyType(_TEMPLATES)
OSMO_DEFAULT_VALIDATIONS = MappingProxyType(_VALIDATIONS)
OSMO_DEFAULT_VARIABLES = MappingProxyType({"USER_CPU": 1, "USER_GPU": 0, "USER_MEMORY": "1Gi", "USER_STORAGE": "1Gi"})
OSMO_DEFAULT_POOL = MappingProxyType(
    {
        "name": "default",
        "backend": "default",
        "default_platform": "default",
        "common_pod_template": ("default_ctrl", "default_user"),
        "common_resource_validations": ("default_cpu", "default_memory", "default_storage", "default_gpu"),
        "common_default_variables": OSMO_DEFAULT_VARIABLES,
    }
)


def default_templates() -> dict[str, dict]:
    return json_copy(dict(_TEMPLATES))


def default_validations() -> dict[str, list[dict]]:
    return json_copy(dict(_VALIDATIONS))
