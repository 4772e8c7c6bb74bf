"""Limits on what a researcher or an admin may send, each refused with a 400 naming the field, the value and
why (issue #18 items 1-3 and 7): size, task count, depth, value count, duplicate keys (with their line), huge
integers, timeouts, NaN/Infinity and reserved label prefixes, through the REST API (also
`validation_only=true`), the self-service pages, the CLI, the config API and kubeconfig upload."""

from __future__ import annotations

import json
from io import StringIO

import pytest
import yaml
from django.core.management import call_command
from django.test import Client

from portal.docfiles import DocumentError
from tests.workflows.conftest import api, spec
from workflows.errors import InvalidSpec
from workflows.models import Workflow

SUBMIT = "/api/pool/batch/workflow"
VALIDATE = f"{SUBMIT}?validation_only=true"


def text(document: dict) -> str:
    return yaml.safe_dump(document, sort_keys=False)


def with_task(**fields) -> dict:
    document = spec("limits")
    document["workflow"]["tasks"][0].update(fields)
    return document


def refusal(client, body, *, url: str = VALIDATE, code: str = "invalid_spec", **kwargs) -> dict:
    if isinstance(body, str):
        kwargs.setdefault("content_type", "application/yaml")
    else:
        kwargs.setdefault("format", "json")
    response = client.post(url, body, **kwargs)
    assert response.status_code == 400, response.content[:400]
    error = response.json()
    assert set(error) >= {"code", "field", "value", "reason"} and error["code"] == code, error
    return error


@pytest.fixture
def client(pool, alice):
    return api(alice)


def test_a_valid_spec_passes_the_limits(client):
    for body in (text(spec("ok")), {"file": text(spec("ok"))}, spec("ok")):
        kwargs = {"content_type": "application/yaml"} if isinstance(body, str) else {"format": "json"}
        response = client.post(VALIDATE, body, **kwargs)
        assert response.status_code == 200 and response.json()["status"] == "VALID", response.json()


# ------------------------------------------------------------------------------------------ size


def test_a_spec_larger_than_the_byte_limit_is_refused_before_parsing(client, settings):
    padding = "#" * (settings.WORKFLOW_SPEC_MAX_BYTES + 1) + "\n"
    error = refusal(client, padding + text(spec("big")))
    assert error["reason"] == "the spec is larger than 524288 bytes"
    error = refusal(client, {"file": padding + text(spec("big"))})
    assert error["reason"].startswith("file: the spec is larger than 524288 bytes")
    document = spec("big")
    document["workflow"]["tasks"][0]["environment"] = {f"V{i}": "x" * 600 for i in range(900)}
    error = refusal(client, document)  # the document itself as the JSON body
    assert error["reason"] == "the spec is larger than 524288 bytes"


def test_the_byte_limit_is_a_setting(client, settings):
    settings.WORKFLOW_SPEC_MAX_BYTES = 200
    error = refusal(client, {"file": text(spec("small-limit"))})
    assert error["reason"].startswith("file: the spec is larger than 200 bytes")


# ------------------------------------------------------------------------------------------ tasks, depth, values


def test_more_tasks_than_allowed_are_refused_while_parsing(client, settings):
    error = refusal(client, text(spec("many", tasks=101)))
    assert error["reason"].startswith("request body:") and "more than 100 tasks" in error["reason"]
    assert error["field"] == "tasks[100]"
    settings.WORKFLOW_MAX_TASKS = 3
    groups = {
        "version": 2,
        "workflow": {
            "name": "g",
            "resources": spec()["workflow"]["resources"],
            "groups": [
                {
                    "name": f"g{g}",
                    "tasks": [dict(spec()["workflow"]["tasks"][0], name=f"t{g}{i}", lead=i == 0) for i in range(2)],
                }
                for g in range(2)
            ],
        },
    }
    error = refusal(client, {"file": text(groups)})
    assert "more than 3 tasks" in error["reason"] and error["field"] == "groups[1].tasks[1]"


def test_nesting_deeper_than_the_limit_is_refused(client, settings):
    nested = "x"
    for _ in range(40):
        nested = [nested]
    error = refusal(client, {"file": text(with_task(args=nested))})
    assert "nested more than 32 levels deep" in error["reason"]
    assert error["field"].startswith("tasks[0].args[0][0]")
    settings.WORKFLOW_SPEC_MAX_DEPTH = 4  # the document, workflow, tasks, a task: its command list is a 5th
    error = refusal(client, {"file": text(with_task())})
    assert "nested more than 4 levels deep" in error["reason"] and error["field"] == "tasks[0].command"
    error = refusal(client, with_task())  # a JSON document body: the same limit
    assert "nested more than 4 levels deep" in error["reason"]


def test_the_value_count_is_a_setting(client, settings):
    settings.WORKFLOW_SPEC_MAX_NODES = 30
    error = refusal(client, text(spec("values", tasks=3)))
    assert "the spec has more than 30 values" in error["reason"]


