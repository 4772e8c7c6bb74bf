"""Every integer a client sends in a query string, a path or an API body has a bound checked at its field
(issue #31 point 3; docs/limits.md, "Query parameters and API bodies").

The OpenAPI schema the portal serves is walked: every integer parameter and every integer field of a request
body must declare a `minimum` and a `maximum`, so a parameter added later without a bound fails here. Then
each integer parameter is sent out of bounds and as what is no whole number (1e30, 2^63, -1 below a bound of
0, NaN, inf, a 5,000-digit number, `²`, other scripts' digits): a 400 naming the parameter, the value and
the bound, never a 500 (`²`.isdigit() is true and int() refuses it; a 5,000-digit int() raises too).
"""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from access.models import Role
from tests.factories import ProjectFactory, TokenFactory, UserFactory
from tests.workflows.conftest import submitted  # noqa: F401  (a fixture)

INTEGER = ("integer", "number")
# Companions an operation needs besides the integer parameter under test (a diff names its type).
COMPANIONS = {"/api/configs/diff": {"config_type": "POOL", "first_revision": "1", "second_revision": "1"}}
NOT_WHOLE = ["1e30", "NaN", "inf", "-inf", "5.5", "0x10", "9" * 5000, "\u00b2", "\u0661\u0662", "true", ""]


@pytest.fixture(autouse=True)
def no_pod_creation(monkeypatch):
    from workflows import tasks as jobs

    monkeypatch.setattr(jobs.create_pods, "delay", lambda *args: None)


@pytest.fixture
def operator(pool) -> APIClient:
    user = UserFactory(username="ops")
    user.groups.add(Role.objects.get(name="osmo-admin").group)
    token = TokenFactory(user=user, roles=list(Role.objects.filter(name="osmo-admin")))
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token.secret}")
    client.raise_request_exception = False  # a 500 is an answer to assert on, not an exception in the test
    return client


@pytest.fixture
def schema(operator) -> dict:
    return operator.get("/api/schema/?format=json").json()


def resolve(schema: dict, node: dict) -> dict:
    while "$ref" in node:
        node = schema["components"]["schemas"][node["$ref"].rsplit("/", 1)[-1]]
    return node


def integer_parameters(schema: dict) -> list[tuple[str, str, str, dict]]:
    """(method, path, parameter, its schema) of every integer parameter in a query or a path."""
    found = []
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            for parameter in operation.get("parameters", []) if isinstance(operation, dict) else []:
                declared = resolve(schema, parameter.get("schema", {}))
                items = resolve(schema, declared.get("items", {}))
                if declared.get("type") in INTEGER or items.get("type") in INTEGER:
                    found.append((method, path, parameter["name"], declared))
    return found


def body_integers(schema: dict, node: dict, at: str, seen: frozenset = frozenset()) -> list[tuple[str, dict]]:
    """(path in the body, schema) of every integer a request body may carry (not the read-only ones)."""
    if "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[-1]
        return [] if name in seen else body_integers(schema, resolve(schema, node), at, seen | {name})
    if node.get("readOnly"):
        return []
    found = [(at, node)] if node.get("type") in INTEGER else []
    for combined in ("allOf", "oneOf", "anyOf"):
        for part in node.get(combined, []):
            found += body_integers(schema, part, at, seen)
    if "items" in node:
        found += body_integers(schema, node["items"], f"{at}[]", seen)
    for name, child in node.get("properties", {}).items():
        found += body_integers(schema, child, f"{at}.{name}", seen)
    if isinstance(node.get("additionalProperties"), dict):
        found += body_integers(schema, node["additionalProperties"], f"{at}.*", seen)
    return found


def request_integers(schema: dict) -> list[tuple[str, str, str, dict]]:
    found = []
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            content = operation.get("requestBody", {}).get("content", {}) if isinstance(operation, dict) else {}
            for media, body in content.items():
                if "json" in media:
                    found += [(method, path, at, node) for at, node in body_integers(schema, body["schema"], "")]
    return found


def test_every_integer_parameter_and_body_field_of_the_schema_declares_its_bounds(schema):
    parameters, fields = integer_parameters(schema), request_integers(schema)
    assert {(path, name) for _, path, name, _ in parameters} >= {
        ("/api/workflow", "limit"),
        ("/api/workflow/{workflow_id}/task/{task_name}/logs", "tail"),
        ("/api/configs/history/{config_type}/revision/{revision}", "revision"),
    }
    assert {at for _, path, at, _ in fields} >= {".revision", ".priority", ".gpu.weight"}
    unbounded = [
        f"{method.upper()} {path} {name}"
        for method, path, name, declared in parameters + fields
        if declared.get("minimum") is None or declared.get("maximum") is None
    ]
    assert unbounded == [], "integers without a declared minimum and maximum (portal.api.BoundedInt / IntParam)"


