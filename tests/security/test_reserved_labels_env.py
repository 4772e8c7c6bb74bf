"""Labels and environment that would reach around the quota (issue #30 point 9), refused with field, value and
why: labels in the schedulers' and autoscalers' namespaces and the portal's own (a user's `kai.scheduler/queue`
would put a pod in another team's queue), from the spec and `?label=`; the NVIDIA container runtime's device
and driver selectors (`NVIDIA_VISIBLE_DEVICES=all` on a 0-GPU pod sees every GPU of its node) from
`environment:`, `?env_vars=` and pod templates (refused at save). CUDA_VISIBLE_DEVICES stays allowed."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest
from hypothesis import given
from hypothesis import strategies as st

from configs import store
from configs.errors import ConfigError, ConfigNotFound
from pools.engine import gates
from tests.security.test_spec_limits import SUBMIT, VALIDATE, refusal, with_task
from tests.workflows.conftest import CLI, api, spec
from workflows.models import Workflow

RESERVED_LABELS = [
    "kai.scheduler/queue",
    "kai.scheduler/node-pool",
    "kueue.x-k8s.io/queue-name",
    "kueue.x-k8s.io/priority-class",
    "runai/queue",
    "scheduling.run.ai/node-pool",
    "run.ai/project",
    "karpenter.sh/nodepool",
    "karpenter.k8s.aws/instance-family",
    "pool-portal/preemptible",
]
USER_ENV = [
    "NVIDIA_VISIBLE_DEVICES",
    "nvidia_visible_devices",
    "NVIDIA_DRIVER_CAPABILITIES",
    "NVIDIA_REQUIRE_CUDA",
    "NVIDIA_DISABLE_REQUIRE",
    "NVIDIA_MIG_CONFIG_DEVICES",
    "NVIDIA_MIG_MONITOR_DEVICES",
    "NVIDIA_IMEX_CHANNELS",
]


@pytest.fixture
def client(pool, alice):
    return api(alice)


@pytest.mark.parametrize("key", RESERVED_LABELS)
def test_a_spec_label_in_a_schedulers_namespace_is_refused(client, key):
    document = spec("labelled")
    document["workflow"]["labels"] = {key: "someone-elses-queue"}
    error = refusal(client, document, url=SUBMIT)
    assert error["field"] == f'labels["{key}"]' and error["value"] == key, error
    assert "set only by the portal" in error["reason"] and "quota" in error["reason"]
    assert not Workflow.objects.exists()


@pytest.mark.parametrize("key", ["kai.scheduler/queue", "kueue.x-k8s.io/queue-name", "pool-portal/workflow"])
def test_a_label_option_in_a_schedulers_namespace_is_refused(client, key):
    error = refusal(client, spec("labelled"), url=f"{SUBMIT}?{urlencode({'label': f'{key}=other-team'})}")
    assert error["value"] == key and "set only by the portal" in error["reason"], error
    assert not Workflow.objects.exists()


def test_labels_near_the_reserved_namespaces_are_yours(client):
    document = spec("labelled")
    document["workflow"]["labels"] = {"my-kai.scheduler.example.com/x": "a", "runai-team": "b", "example.com/q": "c"}
    response = client.post(VALIDATE, document, format="json")
    assert response.status_code == 200, response.json()


@pytest.mark.parametrize("name", USER_ENV)
def test_an_nvidia_runtime_variable_in_the_environment_is_refused(client, name):
    error = refusal(client, with_task(environment={name: "all"}), url=SUBMIT)
    assert error["field"].endswith(f"environment.{name}") and error["value"] == name, error
    assert name in error["reason"]
    assert not Workflow.objects.exists()


@pytest.mark.parametrize("name", ["NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES"])
def test_an_nvidia_runtime_variable_in_env_vars_is_refused(client, name):
    error = refusal(client, spec("env"), url=f"{SUBMIT}?{urlencode({'env_vars': f'{name}=all'})}")
    assert error["value"] == name and name in error["reason"], error
    assert not Workflow.objects.exists()


def test_cuda_visible_devices_is_allowed(client):
    """CUDA reads it inside the container to narrow the devices it already has: it grants none."""
    response = client.post(VALIDATE, with_task(environment={"CUDA_VISIBLE_DEVICES": "0"}), format="json")
    assert response.status_code == 200, response.json()


MIG_ENV = [{"name": "A"}, {"name": "NVIDIA_MIG_CONFIG_DEVICES"}]


@pytest.mark.parametrize(
    ("body", "field", "value"),
    [
        (
            {"spec": {"containers": [{"name": "x", "env": [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]}]}},
            "spec.containers[0].env[0].name",
            "NVIDIA_VISIBLE_DEVICES",
        ),
        (
            {"spec": {"initContainers": [{"name": "i", "env": MIG_ENV}]}},
            "spec.initContainers[0].env[1].name",
            "NVIDIA_MIG_CONFIG_DEVICES",
        ),
        ({"metadata": {"labels": {"kai.scheduler/queue": "q"}}}, "metadata.labels['kai.scheduler/queue']", None),
    ],
)
def test_a_pod_template_setting_them_is_refused_at_save(pool, body, field, value):
    with pytest.raises(ConfigError) as refused:
        store.apply("POD_TEMPLATE", "sneaky", body, CLI)
    assert refused.value.field.endswith(field), refused.value.field
    assert refused.value.value == (value or "kai.scheduler/queue") and refused.value.reason
    with pytest.raises(ConfigNotFound):
        store.show("POD_TEMPLATE", "sneaky")  # nothing saved


def test_a_pod_template_may_choose_the_driver_capabilities(pool):
    """A simulation platform's template gives its pods `graphics` (pools/demo): the platform's choice, not
    the user's, and it exposes no device."""
    body = {"spec": {"containers": [{"name": "x", "env": [{"name": "NVIDIA_DRIVER_CAPABILITIES", "value": "all"}]}]}}
    store.apply("POD_TEMPLATE", "graphics", body, CLI)
    assert store.show("POD_TEMPLATE", "graphics") == body


def test_the_final_pod_gate_refuses_a_device_selector_whoever_wrote_it():
    pod = {"spec": {"containers": [{"name": "user", "env": [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]}]}}
    errors = gates.check_pod(
        pod,
        gates.GatePolicy(platform="p"),
        user_container="user",
        user_fields={},
        template_fields={},
        template_host_paths=set(),
    )
    assert [(e.field, e.value) for e in errors] == [("spec.containers[0].env[0].name", "NVIDIA_VISIBLE_DEVICES")]


@given(
    domain=st.sampled_from(gates.RESERVED_LABEL_DOMAINS),
    sub=st.from_regex(r"[a-z][a-z0-9-]{0,8}\.", fullmatch=True) | st.just(""),
    name=st.from_regex(r"[a-z][a-z0-9]{0,10}", fullmatch=True),
)
def test_every_reserved_domain_and_its_subdomains_are_refused_and_lookalikes_are_not(domain, sub, name):
    assert gates.reserved_label(f"{sub}{domain}/{name}")
    assert not gates.reserved_label(f"{domain}x/{name}") and not gates.reserved_label(name)
    assert not gates.reserved_label(f"{domain}.example.com/{name}")
