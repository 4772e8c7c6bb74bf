"""A refused save's page fits a phone (issue #35): the config store's admin forms (pod template, resource
validation, pool, platform, machine pool) re-rendered with an error that quotes a long unbroken document path
or value, e.g. `platforms.a100_platform.spec.containers[1].resources.limits[nvidia.com/gpu]`, are no wider than
390 px (the error wraps; before, the form's fieldset grew to the word's width: 88 px too wide for that one).
Screenshots: var/screenshots/admin-error-<form>-<width>.png."""

from __future__ import annotations

import pytest

from clusters.models import MachinePool
from pools.models import Platform, PodTemplate, Pool, ResourceValidation
from tests.e2e.looks import DESKTOP, PHONE, SHOTS, collect_failures, page_overflow, sign_in_admin
from tests.integration.conftest import demo_pools, reference_config  # noqa: F401  (fixtures)
from tests.selfservice.conftest import demo_world  # noqa: F401  (fixture)

FRAMES = "() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))"  # 2 frames drawn
RACK_KEY = "example.com/gpu.product.of.the.machines.in.the.east.rack.and.then.some"  # no break but after its /
LONG_OPERATOR = "LESS_THAN_OR_EQUAL_TO_THE_NUMBER_OF_GPUS_ON_THE_NODE"
LONG_TOPOLOGY = "cloud.example.com.topology.rack.of.the.training.machines.in.the.east.wing"
RELATIVE_MOUNT = "datasets_of_the_robotics_team.grasping_with_all_cameras_and_depth_and_proprioception"


def refused_saves() -> list[tuple[str, str, list[tuple[str, str]], str]]:
    """(name, change form path, (selector, text typed) each, words of the error the save shows at its field)."""
    template = PodTemplate.objects.get(name="default_user")  # the demo pools' platforms resolve it
    validation = ResourceValidation.objects.get(name="default_cpu")
    pool = Pool.objects.order_by("name").first()
    platform = Platform.objects.order_by("name").first()
    machine_pool = MachinePool.objects.exclude(taints=[]).order_by("name").first()
    gpu_limit = "spec:\n  containers:\n  - name: osmo-ctrl\n    resources:\n      limits:\n"
    gpu_limit += "        nvidia.com/gpu: lots\n"
    rule = f"- operator: {LONG_OPERATOR}\n  left_operand: '{{{{USER_CPU}}}}'\n  right_operand: '{{{{K8_CPU}}}}'\n"
    rule += "  assert_message: too many CPUs\n"
    return [
        ("pod-template", f"/admin/pools/podtemplate/{template.pk}/change/", [("#id_body-code .cm-content", gpu_limit)],
         "resources.limits[nvidia.com/gpu]"),
        ("resource-validation", f"/admin/pools/resourcevalidation/{validation.pk}/change/",
         [("#id_rules-code .cm-content", rule)], LONG_OPERATOR),
        ("pool", f"/admin/pools/pool/{pool.pk}/change/", [("#id_topology_keys", f'["{LONG_TOPOLOGY}"]')],
         LONG_TOPOLOGY),
        ("platform", f"/admin/pools/platform/{platform.pk}/change/", [("#id_allowed_mounts", f'["{RELATIVE_MOUNT}"]')],
         RELATIVE_MOUNT),
        ("machine-pool", f"/admin/clusters/machinepool/{machine_pool.pk}/change/",
         [("input[name=taints-key] >> nth=0", RACK_KEY), ("input[name=taints-key] >> nth=1", RACK_KEY),
          ("input[name=taints-value] >> nth=1", "x")], "a second taint with key"),
    ]  # fmt: skip


@pytest.mark.django_db(transaction=True)
def test_a_refused_save_fits_a_phone(page, live_server, demo_world):  # noqa: F811
    base, failures = live_server.url, collect_failures(page)
    SHOTS.mkdir(parents=True, exist_ok=True)
    sign_in_admin(page, base, "boss")
    too_wide = {}
    for name, path, typed, words in refused_saves():
        page.set_viewport_size({"width": PHONE, "height": 844})
        page.goto(f"{base}{path}")
        for selector, text in typed:
            page.fill(selector, text)
        page.click("button[name=_continue]")
        error = page.locator(".errorlist li", has_text=words).first
        error.wait_for()
        for width in (PHONE, DESKTOP):
            page.set_viewport_size({"width": width, "height": 844 if width == PHONE else 900})
            page.evaluate(FRAMES)  # laid out again for the new width (the code editors measure themselves)
            page.screenshot(path=str(SHOTS / f"admin-error-{name}-{width}.png"), full_page=True)
            overflow = page_overflow(page)
            print(f"{name} refused at {width} px: {overflow} px wider than the window")
            if overflow:
                too_wide[f"{name}@{width}"] = overflow
    assert too_wide == {}
    assert failures == []