def out_of_bounds(declared: dict) -> list[object]:
    low, high = declared["minimum"], declared["maximum"]
    return [high + 1, low - 1, 2**63, -(2**63) - 1, 10**30, *NOT_WHOLE]


def test_each_integer_parameter_out_of_bounds_is_a_400_naming_it(operator, schema, submitted):  # noqa: F811
    workflow = submitted()
    known = {
        "workflow_id": workflow.workflow_id,
        "task_name": workflow.tasks.first().name,
        "config_type": "POOL",
        "revision": "1",
        "pool": "batch",
    }
    failures, sent = [], 0
    for method, path, name, declared in integer_parameters(schema):
        in_path = f"{{{name}}}" in path
        for value in out_of_bounds(declared):
            if value == "" or (in_path and not str(value).lstrip("-").isascii()):
                continue  # an empty parameter is its default; a path of other scripts' digits matches no route
            url = path.format(**{**known, name: value} if in_path else known)
            query = {} if in_path else {**COMPANIONS.get(path, {}), name: value}
            response = (
                getattr(operator, method)(url, query)
                if method == "get"
                else getattr(operator, method)(
                    f"{url}?" + "&".join(f"{k}={v}" for k, v in query.items()), {}, format="json"
                )
            )
            sent += 1
            body = response.json() if response["Content-Type"].startswith("application/json") else {}
            # `1e30`, `-1` in a path match no route; nor do digits int() refuses (Django's converter raises ValueError)
            expected_404 = in_path and not (str(value).isdigit() and len(str(value)) <= 4300)
            wanted = (404, "path") if expected_404 else (400, name)
            if (response.status_code, body.get("field")) != wanted or (
                not expected_404 and str(declared["maximum"]) not in body.get("reason", "")
            ):
                failures.append(f"{method.upper()} {path} {name}={str(value)[:20]!r}: {response.status_code} {body}")
    assert sent > 100
    assert failures == []


def test_within_bounds_the_edges_are_taken(operator, submitted):  # noqa: F811
    workflow = submitted()
    task = workflow.tasks.first().name
    for url in (
        f"/api/workflow/{workflow.workflow_id}/task/{task}/logs?tail=5000",
        f"/api/workflow/{workflow.workflow_id}/logs?last_n_lines=1&retry_id=2147483647",
        "/api/workflow?limit=1000&offset=2147483647",
        "/api/configs/history?limit=1&offset=0&revision=2147483647",
        "/api/auth/user?start_index=-2147483648&count=2147483647",
    ):
        assert operator.get(url).status_code == 200, url


@pytest.mark.parametrize(
    ("url", "method", "body", "field", "bound"),
    [
        ("/api/teams/projects/vision", "patch", {"priority": 101}, "priority", "from -100 to 100"),
        ("/api/teams/projects/vision", "patch", {"priority": -(2**63)}, "priority", "from -100 to 100"),
        ("/api/teams/projects/vision", "patch", {"priority": 1e30}, "priority", "from -100 to 100"),
        ("/api/teams/projects/vision", "patch", {"priority": "NaN"}, "priority", "from -100 to 100"),
        (
            "/api/quotas/node_pools/sim-default/projects/vision",
            "put",
            {"gpu": {"weight": 2**31}},
            "gpu.weight",
            "≤ 2147483647",
        ),
        (
            "/api/quotas/node_pools/sim-default/projects/vision",
            "put",
            {"gpu": {"weight": -1}},
            "gpu.weight",
            "≤ 2147483647",
        ),
        (
            "/api/quotas/node_pools/sim-default/projects/vision",
            "put",
            {"gpu": {"deserved": 2**62 + 1}},
            "gpu.deserved",
            "is larger than 4611686018427387904",
        ),
        (
            "/api/quotas/node_pools/sim-default/projects/vision",
            "put",
            {"memory": {"limit": "1e29"}},
            "memory.limit",
            "is larger than 4611686018427387904",
        ),
        (
            "/api/configs/history/rollback",
            "post",
            {"config_type": "POOL", "revision": 2**63},
            "revision",
            "1 to 2147483647",
        ),
    ],
)
def test_an_integer_of_a_body_out_of_bounds_is_a_400_naming_it(operator, url, method, body, field, bound):
    ProjectFactory(name="vision")
    response = getattr(operator, method)(url, body, format="json")
    assert response.status_code == 400, response.content
    answer = response.json()
    assert answer["field"] == field and bound in answer["reason"], answer


# ------------------------------------------------------------------------------------------ workflow specs

TASK_BOUNDS = {
    "cpu": ("1048576", "1048577"),
    "gpu": (1024, 1025),
    "memory": ("1Pi", "1025Ti"),
    "storage": ("1Pi", "1025Ti"),
}
NOT_AMOUNTS = [2**63, 10**30, 1e300, -1, "NaN", "inf", "\u00b2", "9" * 5000, "99999999999999999999"]


