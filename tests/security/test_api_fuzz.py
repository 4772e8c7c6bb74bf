"""API fuzzing (issue 18): schemathesis generates requests for every operation of the live OpenAPI schema
(drf-spectacular's `/api/schema/`), valid and invalid ones, sent as a researcher with a portal API token
(and, for the config API that refuses researchers, as an administrator too). No answer may be a 5xx, and
every error must be the JSON envelope `{code, field, value, reason}`.

Deterministic: Hypothesis runs derandomized (the same cases every run, no example database), so a failure
reproduces and the run time is stable. The requests go through Django's test handler as a WSGI app, in the
test's transaction, against PostgreSQL.
"""

from __future__ import annotations

import os
import time

import hypothesis
import pytest
import schemathesis
from django.test.client import ClientHandler
from hypothesis import HealthCheck, Phase
from rest_framework.test import APIClient
from schemathesis.generation.hypothesis.builder import HypothesisTestConfig, HypothesisTestMode, create_test
from schemathesis.generation.overrides import Override

from access.models import Role
from tests.factories import TokenFactory, UserFactory
from tests.workflows.conftest import spec

pytestmark = pytest.mark.heavy

# `make test` runs a short version (about 1,700 requests over the schema's operations, some twice: free and on
# the real pool and workflow); `make fuzz` the long one (FUZZ_CASES_PER_OPERATION=200, docs/testing.md).
CASES_PER_OPERATION = int(os.environ.get("FUZZ_CASES_PER_OPERATION") or 25)
MIN_CASES = 1000
ADMIN_PATHS = ("/api/configs", "/api/machine_pools")


@pytest.fixture(autouse=True)
def no_pod_creation(monkeypatch):
    """Pods are not the subject here (and nothing commits: the test's transaction rolls back)."""
    from workflows import tasks as jobs

    monkeypatch.setattr(jobs.create_pods, "delay", lambda *args: None)


def wsgi_app(environ, start_response):
    """Django's test handler (the test client's: it keeps the test's database connection open) as WSGI."""
    response = ClientHandler(enforce_csrf_checks=False)(environ)
    start_response(f"{response.status_code} {response.reason_phrase}", list(response.items()))
    return [response.content]


def envelope_problem(response) -> str:
    """ "" when an error answer is the JSON envelope, else why not."""
    if response.status_code < 400:
        return ""
    content_type = (response.headers.get("content-type") or [""])[0]  # lower-case keys, lists of values
    if not content_type.startswith("application/json"):
        return f"not JSON: {content_type!r}"
    body = response.json()
    if not (isinstance(body, dict) and {"code", "field", "value", "reason"} <= set(body)):
        return f"not the envelope: {str(body)[:200]}"
    return ""


def _checker(label: str, headers: dict, sent: dict, failures: list):
    def check(case):
        response = case.call(headers=headers)
        sent[label] = sent.get(label, 0) + 1
        problem = envelope_problem(response) if response.status_code < 500 else f"HTTP {response.status_code}"
        if problem:
            failures.append(
                f"{case.method} {case.formatted_path} query={case.query} body={str(case.body)[:300]}: {problem}"
            )

    return check


def runs(operation, known: dict[str, str], per_operation: int = CASES_PER_OPERATION) -> list[tuple[Override, int]]:
    """(path overrides, cases) for an operation: free generation, and for paths that name a pool or a
    workflow also runs on the real ones, so the bodies and queries reach the code behind the lookup."""
    names = {parameter.name for parameter in operation.path_parameters}
    pinned = {name: value for name, value in known.items() if name in names}
    if not pinned:
        return [(Override(), per_operation)]
    return [(Override(), per_operation // 2), (Override(path_parameters=pinned), per_operation)]


def openapi(wsgi_app):
    """The portal's OpenAPI schema as the app under test serves it, and hypothesis settings that replay the same
    cases on every run (derandomized, no example database)."""
    schema = schemathesis.openapi.from_wsgi("/api/schema/?format=json", wsgi_app)
    settings = hypothesis.settings(
        derandomize=True,
        database=None,
        deadline=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
        print_blob=False,
    )
    return schema, settings


def generate(schema, settings, operation, override: Override, cases: int, check) -> None:
    """Run `check(case)` on `cases` generated requests (examples, then fuzzing) of one operation."""
    create_test(
        operation=operation,
        test_func=check,
        config=HypothesisTestConfig(
            project=schema.config,
            override=override,
            modes=[HypothesisTestMode.EXAMPLES, HypothesisTestMode.FUZZING],
            settings=hypothesis.settings(settings, max_examples=max(1, cases)),
        ),
    )()


def bearer(user, *role_names: str) -> dict[str, str]:
    token = TokenFactory(user=user, roles=list(Role.objects.filter(name__in=role_names)))
    return {"Authorization": f"Bearer {token.secret}"}


def test_generated_requests_never_get_a_server_error(pool, alice):
    researcher = bearer(alice, "osmo-user", "osmo-batch")
    operator = UserFactory(username="operator")
    operator.groups.add(Role.objects.get(name="osmo-admin").group)
    admin = bearer(operator, "osmo-admin")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=researcher["Authorization"])
    workflow_id = client.post("/api/pool/batch/workflow", spec("fuzzed"), format="json").json()["workflow_id"]
    known = {"pool": "batch", "workflow_id": workflow_id}
    schema, settings = openapi(wsgi_app)
    failures: list[str] = []
    sent: dict[str, int] = {}
    started = time.monotonic()
    for result in schema.get_all_operations():
        operation = result.ok()
        # the researcher everywhere; the config API and the machine pools refuse them (403), so an administrator
        # fuzzes those too
        callers = [researcher, admin] if operation.path.startswith(ADMIN_PATHS) else [researcher]
        for headers in callers:
            for override, cases in runs(operation, known):
                check = _checker(operation.label, headers, sent, failures)
                generate(schema, settings, operation, override, cases, check)
    elapsed = time.monotonic() - started
    total = sum(sent.values())
    print(f"\nschemathesis: {total} cases over {len(sent)} operations in {elapsed:.1f} s")
    assert len(sent) >= 21, sorted(sent)
    assert total >= MIN_CASES, sent
    assert not failures, failures[:20]