# ------------------------------------------------------------------------------------------ content


def test_duplicate_keys_are_refused_with_their_line(client):
    body = (
        "version: 2\nworkflow:\n  name: dup\n  resources: {default: {cpu: 1}}\n  tasks:\n"
        "  - name: t0\n    image: busybox\n    command: [echo]\n    image: other\n"
    )
    error = refusal(client, body)
    assert error["reason"] == (
        "request body:9:5: duplicate key 'image' (first at line 7); a key may appear once in a mapping"
    )
    assert (error["field"], error["value"]) == ("tasks[0].image", "image")
    error = refusal(client, '{"version": 2, "version": 2}', content_type="application/json")
    assert error["reason"] == "request body:1:16: invalid JSON: key 'version' appears twice in one object"


def test_huge_integers_are_refused_naming_the_field(client):
    digits = "9" * 10_000
    error = refusal(client, text(with_task(exitActions={"FAIL": "1"})).replace("'1'", digits))
    assert (
        "an integer may have at most 4300 digits" in error["reason"] and error["field"] == "tasks[0].exitActions.FAIL"
    )
    error = refusal(client, with_task(exitActions={"FAIL": digits}))
    assert error["field"] == "tasks[0].exitActions.FAIL" and "outside the exit code range 0-255" in error["reason"]
    error = refusal(client, with_task(exitActions={"FAIL": "1-" + digits}))
    assert error["field"] == "tasks[0].exitActions.FAIL" and "outside the exit code range 0-255" in error["reason"]
    body = json.dumps(with_task()).replace('"version": 2', f'"version": {digits}')
    error = refusal(client, body, content_type="application/json")
    assert error["reason"] == "request body: invalid JSON: an integer may have at most 4300 digits"


@pytest.mark.parametrize(
    "value", ["99999999999999999999d", "P99999999999999999999D", "PT99999999999999999999S", "3651d", 10**30, 1e300]
)
@pytest.mark.parametrize("kind", ["exec_timeout", "queue_timeout"])
def test_timeouts_longer_than_3650_days_are_refused(client, value, kind):
    document = spec("slow", timeout={kind: value})
    error = refusal(client, document)
    assert error["field"] == f"timeout.{kind}" and "is longer than 3650 days" in error["reason"], error
    assert refusal(client, text(document))["field"] == f"timeout.{kind}"


def test_a_timeout_of_3650_days_is_accepted(client):
    response = client.post(VALIDATE, spec("slow", timeout={"exec_timeout": "3650d"}), format="json")
    assert response.status_code == 200, response.json()


@pytest.mark.parametrize(
    ("body", "content_type", "code"),
    [
        (
            '{"version": 2, "workflow": {"name": "n", "resources": {"default": {"cpu": NaN}}}}',
            "application/json",
            "invalid_spec",
        ),
        ('{"file": "{\\"version\\": 2, \\"workflow\\": {\\"name\\": Infinity}}"}', "application/json", "invalid_spec"),
        ("version: 2\nworkflow:\n  name: n\n  resources: {default: {cpu: .nan}}\n", "application/yaml", "invalid_spec"),
        (
            "version: 2\nworkflow:\n  name: n\n  resources: {default: {cpu: -.inf}}\n",
            "application/yaml",
            "invalid_spec",
        ),
    ],
)
def test_nan_and_infinity_are_refused(client, body, content_type, code):
    error = refusal(client, body, content_type=content_type, code=code)
    assert "numbers must be finite" in error["reason"], error


@pytest.mark.parametrize("key", ["kubernetes.io/arch", "node.kubernetes.io/x", "k8s.io/x", "a.b.k8s.io/role"])
def test_reserved_kubernetes_label_prefixes_are_refused(client, key):
    document = spec("labelled")
    document["workflow"]["labels"] = {key: "x"}
    error = refusal(client, document)
    assert error["field"] == f'labels["{key}"]' and error["value"] == key, error
    assert "is reserved for Kubernetes" in error["reason"]


def test_other_label_prefixes_are_accepted(client):
    document = spec("labelled")
    document["workflow"]["labels"] = {"example.com/team": "vision", "kubernetes.io.example.com/x": "y", "team": "a"}
    response = client.post(VALIDATE, document, format="json")
    assert response.status_code == 200, response.json()


def test_refusals_hold_for_a_real_submission_too(client):
    error = refusal(client, text(spec("many", tasks=101)), url=SUBMIT)
    assert "more than 100 tasks" in error["reason"]
    assert not Workflow.objects.exists()


# ------------------------------------------------------------------------------------------ self-service pages


