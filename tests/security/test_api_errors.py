"""Every API error is the JSON envelope `{code, field, value, reason}`, whatever the input (issue 18 items 3
and 7, issue 11's browsable API): NUL bytes, huge numbers, slashes in names, URLs no route matches, Django's
own error pages, database refusals, another team's workflow, and a browser asking for HTML.

Through the real test client against PostgreSQL, authenticated with a portal API token unless said otherwise.
"""

from __future__ import annotations

import io
import logging

import pytest
from django.db import DataError
from django.http import JsonResponse
from django.urls import include, path
from rest_framework.test import APIClient

from access.models import AuditEvent, Role
from pools.models import Pool
from tests.factories import TokenFactory, UserFactory
from tests.workflows.conftest import spec

SUBMIT = "/api/pool/batch/workflow"
VALID_TYPES = "pool, pod_template, resource_validation, backend"


def _boom(request):
    raise RuntimeError("a bug in a view")


def _database_refusal(request):
    return JsonResponse({"exists": Pool.objects.filter(name="a\x00b").exists()})


# `@pytest.mark.urls(__name__)`: the portal's URLs plus two plain Django views that fail for real.
urlpatterns = [
    path("api/test-boom", _boom),
    path("api/test-data-error", _database_refusal),
    path("", include("portal.urls")),
]


@pytest.fixture(autouse=True)
def no_pod_creation(monkeypatch):
    from workflows import tasks as jobs

    monkeypatch.setattr(jobs.create_pods, "delay", lambda *args: None)


def token_client(user, *role_names: str) -> APIClient:
    token = TokenFactory(user=user, roles=list(Role.objects.filter(name__in=role_names)))
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token.secret}")
    return client


@pytest.fixture
def researcher(pool, alice) -> APIClient:
    """alice's token: submits to pool batch (osmo-batch), reads and lists (osmo-user)."""
    return token_client(alice, "osmo-batch", "osmo-user")


@pytest.fixture
def admin(db) -> APIClient:
    user = UserFactory(username="ops")
    user.groups.add(Role.objects.get(name="osmo-admin").group)
    return token_client(user, "osmo-admin")


def envelope(response, status: int) -> dict:
    assert response.status_code == status, (response.status_code, response.content[:300])
    assert response["Content-Type"].startswith("application/json"), response["Content-Type"]
    body = response.json()
    assert set(body) >= {"code", "field", "value", "reason"} and body["reason"], body
    return body


# ------------------------------------------------------------------------------------------ NUL bytes


@pytest.mark.parametrize(
    "method,url",
    [
        ("get", "/api/pool/a%00b/workflow"),
        ("post", "/api/pool/a\x00b/workflow"),
        ("get", "/api/configs/role/a%00b"),
        ("put", "/api/configs/ROLE/a\x00b"),
        ("get", "/api/auth/access_token/a%00b"),
        ("post", "/api/auth/access_token/a%00b"),
        ("delete", "/api/auth/access_token/a\x00b"),
        ("get", "/api/workflow/x%00y/events"),
        ("post", "/api/workflow/%00/cancel"),
    ],
)
def test_a_nul_in_the_path_is_a_404(researcher, admin, method, url):
    for client in (researcher, admin):
        body = envelope(getattr(client, method)(url, {}, format="json"), 404)
        assert body["code"] == "not_found" and body["field"] == "path" and "\x00" in body["value"]


@pytest.mark.parametrize(
    "url,field",
    [
        ("/api/resources?pools=%00", "pools"),
        ("/api/resources?pools=a&platforms=x%00y", "platforms"),
        ("/api/workflow?name=a%00b", "name"),
        ("/api/workflow?users=%00", "users"),
        ("/api/configs/history?name=x%00", "name"),
        ("/api/pool?all_pools=%00", "all_pools"),
        ("/api/workflow?a%00b=1", "a\x00b"),
        ("/api/pool/batch/workflow?priority=%00", "priority"),
    ],
)
def test_a_nul_in_the_query_is_a_400_naming_the_parameter(researcher, url, field):
    method = "post" if "/workflow?priority" in url else "get"
    body = envelope(getattr(researcher, method)(url), 400)
    assert body["field"] == field and "NUL" in body["reason"]


