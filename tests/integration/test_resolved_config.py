"""Resolved config at save time, and the preview (CLI, admin) built on it."""

from __future__ import annotations

import json
from io import StringIO

import pytest
import yaml
from django.core.management import call_command
from django.urls import reverse

from configs import store
from configs.errors import ConfigError, ConfigNotFound
from pools.engine import CompiledPlatform
from pools.engine.errors import EngineError
from pools.models import Platform, Pool
from tests.integration.conftest import CLI

SMALL = {
    "backend": "default",
    "default_platform": "a100_platform",
    "common_default_variables": {"USER_CPU": 2, "USER_GPU": 1, "USER_MEMORY": "4Gi", "USER_STORAGE": "10Gi"},
    "common_resource_validations": ["default_cpu", "default_gpu"],
    "common_pod_template": ["default_user"],
    "platforms": {
        "a100_platform": {"override_pod_template": ["a100"]},
        "l40s_platform": {"override_pod_template": ["l40s"], "default_variables": {"USER_MEMORY": "8Gi"}},
    },
}


def preview_json(*args) -> dict:
    out = StringIO()
    call_command("pool", "preview", *args, "--format", "json", stdout=out)
    return json.loads(out.getvalue())


def test_every_platform_is_compiled_when_the_pool_is_saved(reference_config):
    store.apply("POOL", "small", SMALL, CLI)
    platform = Platform.objects.get(pool__name="small", name="a100_platform")
    compiled = CompiledPlatform.from_json(platform.compiled)
    assert compiled.node_selector == {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"}
    assert [name for name, _ in compiled.config.templates] == ["default_user", "a100"]


def test_demo_pools_all_compile(demo_pools):
    assert not Platform.objects.filter(compiled={}).exists()
    assert Platform.objects.count() == 12


def test_changing_a_template_recompiles_every_pool_that_uses_it(reference_config):
    store.apply("POOL", "small", SMALL, CLI)
    store.apply("POD_TEMPLATE", "a100", {"spec": {"nodeSelector": {"nvidia.com/gpu.product": "A100-NEW"}}}, CLI)
    platform = Platform.objects.get(pool__name="small", name="a100_platform")
    assert CompiledPlatform.from_json(platform.compiled).node_selector == {"nvidia.com/gpu.product": "A100-NEW"}


@pytest.mark.parametrize(
    ("template", "field_part", "reason_part"),
    [
        (
            {
                "spec": {
                    "containers": [{"name": "{{USER_CONTAINER_NAME}}", "env": [{"name": "X", "value": "{{NOPE}}"}]}]
                }
            },
            "platforms.a100_platform",
            "NOPE",
        ),
        ({"spec": {"restartPolicy": "Sometimes"}}, "restartPolicy", "Sometimes"),
        (
            {"spec": {"containers": [{"name": "{{USER_CONTAINER_NAME}}", "resources": {"limits": {"cpu": "1K"}}}]}},
            "resources.limits.cpu",
            "",
        ),
        ({"spec": {"nodeSelectr": {"a": "b"}}}, "nodeSelectr", ""),
    ],
)
def test_a_template_that_cannot_make_a_valid_pod_is_refused_with_its_path(
    reference_config, template, field_part, reason_part
):
    store.apply("POOL", "small", SMALL, CLI)
    with pytest.raises(ConfigError) as caught:
        store.apply("POD_TEMPLATE", "a100", template, CLI)
    assert field_part in caught.value.field, caught.value
    assert reason_part in str(caught.value)
    assert caught.value.reason.startswith("platform a100_platform:")
    assert store.show("POD_TEMPLATE", "a100")["spec"]["nodeSelector"]  # the old template is intact


def test_a_rule_that_cannot_evaluate_is_refused(reference_config):
    store.apply(
        "RESOURCE_VALIDATION",
        "odd",
        [
            {
                "operator": "LE",
                "left_operand": "{{K8_MEMORY}} * 0.8",
                "right_operand": "{{USER_MEMORY}}",
                "assert_message": "m",
            }
        ],
        CLI,
    )
    with pytest.raises(ConfigError) as caught:
        store.apply("POOL", "small", {**SMALL, "common_resource_validations": ["odd"]}, CLI)
    assert caught.value.field.startswith("platforms.")
    assert not Pool.objects.filter(name="small").exists()


def test_preview_cli_json_has_pod_provenance_warnings_validation(reference_config):
    store.apply("POOL", "small", SMALL, CLI)
    result = preview_json("small", "--gpu", "2", "--cpu", "500m", "--memory", "3Gi", "--task", "train")
    assert {"pod", "provenance", "warnings", "validation"} <= set(result)
    container = result["pod"]["spec"]["containers"][0]
    assert container["name"] == "train"
    assert str(container["resources"]["limits"]["nvidia.com/gpu"]) == "2"
    assert result["pod"]["spec"]["nodeSelector"] == {  # the platform's, and its node pool's (confinement)
        "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB",
        "pool-portal/node-pool": "default-default",
    }
    assert result["provenance"]['spec.nodeSelector["pool-portal/node-pool"]'] == {
        "source": "added by the portal: node pool default-default"
    }
    origin = result["provenance"]['spec.containers[0].resources.limits["nvidia.com/gpu"]']
    assert origin["template"] == "default_user"
    assert {"name": "USER_GPU", "layer": "task"} in origin["variables"]
    assert result["validation"]["ok"] is True


def test_preview_uses_platform_defaults_and_set_variables(reference_config):
    store.apply("POD_TEMPLATE", "team_label", {"metadata": {"labels": {"team": "{{TEAM}}"}}}, CLI)
    pool = {
        **SMALL,
        "common_pod_template": ["default_user", "team_label"],
        "common_default_variables": {**SMALL["common_default_variables"], "TEAM": "robotics"},
    }
    store.apply("POOL", "small", pool, CLI)
    result = preview_json("small", "--platform", "l40s_platform", "--cpu", "3", "--set", "TEAM=vision")
    limits = result["pod"]["spec"]["containers"][0]["resources"]["limits"]
    assert str(limits["memory"]) == "8Gi" and str(limits["cpu"]) == "3"
    origin = result["provenance"]["spec.containers[0].resources.limits.memory"]
    assert {"name": "USER_MEMORY", "layer": "platform"} in origin["variables"]
    assert result["pod"]["metadata"]["labels"]["team"] == "vision"
    assert {"name": "TEAM", "layer": "task"} in result["provenance"]["metadata.labels.team"]["variables"]


def test_preview_yaml_format(reference_config):
    store.apply("POOL", "small", SMALL, CLI)
    out = StringIO()
    call_command("pool", "preview", "small", "--format", "yaml", stdout=out)
    assert yaml.safe_load(out.getvalue())["pod"]["kind"] == "Pod"


@pytest.mark.parametrize(
    ("args", "error", "field"),
    [
        (["ghost"], ConfigNotFound, "pool"),
        (["small", "--platform", "h100"], ConfigError, "platform"),
        (["small", "--memory", "1K"], EngineError, ""),
        (["small", "--set", "oops"], ConfigError, "--set"),
    ],
)
def test_preview_errors_are_clean(reference_config, args, error, field):
    store.apply("POOL", "small", SMALL, CLI)
    with pytest.raises(error) as caught:
        preview_json(*args)
    if field:
        assert caught.value.field == field
    assert "1K" in str(caught.value) or args[-1] != "1K"


def test_preview_refuses_a_gpu_request_the_rules_forbid(reference_config):
    store.apply(
        "RESOURCE_VALIDATION",
        "max2",
        [{"operator": "LE", "left_operand": "{{USER_GPU}}", "right_operand": "2", "assert_message": "at most 2 GPUs"}],
        CLI,
    )
    store.apply("POOL", "small", {**SMALL, "common_resource_validations": ["max2"]}, CLI)
    result = preview_json("small", "--gpu", "4")
    assert result["validation"]["ok"] is False
    assert result["validation"]["static"][0]["message"] == "at most 2 GPUs"


def test_admin_preview_page_shows_yaml_with_provenance_and_verdict(admin_client, reference_config):
    store.apply("POOL", "small", SMALL, CLI)
    pool = Pool.objects.get(name="small")
    url = reverse("admin:pools_pool_preview", args=[pool.pk])
    assert admin_client.get(url).status_code == 200
    page = admin_client.get(url, {"platform": "a100_platform", "gpu": "1", "task": "train", "variables": ""})
    html = page.content.decode()
    assert "Valid: this task would be accepted on a100_platform" in html
    assert "nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB" in html and "template a100" in html
    bad = admin_client.get(url, {"platform": "a100_platform", "memory": "1K", "task": "train"}).content.decode()
    assert 'id="preview-errors"' in bad and "1K" in bad
    change = admin_client.get(reverse("admin:pools_pool_change", args=[pool.pk])).content.decode()
    assert url in change