@pytest.fixture
def page(pool, alice):
    browser = Client()
    browser.force_login(alice)
    return browser


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            "version: 2\nworkflow:\n  name: a\n  name: b\n",
            "editor:4:3: duplicate key &#x27;name&#x27; (first at line 3)",
        ),
        (text(spec("many", tasks=101)), "more than 100 tasks"),
        (text(spec("slow", timeout={"exec_timeout": "99999999999999999999d"})), "is longer than 3650 days"),
        (
            text(dict(spec("l"), workflow={**spec("l")["workflow"], "labels": {"k8s.io/x": "y"}})),
            "is reserved for Kubernetes",
        ),
        ("#" * 600_000, "the spec is larger than 524288 bytes"),
        ("version: 2\nworkflow:\n  name: n\n  resources: {default: {cpu: .nan}}\n", "numbers must be finite"),
    ],
)
@pytest.mark.parametrize("url", ["/pools/batch/submit/", "/pools/batch/submit/preview/"])
def test_the_self_service_pages_show_the_refusal(page, body, expected, url):
    response = page.post(url, {"spec": body, "priority": "NORMAL"})
    assert response.status_code == 400
    html = response.content.decode()
    assert "The spec has a mistake" in html and expected in html, html[html.find("submit-error") :][:600]
    assert not Workflow.objects.exists()


# ------------------------------------------------------------------------------------------ CLI and config documents


def test_the_workflow_cli_applies_the_same_limits(pool, alice, tmp_path):
    path = tmp_path / "dup.yaml"
    path.write_text("version: 2\nworkflow:\n  name: a\n  name: b\n")
    with pytest.raises(InvalidSpec) as caught:
        call_command(
            "workflow",
            "submit",
            str(path),
            "--pool",
            "batch",
            "--user",
            "alice",
            "--validation-only",
            stdout=StringIO(),
            stderr=StringIO(),
        )
    assert (
        caught.value.reason == f"{path}:4:3: duplicate key 'name' (first at line 3); a key may appear once in a mapping"
    )


def test_config_documents_refuse_duplicates_and_bombs_in_the_cli(db, tmp_path):
    path = tmp_path / "templates.yaml"
    path.write_text("gpu:\n  spec: {}\ngpu:\n  spec: {}\n")
    with pytest.raises(DocumentError) as caught:
        call_command("config", "update", "POD_TEMPLATE", "--file", str(path), stdout=StringIO())
    assert caught.value.reason.startswith(f"{path}:3:1: duplicate key 'gpu' (first at line 1)")
    path.write_text(
        "x-k0: &k0 {a: 1}\n" + "".join(f"x-k{i}: &k{i} {{<<: [*k{i - 1}, *k{i - 1}]}}\n" for i in range(1, 31))
    )
    with pytest.raises(DocumentError) as caught:
        call_command("config", "update", "POD_TEMPLATE", "--file", str(path), stdout=StringIO())
    assert "the document has more than 200000 values" in caught.value.reason


@pytest.mark.parametrize(
    ("field", "value", "reason"),
    [
        ("default_exec_timeout", "99999999999999999999d", "is longer than 3650 days"),
        ("max_queue_timeout", "P99999999999999999999D", "is longer than 3650 days"),
        ("default_exit_actions", {"FAIL": "9" * 10_000}, "outside the exit code range 0-255"),
    ],
)
def test_the_config_api_refuses_huge_pool_timeouts_and_exit_codes(admin, field, value, reason):
    body = {"backend": "sim", "platforms": {"cpu": {}}, field: value}
    response = admin.put("/api/configs/pool/huge", {"configs": body}, format="json")
    assert response.status_code == 400, response.json()
    error = response.json()
    assert error["field"].startswith(field) and reason in error["reason"], error


def test_the_config_api_refuses_nan_and_duplicate_keys_in_json(admin):
    for body, reason in (
        ('{"configs": {"backend": "sim", "x": NaN}}', "NaN is not allowed"),
        ('{"configs": {"backend": "sim", "backend": "other"}}', "key 'backend' appears twice"),
    ):
        response = admin.generic("PUT", "/api/configs/pool/p", body, content_type="application/json")
        assert response.status_code == 400 and response.json()["code"] == "parse_error", response.json()
        assert reason in response.json()["reason"]


def test_a_kubeconfig_bomb_is_refused_without_echoing_its_content(admin):
    bomb = "x-k0: &k0 {a: secret}\n" + "".join(f"x-k{i}: &k{i} {{<<: [*k{i - 1}, *k{i - 1}]}}\n" for i in range(1, 31))
    for kubeconfig, reason in (
        (bomb, "the document has more than 200000 values"),
        ("users: []\nusers: [secret]\n", "duplicate key"),
    ):
        response = admin.put(
            "/api/configs/backend/kc", {"configs": {"namespace": "default", "kubeconfig": kubeconfig}}, format="json"
        )
        assert response.status_code == 400, response.json()
        error = response.json()
        assert "kubeconfig is not valid YAML" in error["reason"] and reason in error["reason"], error
        assert "secret" not in json.dumps(error)