def test_a_nul_in_a_body_is_a_400_naming_where(researcher, admin):
    as_json = envelope(researcher.post(SUBMIT, {"file": "a\x00b"}, format="json"), 400)
    assert as_json["field"] == "file" and "NUL" in as_json["reason"]
    nested = envelope(
        researcher.post(SUBMIT, {"version": 2, "workflow": {"tasks": [{"name": "t\x00"}]}}, format="json"), 400
    )
    assert nested["field"] == "workflow.tasks[0].name"
    assert envelope(researcher.post(SUBMIT, {"k\x00": 1}, format="json"), 400)["field"] == "k\x00"
    as_yaml = envelope(researcher.post(SUBMIT, "version: 2\x00", content_type="application/yaml"), 400)
    assert as_yaml["field"] == "body"
    as_form = envelope(researcher.post(SUBMIT, "file=a%00b", content_type="application/x-www-form-urlencoded"), 400)
    assert as_form["field"] == "file"
    as_multipart = envelope(researcher.post(SUBMIT, {"file": "x\x00"}, format="multipart"), 400)
    assert as_multipart["field"] == "file"
    token = envelope(researcher.post("/api/auth/access_token/ci", {"roles": ["osmo-user\x00"]}, format="json"), 400)
    assert token["field"] == "roles[0]"
    config = envelope(
        admin.put("/api/configs/pod_template/t", {"configs": {"spec": {"x": "\x00"}}}, format="json"), 400
    )
    assert config["field"] == "configs.spec.x"


def test_a_bad_query_with_a_bad_body_names_the_query_field(researcher):
    """Found by the fuzzer: the error handler looked for the field's value in the unread body, whose NUL
    refusal then escaped as a 500."""
    body = envelope(researcher.post(f"{SUBMIT}?dry_run=maybe", {"file": "\x00"}, format="json"), 400)
    assert body["field"] == "dry_run" and body["value"] == "maybe"


def test_a_nul_in_a_bearer_token_is_a_401():
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Bearer pp_a\x00b")
    assert envelope(client.get("/api/workflow"), 401)["code"] == "authentication_failed"


# ------------------------------------------------------------------------------------------ numbers


HUGE = "9223372036854775808"  # 2**63: past PostgreSQL's bigint


@pytest.mark.parametrize(
    "url,field",
    [
        (f"/api/workflow?offset={HUGE}", "offset"),
        ("/api/workflow?offset=2147483648", "offset"),
        (f"/api/configs/history?offset={HUGE}", "offset"),
        (f"/api/configs/diff?config_type=pool&name=p&first_revision={HUGE}&second_revision=1", "first_revision"),
        (f"/api/configs/diff?config_type=pool&name=p&first_revision=1&second_revision={HUGE}", "second_revision"),
        (f"/api/workflow?limit={'9' * 5000}", "limit"),
    ],
)
def test_numbers_past_2_to_the_31_are_a_400_naming_the_field(admin, url, field):
    assert envelope(admin.get(url), 400)["field"] == field


def test_the_largest_offset_is_still_an_answer(researcher, admin):
    assert researcher.get("/api/workflow?offset=2147483647").json()["workflows"] == []
    assert admin.get("/api/configs/history?offset=2147483647").status_code == 200
    rollback = admin.post(
        "/api/configs/history/rollback", {"config_type": "pool", "name": "batch", "revision": int(HUGE)}, format="json"
    )
    assert envelope(rollback, 400)["field"] == "revision"


# ------------------------------------------------------------------------------------------ config types


def test_config_types_in_the_url_ignore_case(admin):
    bodies = [admin.get(f"/api/configs/{kind}/osmo-user") for kind in ("role", "ROLE", "Role")]
    assert [b.status_code for b in bodies] == [200, 200, 200]
    assert bodies[0].json() == bodies[1].json() == bodies[2].json()
    assert admin.get("/api/configs/history?config_types=role&name=osmo-user").status_code == 200


