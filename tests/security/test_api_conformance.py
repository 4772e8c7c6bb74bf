"""The OpenAPI schema says what the API answers (issue #31 point 5): schemathesis' conformance checks over
every operation of the live schema (drf-spectacular's `/api/schema/`), as a researcher and as an admin,
each with a portal API token. Every answer must match its documented status, content type, headers and body
schema (date-time formats included), so the schema cannot drift from the code.

Deterministic as the fuzz test (tests/security/test_api_fuzz.py, whose WSGI app and helpers this shares):
derandomized Hypothesis, no example database, the test's transaction against PostgreSQL.
"""

from __future__ import annotations

import time

import pytest
import schemathesis
from rest_framework.test import APIClient
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
)

from access.models import Role
from configs import store
from tests.factories import UserFactory
from tests.security.test_api_fuzz import bearer, generate, no_pod_creation, openapi, runs, wsgi_app  # noqa: F401  (a fixture)
from tests.workflows.conftest import CLI, spec

pytestmark = pytest.mark.heavy

CHECKS = [response_schema_conformance, content_type_conformance, response_headers_conformance]
CASES_PER_OPERATION = 10  # per caller and operation (pinned paths more): about 1,200 requests
MIN_CASES = 1000


def failure_line(failure: BaseException) -> str:
    """What does not conform, on one line: the failure's title and the schema error's first line."""
    lines = [line.strip() for line in str(failure).splitlines() if line.strip()]
    return " | ".join(lines[:3])[:400]


def _conformance(label: str, headers: dict, sent: dict, failures: list):
    def check(case):
        response = case.call(headers=headers)
        sent[label] = sent.get(label, 0) + 1
        try:
            case.validate_response(response, checks=CHECKS, headers=headers)
        except BaseExceptionGroup as group:  # schemathesis' FailureGroup: each check that failed
            for failure in group.exceptions:
                failures.append(f"{label} -> {response.status_code}: {failure_line(failure)}")

    return check


def callers(alice) -> tuple[dict, dict]:
    """(researcher, admin) token headers; objects named `batch` of the types whose answers the issue named."""
    researcher = bearer(alice, "osmo-user", "osmo-batch")
    operator = UserFactory(username="operator")
    operator.groups.add(Role.objects.get(name="osmo-admin").group)
    store.apply("NODE_POOL", "batch", {"backend": "sim", "selector": {"label": {"key": "rack", "value": "a"}}}, CLI)
    store.apply("POD_TEMPLATE", "batch", {"spec": {"nodeSelector": {"rack": "a"}}}, CLI)
    body = {"backend": "sim", "instance_type": "g4dn.xlarge", "autoscaling": {"min_replicas": 0, "max_replicas": 2},
            "taints": [{"key": "gpu", "value": "", "effect": "NoSchedule"}], "spot": True}  # fmt: skip
    store.apply("MACHINE_POOL", "batch", body, CLI)  # GET /api/machine_pools/batch answers a whole status
    return researcher, bearer(operator, "osmo-admin")


@pytest.mark.parametrize(
    ("path", "parameters"),
    [
        ("/api/configs/{config_type}", {"config_type": "role"}),  # an array
        ("/api/configs/{config_type}", {"config_type": "pool"}),  # an object
        ("/api/configs/{config_type}/{name}", {"config_type": "node_pool", "name": "batch"}),
        ("/api/configs/{config_type}/{name}", {"config_type": "pool", "name": "batch"}),
        ("/api/configs/{config_type}/{name}", {"config_type": "pod_template", "name": "batch"}),  # free-form
        ("/api/configs/{config_type}/{name}", {"config_type": "role", "name": "osmo-admin"}),
        ("/api/machine_pools/{name}", {"name": "batch"}),
    ],
)
def test_the_answers_issue_31_named_conform(pool, alice, path, parameters):
    _, admin = callers(alice)
    operation = schemathesis.openapi.from_wsgi("/api/schema/?format=json", wsgi_app)[path]["GET"]
    case = operation.Case(path_parameters=parameters)
    response = case.call(headers=admin)
    assert response.status_code == 200
    case.validate_response(response, checks=CHECKS, headers=admin)  # raises what does not conform


def test_every_answer_conforms_to_the_schema(pool, alice):
    researcher, admin = callers(alice)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=researcher["Authorization"])
    workflow_id = client.post("/api/pool/batch/workflow", spec("conforming"), format="json").json()["workflow_id"]
    known = {"pool": "batch", "workflow_id": workflow_id, "name": "batch"}
    schema, settings = openapi(wsgi_app)
    failures: list[str] = []
    sent: dict[str, int] = {}
    started = time.monotonic()
    for result in schema.get_all_operations():
        operation = result.ok()
        for who, headers in (("researcher", researcher), ("admin", admin)):
            for override, cases in runs(operation, known, CASES_PER_OPERATION):
                check = _conformance(f"{who} {operation.label}", headers, sent, failures)
                generate(schema, settings, operation, override, cases, check)
    elapsed = time.monotonic() - started
    total = sum(sent.values())
    print(f"\nschemathesis conformance: {total} cases over {len(sent)} (caller, operation) pairs in {elapsed:.1f} s")
    operations = {label.split(" ", 1)[1] for label in sent}
    assert len(operations) == len(list(schema.get_all_operations())), sorted(operations)
    assert total >= MIN_CASES, sent
    unique = sorted(set(failures))
    if unique:
        pytest.fail(f"{len(unique)} answers do not conform:\n" + "\n".join(unique[:60]), pytrace=False)