@pytest.mark.parametrize("resource", sorted(TASK_BOUNDS))
def test_a_task_resource_out_of_bounds_is_a_400_at_its_field_and_the_bound_is_taken(pool, alice, resource):
    from tests.workflows.conftest import api, spec

    client = api(alice)
    client.raise_request_exception = False
    most, beyond = TASK_BOUNDS[resource]
    for value in (beyond, *NOT_AMOUNTS):
        document = spec("big")
        document["workflow"]["resources"]["default"][resource] = value
        response = client.post("/api/pool/batch/workflow?dry_run=true", document, format="json")
        assert response.status_code == 400, (value, response.content[:300])
        assert response.json()["field"] == f"resources.default.{resource}", (value, response.json())
    document = spec("big")
    document["workflow"]["resources"]["default"][resource] = most
    answer = client.post("/api/pool/batch/workflow?dry_run=true", document, format="json")
    assert answer.status_code == 200, answer.content[:300]


# ------------------------------------------------------------------------------------------ list lengths


def arrays(schema: dict) -> list[str]:
    """Every array a client may send, as `METHOD path name`: query parameters and request-body fields."""
    found = []
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            if not isinstance(operation, dict):
                continue
            for parameter in operation.get("parameters", []):
                declared = resolve(schema, parameter.get("schema", {}))
                if declared.get("type") == "array":
                    found.append((f"{method.upper()} {path} {parameter['name']}", declared))
            for media, body in operation.get("requestBody", {}).get("content", {}).items():
                if "json" in media:
                    found += [
                        (f"{method.upper()} {path} {at}", node) for at, node in body_arrays(schema, body["schema"])
                    ]
    return found


def body_arrays(schema: dict, node: dict, at: str = "", seen: frozenset = frozenset()) -> list[tuple[str, dict]]:
    if "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[-1]
        return [] if name in seen else body_arrays(schema, resolve(schema, node), at, seen | {name})
    if node.get("readOnly"):
        return []
    found = [(at, node)] if node.get("type") == "array" else []
    for combined in ("allOf", "oneOf", "anyOf"):
        for part in node.get(combined, []):
            found += body_arrays(schema, part, at, seen)
    for name, child in node.get("properties", {}).items():
        found += body_arrays(schema, child, f"{at}.{name}", seen)
    return found


def test_every_list_a_client_sends_declares_its_most_items(schema):
    found = arrays(schema)
    assert {name for name, _ in found} >= {"GET /api/workflow users", "POST /api/auth/access_token/{name} .roles"}
    assert [name for name, declared in found if declared.get("maxItems") != 1000] == []


def test_a_list_parameter_of_more_than_1000_names_is_a_400_naming_it(operator, schema, settings):
    comma_separated = ",".join(f"n{i}" for i in range(1001))
    assert operator.get(f"/api/workflow?users={comma_separated}").json()["reason"] == "at most 1000 items, not 1001"
    repeated = operator.get("/api/workflow?" + "&".join(f"users=u{i}" for i in range(1001)))
    assert repeated.status_code == 400 and repeated.json()["field"] == "query"  # Django's DATA_UPLOAD_MAX_NUMBER_FIELDS
    settings.DATA_UPLOAD_MAX_NUMBER_FIELDS = 5000  # past Django's bound, to reach each parameter's own
    failures = []
    for name, _ in arrays(schema):
        method, path, parameter = name.split(" ")
        if parameter.startswith(".") or "{" in path and "{pool}" not in path:
            continue  # bodies: below
        item = {"config_types": "POOL", "env_vars": "K=v", "label": "k=v", "no_label": "k=v"}.get(parameter, "n")
        query = "&".join(f"{parameter}={item}{i if item == 'n' else ''}" for i in range(1001))
        response = getattr(operator, method.lower())(f"{path.format(pool='batch')}?{query}")
        body = response.json()
        if (response.status_code, body.get("field")) != (400, parameter) or "1000" not in body.get("reason", ""):
            failures.append(f"{name}: {response.status_code} {body.get('field')} {body.get('reason')}")
    assert failures == []


@pytest.mark.parametrize(
    ("url", "body", "field"),
    [
        ("/api/auth/access_token/t1", {"roles": [f"r{i}" for i in range(1001)]}, "roles"),
        ("/api/auth/access_token/t1", {"roles": ",".join(f"r{i}" for i in range(1001))}, "roles"),
        ("/api/configs/history/rollback", {"config_type": "POOL", "revision": 1, "tags": ["t"] * 1001}, "tags"),
        ("/api/teams/projects", {"name": "p", "department": "d", "idp_groups": ["g"] * 1001}, "idp_groups"),
    ],
)
def test_a_body_list_of_more_than_1000_items_is_a_400_naming_it(operator, url, body, field):
    response = operator.post(url, body, format="json")
    assert response.status_code == 400, response.content[:300]
    assert response.json()["field"] == field, response.json()