def test_an_unknown_config_type_lists_the_valid_ones_before_any_policy_question(researcher, admin):
    for client in (researcher, admin):  # the researcher may not read configs: still told the types
        body = envelope(client.get("/api/configs/widget"), 400)
        assert body["field"] == "config_type" and body["value"] == "widget" and VALID_TYPES in body["reason"]
    diff = envelope(admin.get("/api/configs/diff?config_type=widget&name=x&first_revision=1&second_revision=2"), 400)
    assert diff["field"] == "config_type" and VALID_TYPES in diff["reason"]


# ------------------------------------------------------------------------------------------ pools and workflows


def test_a_pool_name_with_a_slash_is_a_json_404(researcher):
    body = envelope(researcher.post("/api/pool/a%2Fb/workflow", spec("s"), format="json"), 404)
    assert body == {
        "code": "pool_not_found",
        "field": "pool",
        "value": "a/b",
        "reason": "no pool named 'a/b'",
        "error_code": "NOTFOUND",  # what OSMO's client reads (src/lib/utils/client.py handle_response)
        "message": "pool 'a/b': no pool named 'a/b'",
    }
    assert envelope(researcher.post("/api/pool/a/b/workflow", spec("s"), format="json"), 404)["value"] == "a/b"


def test_an_unknown_pool_is_a_404_unless_you_may_submit_nowhere(researcher, bob):
    body = envelope(researcher.post("/api/pool/nope/workflow", spec("s"), format="json"), 404)
    assert body["code"] == "pool_not_found" and body["value"] == "nope"
    nowhere = token_client(bob, "osmo-user")  # may submit to no pool: the policy's 403, nothing about pools
    assert envelope(nowhere.post("/api/pool/nope/workflow", spec("s"), format="json"), 403)["code"] == "forbidden"
    assert envelope(nowhere.post(SUBMIT, spec("s"), format="json"), 403)["code"] == "forbidden"


def test_another_teams_workflow_answers_exactly_as_a_missing_one(researcher, pool, db):
    submitted = researcher.post(SUBMIT, spec("secret"), format="json").json()["workflow_id"]
    outsider = token_client(UserFactory(username="mallory"))  # no roles: sees only their own workflows
    for suffix, method in (("", "get"), ("/spec", "get"), ("/events", "get"), ("/cancel", "post")):
        hidden = envelope(getattr(outsider, method)(f"/api/workflow/{submitted}{suffix}", {}, format="json"), 404)
        missing = envelope(getattr(outsider, method)(f"/api/workflow/absent-1{suffix}", {}, format="json"), 404)
        assert hidden == {
            **missing,
            "value": submitted,
            "reason": f"no workflow {submitted!r}",
            "message": f"workflow_id {submitted!r}: no workflow {submitted!r}",
        }
        assert hidden["code"] == "workflow_not_found"
    denied = AuditEvent.objects.filter(
        action="access.denied", actor__username="mallory", target=f"workflow:Read on workflow/{submitted}"
    )
    assert denied.count() == 4 and all(event.outcome == "denied" and event.detail["because"] for event in denied)
    assert researcher.get(f"/api/workflow/{submitted}").status_code == 200  # its own team still sees it


# ------------------------------------------------------------------------------------------ Django's own pages


def test_urls_no_route_matches_and_wrong_methods_are_json(researcher):
    for url in ("/api/nothing-here", "/api/workflow/a/b/c", "/api/pool//workflow"):
        body = envelope(researcher.get(url), 404)
        assert body["code"] == "not_found" and body["value"] == url
    assert envelope(researcher.patch("/api/workflow"), 405)["code"] == "method_not_allowed"
    assert APIClient().get("/nothing-here").status_code == 404  # outside /api/: Django's page, untouched
    assert not APIClient().get("/nothing-here")["Content-Type"].startswith("application/json")


