"""The admin's pod preview shows a task the way the self-service submit preview does (one partial,
pools.presenters): the inputs, the pod as indented YAML with each line's origin, the verdict with the nodes
that would take it and why not the others; and every invalid input at once."""

from __future__ import annotations

import html as html_lib
import re

import pytest
from django.urls import reverse

from pools.models import Pool
from tests.selfservice.conftest import TRAINING, load_fleet

SIZES = {"memory": "64Gi", "storage": "100Gi"}


@pytest.fixture
def training(demo_world):
    return Pool.objects.get(name=TRAINING)


def _page(admin_client, pool, **query) -> str:
    response = admin_client.get(reverse("admin:pools_pool_preview", args=[pool.pk]), query)
    assert response.status_code == 200
    return html_lib.unescape(response.content.decode())


def _origins(html: str) -> dict[str, str]:
    return dict(re.findall(r'<td class="code">([^<]*)</td><td class="note">([^<]*)</td>', html))


def test_the_pool_s_own_default_task_fits_its_gpu_nodes(admin_client, training):
    """The seed's defaults (16 CPUs, 64Gi, 500Gi of storage) fit the demo's training nodes, whose local NVMe is the
    kubelet's ephemeral storage: a researcher who gives no sizes is not refused."""
    html = _page(admin_client, training, platform=training.default_platform, task="train")
    assert 'data-verdict="fits"' in html and "ephemeral-storage: 500Gi" in html


def test_the_resolved_pod_with_origins_verdict_and_nodes(admin_client, training):
    html = _page(admin_client, training, platform=training.default_platform, task="train", gpu="2", cpu="8", **SIZES)
    assert 'id="preview-task-train"' in html and 'data-verdict="fits"' in html
    assert "Would start now: 4 nodes can take it" in html and '<span class="chip ok mono">h100-node-0</span>' in html
    origins = _origins(html)
    assert any(note.startswith("template ") for note in origins.values()), origins
    assert any("USER_GPU (task)" in note for note in origins.values())  # the task's input, named where it lands
    gpu_lines = {line: note for line, note in origins.items() if line.strip() == "nvidia.com/gpu: 2"}
    assert gpu_lines and all(line.startswith("        ") for line in gpu_lines)  # indented as in the pod
    assert all(note.endswith("← USER_GPU (task)") for note in gpu_lines.values())  # and where it was set
    # the inputs stay visible: the form keeps them and the task as given is shown as a spec would say it
    assert 'name="gpu" value="2"' in html and 'id="preview-inputs-used"' in html and "gpu: '2'" in html


def test_why_not_the_other_nodes(admin_client, training):
    load_fleet(busy={"h100-node-0": 8, "h100-node-1": 8, "h100-node-2": 7, "h100-node-3": 4})
    html = _page(admin_client, training, platform=training.default_platform, task="train", gpu="4", **SIZES)
    assert "Would start now: 1 node can take it" in html
    assert "Why not the other 3 nodes" in html and "Insufficient nvidia.com/gpu: requested 4, free 1 of 8" in html


def test_every_invalid_input_is_reported_at_once(admin_client, training):
    html = _page(
        admin_client,
        training,
        platform=training.default_platform,
        task="Bad_Name",
        cpu="lots",
        gpu="1.5",
        memory="64Gx",
        storage="",
        variables="FOO=1\nno equals sign\n9BAD=x",
    )
    summary = re.search(r'<div class="alert bad" id="preview-errors".*?</div>', html, re.S).group(0)
    assert "6 inputs to fix" in summary
    for label in ("Task", "CPU", "GPUs", "Memory", "Variables"):
        assert f"<strong>{label}</strong>" in summary, label
    assert "GPUs are whole devices (got '1.5')" in summary
    assert "line 2: expected NAME=value (got 'no equals sign')" in summary
    assert "(got '9BAD')" in summary and "(got 'lots')" in summary and "(got '64Gx')" in summary
    assert 'id="preview-task-' not in html  # nothing resolved while inputs are wrong
    assert html.count('class="pp-error"') == 6  # and each beside its field


def test_the_bounds_of_a_spec_hold_in_the_preview_too(admin_client, training):
    """What one task may ask for is checked at the field here as in a spec (docs/limits.md): 10^20 GPUs is not a
    node that lacks room."""
    html = _page(
        admin_client,
        training,
        platform=training.default_platform,
        task="t",
        gpu="1" + "0" * 20,
        cpu="2e6",
        storage="2Pi",
    )
    summary = re.search(r'<div class="alert bad" id="preview-errors".*?</div>', html, re.S).group(0)
    assert "3 inputs to fix" in summary
    assert f"gpu is a whole number of devices from 0 to 1024 (got '1{'0' * 20}')" in summary
    assert "is more than 1048576 cores, the most a task may ask for (got '2e6')" in summary
    assert "is more than 1Pi (1125899906842624 bytes), the most a task may ask for (got '2Pi')" in summary
    assert 'id="preview-task-' not in html


def test_a_platform_the_pool_lacks_is_a_field_error(admin_client, training):
    html = _page(admin_client, training, platform="nope", task="t")
    assert "Select a valid choice. nope is not one of the available choices." in html
