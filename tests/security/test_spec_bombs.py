"""Specs built to stall a worker are refused before they expand (issue #18 items 1, 2, 7): through the REST
API (also with `validation_only=true` and `dry_run=true`) and the self-service submit and preview pages, each
bomb (tests/security/bombs.py) answers 400 with the limit it hit, the field and the line and column where
reading stopped, and nothing is stored.

The work is bounded without a clock: the position shows how much of the text was read (the 30-level
merge-key bomb stops at level 11, line 19 of 38; the 60,000-task spec at its 101st task), the values counted
when it stopped are at most twice WORKFLOW_SPEC_MAX_NODES (an alias is counted, never copied), and the API
reads one byte past WORKFLOW_SPEC_MAX_BYTES of a body that is too large, no more. A template expression that
would print 30 million items is refused at the repetition that would build them. How long each refusal
takes (target ≤ 100 ms) is measured by bench/bench_spec_bombs.py, not here.
"""

from __future__ import annotations

import pytest
from django.test import Client
from django.utils.html import escape

from access.services import roles
from configs import store
from tests.factories import UserFactory
from tests.security.bombs import BOMBS, ORDINARY, TEMPLATE, TEMPLATE_REASON, Bomb
from tests.workflows.conftest import CLI, api
from workflows.models import Task, Workflow

SUBMIT = "/api/pool/batch/workflow"


def assert_value(bomb: Bomb, value: object) -> None:
    if isinstance(bomb.value, range):
        assert value in bomb.value, value  # the values counted when it stopped
    else:
        assert value == bomb.value


def assert_nothing_stored() -> None:
    assert not Workflow.objects.exists() and not Task.objects.exists()


def test_the_same_head_with_an_ordinary_task_list_is_accepted(pool, alice):
    """The bombs below share this head: what refuses them is the bomb, not the rest of the spec."""
    response = api(alice).post(f"{SUBMIT}?validation_only=true", ORDINARY, content_type="application/yaml")
    assert response.status_code == 200, response.json()


@pytest.mark.parametrize("name", list(BOMBS))
@pytest.mark.parametrize("query", ["", "?validation_only=true", "?dry_run=true"])
def test_a_bomb_is_refused_through_the_api_where_reading_stopped(pool, alice, name, query):
    bomb = BOMBS[name]
    response = api(alice).post(SUBMIT + query, bomb.text, content_type="application/yaml")
    assert response.status_code == 400, response.content[:300]
    body = response.json()
    assert body["code"] == "invalid_spec", body
    assert body["reason"] == (f"request body:{bomb.at}: {bomb.reason}" if bomb.at else bomb.reason), body
    assert body["field"] == bomb.field, body
    assert_value(bomb, body["value"])
    assert_nothing_stored()


@pytest.mark.parametrize("name", list(BOMBS))
@pytest.mark.parametrize("page", ["submit", "submit/preview"])
def test_a_bomb_is_refused_by_the_self_service_pages_where_reading_stopped(pool, alice, name, page):
    bomb = BOMBS[name]
    client = Client()
    client.force_login(alice)
    response = client.post(f"/pools/batch/{page}/", {"spec": bomb.text, "priority": "NORMAL"})
    assert response.status_code == 400
    html = response.content.decode()
    assert "The spec has a mistake" in html
    if bomb.at:
        line = bomb.at.split(":")[0]
        assert f"editor:{bomb.at}: {escape(bomb.reason)}" in html
        assert f'<code class="path">{bomb.field}</code>' in html and f'data-line="{line}"' in html
    else:  # the form holds the whole text: the page names its size (what the API never reads)
        assert f"editor: {bomb.reason} ({len(bomb.text)} or more)" in html
    assert_nothing_stored()


def test_a_template_expression_that_would_print_30_million_items_is_refused_before_building_them(pool):
    """Item 7: the work of a template expression is bounded, not only its output. A pool whose platform
    would use a pod template with the expression is refused when saved (the config checks render it): the
    reason names the repetition (`[[1]*1000]*1000`, a million items) the budget refused before it ran, and
    the limit; the pool keeps its configuration."""
    roles.ensure_builtin_roles()
    admin = UserFactory(username="platform-admin")
    roles.update_user_roles(admin, add=["osmo-admin"], actor=CLI)
    store.apply("POD_TEMPLATE", "expensive", {"metadata": {"labels": {"x": TEMPLATE}}}, CLI)
    before = store.show("POOL", "batch")
    body = store.show("POOL", "batch")
    body["platforms"]["cpu"]["override_pod_template"] = ["cpu", "expensive"]
    response = api(admin).put("/api/configs/pool/batch", {"configs": body}, format="json")
    assert response.status_code == 400, response.json()
    error = response.json()
    assert error["field"] == "platforms.cpu.pod_template.metadata.labels.x", error
    assert error["reason"] == TEMPLATE_REASON and error["value"] == TEMPLATE, error
    assert store.show("POOL", "batch") == before