def test_a_bad_host_and_an_oversized_form_are_json_400s(researcher, settings):
    assert envelope(researcher.get("/api/workflow", HTTP_HOST="evil.example"), 400)["code"] == "bad_request"
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    oversized = researcher.post(SUBMIT, "file=" + "x" * 5000, content_type="application/x-www-form-urlencoded")
    assert envelope(oversized, 400)["code"] in ("bad_request", "parse_error")


@pytest.mark.urls(__name__)
def test_a_server_error_under_api_is_the_envelope(researcher):
    researcher.raise_request_exception = False
    body = envelope(researcher.get("/api/test-boom"), 500)
    assert body["code"] == "server_error" and "a bug" not in body["reason"]  # nothing internal leaks


@pytest.mark.urls(__name__)
def test_a_database_refusal_reaching_a_view_is_a_400(researcher, alice, settings):
    plain = envelope(researcher.get("/api/test-data-error"), 400)  # a plain Django view: the middleware
    assert plain["code"] == "invalid" and "database refused" in plain["reason"]
    # A DRF view, with the NUL guard taken away so that the value really reaches the database
    settings.MIDDLEWARE = [m for m in settings.MIDDLEWARE if m != "portal.api_guards.APIGuardMiddleware"]
    with pytest.raises(DataError):
        Pool.objects.filter(name="a\x00b").exists()  # the premise: PostgreSQL refuses it
    unguarded = token_client(alice, "osmo-user")  # a new client: a client keeps the middleware it started with
    body = envelope(unguarded.get("/api/auth/access_token/a%00b"), 400)
    assert body["code"] == "invalid" and "NUL" in body["reason"]


# ------------------------------------------------------------------------------------------ browsable API


@pytest.mark.parametrize(
    "who,url,status",
    [
        ("nowhere", SUBMIT, 403),
        ("nowhere", "/api/pool/nope/workflow", 403),
        ("researcher", "/api/pool/nope/workflow", 404),
        ("researcher", SUBMIT, 405),
        ("researcher", "/api/configs/widget", 400),
        ("researcher", "/api/configs/pool", 403),
        ("researcher", "/api/workflow?offset=99999999999", 400),
        ("nowhere", "/api/workflow/absent-1", 404),
    ],
)
def test_a_browser_gets_the_same_answer_as_a_page(researcher, bob, who, url, status):
    client = researcher if who == "researcher" else token_client(bob, "osmo-user")
    as_page = client.get(url, HTTP_ACCEPT="text/html")
    as_json = client.get(url)
    assert as_page.status_code == as_json.status_code == status
    assert as_page["Content-Type"].startswith("text/html")
    assert as_json.json()["code"] in as_page.content.decode()  # the envelope, shown on the page


# ------------------------------------------------------------------------------------------ logging


@pytest.fixture
def console():
    """What the portal's console log handler (settings.LOGGING) writes, filters included."""
    handler = next(h for h in logging.getLogger().handlers if getattr(h, "name", "") == "console")
    stream = io.StringIO()
    previous = handler.setStream(stream)
    yield stream
    handler.setStream(previous)


@pytest.mark.urls(__name__)
def test_client_errors_are_logged_on_one_line_server_errors_with_the_traceback(researcher, bob, console):
    token_client(bob, "osmo-user").post(SUBMIT, spec("s"), format="json")  # 403
    researcher.get("/api/nothing-here")  # 404
    researcher.get("/api/workflow", HTTP_HOST="evil.example")  # 400, DisallowedHost carries its exception
    client_errors = console.getvalue()
    assert "Forbidden: /api/pool/batch/workflow" in client_errors and "Not Found: /api/nothing-here" in client_errors
    assert "Invalid HTTP_HOST header" in client_errors and "Traceback" not in client_errors
    assert len(client_errors.strip().splitlines()) == 4, client_errors  # 403, 404, and the bad host's two
    researcher.raise_request_exception = False
    researcher.get("/api/test-boom")
    assert "Traceback" in console.getvalue() and "a bug in a view" in console.getvalue()
