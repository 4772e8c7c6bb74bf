"""Specs built to stall a worker are refused quickly (issue #18 items 1, 2, 7): each bomb answers 400 in under
100 ms through the REST API (also with `validation_only=true`) and the self-service submit and preview pages.

Time-bounded on purpose, as the issue asks: `time.perf_counter()` around one request. Before the fix, the
30-level merge-key bomb held a worker for minutes and the 60,000-task spec took 8 s; the bound is far above
the refusal (about a millisecond of parsing) and far below the failure. The best of three attempts is kept,
so that another process taking the shared CPU for a moment does not count as the portal's time.
"""

from __future__ import annotations

import time

import pytest
from django.test import Client

from access.services import roles
from configs import store
from tests.factories import UserFactory
from tests.workflows.conftest import CLI, api
from workflows.models import Workflow

SUBMIT = "/api/pool/batch/workflow"
BOUND = 0.100  # seconds
HEAD = "version: 2\nworkflow:\n  name: bomb\n  resources: {default: {cpu: 1}}\n"
TASK = "  - {name: t%d, image: busybox, command: [echo, hi]}\n"


def merge_bomb(levels: int = 30) -> str:
    """The issue's 1.4 KB spec: each level merges the previous one twice, doubling safe_load's work."""
    lines = ["x-k0: &k0 {a: 1, b: 2}"] + [f"x-k{i}: &k{i} {{<<: [*k{i - 1}, *k{i - 1}]}}" for i in range(1, levels + 1)]
    return HEAD + "  tasks:\n" + TASK % 0 + "  labels:\n" + "".join(f"    {line}\n" for line in lines)


def alias_bomb() -> str:
    levels = ["x-a: &a [x, x, x, x, x, x, x, x, x]"] + [
        f"x-{b}: &{b} [{', '.join([f'*{a}'] * 9)}]" for a, b in zip("abcdefgh", "bcdefghi", strict=True)
    ]
    return HEAD + "  tasks:\n" + TASK % 0 + "".join(f"  {line}\n" for line in levels)


BOMBS = {
    "merge-key doubling, 30 levels": (merge_bomb(), "more than 20000 values"),
    "alias fan-out, 9^9": (alias_bomb(), "more than 20000 values"),
    "flow nesting, 200,000 levels": (HEAD + "  tasks: " + "[" * 200_000 + "\n", "nested more than 32 levels"),
    "block nesting, 700 levels": (
        HEAD + "  tasks:\n" + "".join("  " * (i + 2) + f"k{i}:\n" for i in range(700)),
        "nested more than 32 levels",
    ),
    "recursive alias": (HEAD + "  tasks: &t\n  - {name: t0, image: i, command: *t}\n", "recursive alias *t"),
    "2.4 MB, error on the last line": (
        HEAD + "  tasks:\n" + "".join(TASK % i for i in range(45_000)) + "  ]\n",
        "the spec is larger than 524288 bytes",
    ),
    "60,000 tasks in 512 KiB": (
        HEAD + "  tasks:\n" + "".join(f"  - t{i}\n" for i in range(60_000))[:500_000],
        "more than 100 tasks",
    ),
    "10,000-digit exit code": (
        HEAD + "  tasks:\n  - name: t0\n    image: i\n    command: [c]\n"
        "    exitActions: {FAIL: " + "9" * 10_000 + "}\n",
        "at most 4300 digits",
    ),
}


def fastest(call, attempts: int = 3):
    """(the last response, the fastest of `attempts` calls in seconds)."""
    best, response = float("inf"), None
    for _ in range(attempts):
        started = time.perf_counter()
        response = call()
        best = min(best, time.perf_counter() - started)
    return response, best


@pytest.fixture
def warm(pool, alice):
    """One ordinary request first: URL resolution, imports and the pool's compiled config are not the bomb's."""
    ok = api(alice).post(f"{SUBMIT}?validation_only=true", {"file": HEAD + "  tasks:\n" + TASK % 0}, format="json")
    assert ok.status_code == 200, ok.json()
    return api(alice)


@pytest.mark.parametrize("name", list(BOMBS))
@pytest.mark.parametrize("query", ["", "?validation_only=true", "?dry_run=true"])
def test_a_bomb_is_refused_through_the_api_in_under_100_ms(warm, name, query):
    text, reason = BOMBS[name]
    response, seconds = fastest(lambda: warm.post(SUBMIT + query, text, content_type="application/yaml"))
    assert response.status_code == 400, response.content[:300]
    body = response.json()
    assert body["code"] == "invalid_spec" and reason in body["reason"], body
    assert seconds < BOUND, f"{name}: {seconds * 1000:.1f} ms"
    assert not Workflow.objects.exists()


@pytest.mark.parametrize("name", list(BOMBS))
@pytest.mark.parametrize("page", ["submit", "submit/preview"])
def test_a_bomb_is_refused_by_the_self_service_pages_in_under_100_ms(warm, alice, name, page):
    text, reason = BOMBS[name]
    client = Client()
    client.force_login(alice)
    client.get("/pools/batch/submit/")  # warm the page's own code path
    response, seconds = fastest(lambda: client.post(f"/pools/batch/{page}/", {"spec": text, "priority": "NORMAL"}))
    assert response.status_code == 400
    assert "The spec has a mistake" in response.content.decode() and reason in response.content.decode()
    assert seconds < BOUND, f"{name} on {page}: {seconds * 1000:.1f} ms"
    assert not Workflow.objects.exists()


def test_a_template_expression_that_would_print_30_million_items_is_refused_in_under_100_ms(warm, pool):
    """Item 7: the work of a template expression is bounded, not only its output. A pool whose platform
    would use a pod template with the expression is refused when saved (the config checks render it)."""
    roles.ensure_builtin_roles()
    admin = UserFactory(username="platform-admin")
    roles.update_user_roles(admin, add=["osmo-admin"], actor=CLI)
    store.apply("POD_TEMPLATE", "expensive", {"metadata": {"labels": {"x": "{{ [[[1]*1000]*1000]*30 }}"}}}, CLI)
    body = store.show("POOL", "batch")
    body["platforms"]["cpu"]["override_pod_template"] = ["cpu", "expensive"]
    client = api(admin)
    response, seconds = fastest(lambda: client.put("/api/configs/pool/batch", {"configs": body}, format="json"))
    assert response.status_code == 400, response.json()
    error = response.json()
    assert error["field"] == "platforms.cpu.pod_template.metadata.labels.x", error
    assert "too much work for one template string" in error["reason"], error
    assert seconds < BOUND, f"{seconds * 1000:.1f} ms"
