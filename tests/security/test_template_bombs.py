"""Template expressions that would stall or crash the compiler are refused before they are parsed (issue #31
items 1 and 2): through the REST API (submit, `validation_only=true`, `dry_run=true`), the self-service
submit and preview pages, and an admin's pod template, resource validation and pool save, each vector of
tests/security/template_bombs.py answers 400 naming where it is (the spec's line; the template's path),
the count at the refusal and the bound, and nothing is stored. Before the bounds these were 500s
(SyntaxError, RecursionError) or took seconds; how long a refusal takes now is measured by
bench/bench_spec_bombs.py (target ≤ 100 ms), not here.
"""

from __future__ import annotations

import pytest
from django.test import Client
from django.utils.html import escape

from configs import store
from pools.models import PodTemplate, ResourceValidation
from tests.factories import PodTemplateFactory
from tests.security.template_bombs import SPEC, TEMPLATE_BOMBS, TemplateBomb, reason
from tests.workflows.conftest import api
from workflows.models import Task, Workflow

SUBMIT = "/api/pool/batch/workflow"


def assert_value(bomb: TemplateBomb, value: object) -> None:
    assert value in bomb.value if isinstance(bomb.value, range) else value == bomb.value, value


def assert_nothing_stored() -> None:
    assert not Workflow.objects.exists() and not Task.objects.exists()


def test_an_ordinary_expression_in_the_same_spec_is_accepted(pool, alice):
    """What refuses the bombs below is the expression, not the spec around it."""
    ordinary = SPEC % "{{ z|list|first|string ~ (z|length + 1) }}"
    response = api(alice).post(f"{SUBMIT}?dry_run=true", ordinary, content_type="application/yaml")
    assert response.status_code == 200, response.json()


@pytest.mark.parametrize("name", list(TEMPLATE_BOMBS))
@pytest.mark.parametrize("query", ["", "?validation_only=true", "?dry_run=true"])
def test_a_template_bomb_is_refused_through_the_api_with_its_line_and_bound(pool, alice, name, query):
    bomb = TEMPLATE_BOMBS[name]
    response = api(alice).post(SUBMIT + query, bomb.spec(), content_type="application/yaml")
    assert response.status_code == 400, response.content[:300]
    body = response.json()
    assert body["code"] == "invalid_spec" and body["field"] == "file", body
    assert body["reason"] == f"the spec's template: {reason(bomb)}", body
    assert_value(bomb, body["value"])
    assert_nothing_stored()


@pytest.mark.parametrize("name", list(TEMPLATE_BOMBS))
@pytest.mark.parametrize("page", ["submit", "submit/preview"])
def test_a_template_bomb_is_refused_by_the_self_service_pages(pool, alice, name, page):
    bomb = TEMPLATE_BOMBS[name]
    client = Client()
    client.force_login(alice)
    response = client.post(f"/pools/batch/{page}/", {"spec": bomb.spec(), "priority": "NORMAL"})
    assert response.status_code == 400
    html = response.content.decode()
    assert f'<code class="path">file</code>: the spec&#x27;s template: {escape(reason(bomb))}' in html
    assert_nothing_stored()


@pytest.mark.parametrize("name", list(TEMPLATE_BOMBS))
def test_a_pod_template_holding_a_bomb_is_refused_when_saved_at_its_path(admin, name):
    bomb = TEMPLATE_BOMBS[name]
    body = {"metadata": {"labels": {"x": bomb.expression}}}
    response = admin.put("/api/configs/pod_template/bomb", {"configs": body}, format="json")
    assert response.status_code == 400, response.content[:300]
    error = response.json()
    assert error["field"] == "metadata.labels.x" and error["reason"] == reason(bomb, line=1), error
    assert_value(bomb, error["value"])
    assert not PodTemplate.objects.filter(name="bomb").exists()


@pytest.mark.parametrize("operand", ["left_operand", "assert_message"])
def test_a_resource_validation_holding_a_bomb_is_refused_when_saved_at_its_path(admin, operand):
    bomb = TEMPLATE_BOMBS["199 filters (SyntaxError: too many nested parentheses)"]
    rule = {"operator": "LE", "left_operand": "{{USER_GPU}}", "right_operand": "8", "assert_message": "too many"}
    rule[operand] = bomb.expression
    response = admin.put("/api/configs/resource_validation/bomb", {"configs": [rule]}, format="json")
    assert response.status_code == 400, response.content[:300]
    error = response.json()
    assert error["field"] == f"[0].{operand}" and error["reason"] == reason(bomb, line=1), error
    assert not ResourceValidation.objects.filter(name="bomb").exists()


@pytest.mark.parametrize("name", list(TEMPLATE_BOMBS))
def test_a_pool_using_a_template_stored_before_the_check_is_refused_at_its_path(admin, name):
    """A pod template stored unchecked (before these bounds) is compiled when a pool would use it: the
    pool's save answers 400 at the template's path, and the pool keeps its configuration."""
    bomb = TEMPLATE_BOMBS[name]
    PodTemplateFactory(name="legacy", body={"metadata": {"labels": {"x": bomb.expression}}})
    before = store.show("POOL", "batch")
    body = store.show("POOL", "batch")
    body["platforms"]["cpu"]["override_pod_template"] = ["cpu", "legacy"]
    response = admin.put("/api/configs/pool/batch", {"configs": body}, format="json")
    assert response.status_code == 400, response.content[:300]
    error = response.json()
    assert error["field"] == "platforms.cpu.pod_template[legacy].metadata.labels.x", error
    assert error["reason"] == f"platform cpu: {reason(bomb, line=1)}", error
    assert_value(bomb, error["value"])
    assert store.show("POOL", "batch") == before
