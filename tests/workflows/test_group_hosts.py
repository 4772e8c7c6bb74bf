"""`{{host:<task>}}` as OSMO renders it (workflows.group_dns, docs/templates-and-variables.md §3.1): the tasks of
a group of two or more get DNS names through a headless Service written with their pods in the simulated
cluster and deleted when the workflow ends; a token naming no task of the workflow is refused at submission.

OSMO: src/utils/job/task.py `TaskGroupSpec.parse` (the token's value), `TaskGroup.convert_to_pod_spec`
(`hostname` = the task's uuid, `subdomain` = `osmo-<group uuid>` when the group has more than one task),
`TaskGroup.get_kb_specs` and kb_objects.py `create_headless_service` (the Service, `clusterIP: None`)."""

from __future__ import annotations

import pytest

from clusters.kube import pods, services
from clusters.kube.connection import connect
from clusters.kube.errors import KubeError
from tests.workflows.conftest import NAMESPACE, api, settle_until, spec
from workflows.group_dns import GROUP_LABEL
from workflows.lifecycle.create import create_pods
from workflows.models import Workflow

SUBMIT = "/api/pool/batch/workflow"


def pair(second_command: list[str]) -> dict:
    doc = spec("pair")
    [first] = doc["workflow"].pop("tasks")
    second = {**first, "name": "second", "command": second_command}
    doc["workflow"]["groups"] = [{"name": "duo", "tasks": [{**first, "name": "first", "lead": True}, second]}]
    return doc


def test_the_second_task_reaches_the_first_by_name_through_a_service_that_lives_with_the_pods(
    pool, alice, kube_server, backend, run_on_commit, settings
):
    settings.CELERY_TASK_ALWAYS_EAGER = True  # the Service's deletion, queued when the workflow ends, runs now
    answer = api(alice).post(SUBMIT, pair(["sh", "-c", "echo {{host:first}}"]), format="json")
    assert answer.status_code == 200, answer.json()
    workflow = Workflow.objects.get()
    first, second = workflow.tasks.order_by("id")
    spec_of = first.pod["spec"]
    name = f"{spec_of['hostname']}.{spec_of['subdomain']}.{NAMESPACE}.svc.cluster.local"
    assert second.pod["spec"]["containers"][0]["command"] == ["sh", "-c", f"echo {name}"]
    assert second.pod["spec"]["subdomain"] == spec_of["subdomain"] != second.pod["spec"]["hostname"]

    run_on_commit(create_pods, workflow.pk)
    service = kube_server.emulator.get("services", spec_of["subdomain"], NAMESPACE)
    assert service["spec"]["clusterIP"] == "None"
    selected = [
        pod["metadata"]["name"]
        for pod in kube_server.emulator.list("pods", NAMESPACE)
        if all(pod["metadata"]["labels"].get(k) == v for k, v in service["spec"]["selector"].items())
    ]
    assert sorted(selected) == sorted([first.pod_name, second.pod_name])
    assert service["metadata"]["labels"]["pool-portal/instance"] == "test-portal"
    workflow.refresh_from_db()
    assert not workflow.is_finished

    settle_until(backend, workflow, {"COMPLETED"}, run_on_commit)
    assert not kube_server.emulator.list("services", NAMESPACE)


def test_a_task_alone_in_its_group_gets_no_name_and_no_service(pool, alice, kube_server, backend, run_on_commit):
    answer = api(alice).post(SUBMIT, spec("alone"), format="json")
    assert answer.status_code == 200, answer.json()
    workflow = Workflow.objects.get()
    pod = workflow.tasks.get().pod
    assert "hostname" not in pod["spec"] and GROUP_LABEL not in pod["metadata"]["labels"]
    run_on_commit(create_pods, workflow.pk)
    assert not kube_server.emulator.list("services", NAMESPACE)


def test_a_host_naming_no_task_is_refused_with_field_value_and_why(pool, alice):
    answer = api(alice).post(SUBMIT, pair(["ping", "{{host:third}}"]), format="json")
    assert answer.status_code == 400, answer.json()
    body = answer.json()
    assert (body["field"], body["value"]) == ("groups[0].tasks[1].command[1]", "{{host:third}}"), body
    assert "names no task of this workflow (tasks: first, second)" in body["reason"], body
    assert not Workflow.objects.exists()


@pytest.mark.parametrize(
    ("manifest", "words"),
    [
        ({"metadata": {"name": "1abc"}, "spec": {"clusterIP": "None"}}, "metadata.name: Invalid value"),
        ({"metadata": {"name": "web"}, "spec": {"selector": {"a": "b"}}}, "spec.ports: Required value"),
        ({"metadata": {"name": "web"}, "spec": {"clusterIP": "x", "ports": [{"port": 80}]}}, "must be a valid IP"),
        ({"metadata": {"name": "web"}, "spec": {"ports": [{"port": 0}]}}, "between 1 and 65535"),
    ],
)
def test_kubesim_refuses_an_invalid_service_as_the_api_server_does(backend, kube_server, manifest, words):
    with connect(backend) as kube:
        with pytest.raises(KubeError) as refused:
            services.apply_service(kube, "svc-check", {"apiVersion": "v1", "kind": "Service", **manifest})
        assert refused.value.k8s_status == 422 and words in str(refused.value)
        headless = {"metadata": {"name": "ok"}, "spec": {"clusterIP": "None", "selector": {"a": "b"}}}
        assert services.apply_service(kube, "svc-check", headless) is True
        assert services.apply_service(kube, "svc-check", headless) is False  # there already
        assert [s["metadata"]["name"] for s in kube_server.emulator.list("services", "svc-check")] == ["ok"]
        assert services.delete_service(kube, "svc-check", "ok") is True
        assert services.delete_service(kube, "svc-check", "ok") is False  # gone already


def test_kubesim_refuses_a_pod_hostname_that_is_not_a_dns_label(backend):
    pod = {"metadata": {"name": "p"}, "spec": {"hostname": "Bad_Name", "containers": [{"name": "c", "image": "x"}]}}
    with connect(backend) as kube, pytest.raises(KubeError) as refused:
        pods.create_pod(kube, "dns-check", pod)
    assert refused.value.k8s_status == 422 and "spec.hostname: Invalid value" in str(refused.value)
