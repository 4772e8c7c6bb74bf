"""The workflow REST API: submission shapes, the error matrix (JSON envelope, never a 500, fuzzed), listing
and visibility decided by access.policy, detail/spec/events, cancel, query counts, and the OpenAPI schema."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
import yaml
from django.utils import timezone
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.factories import TaskFactory, TokenFactory, UserFactory, WorkflowFactory
from tests.queries import assert_constant_queries, captured_queries, queries_of
from tests.workflows.conftest import api, spec
from workflows.models import Task, TaskStatus, Workflow

SUBMIT = "/api/pool/batch/workflow"


@pytest.fixture(autouse=True)
def no_pod_creation(monkeypatch):
    """These tests are about the API: what would be enqueued after commit is recorded, not run."""
    from workflows import tasks as jobs

    enqueued: list[int] = []
    monkeypatch.setattr(jobs.create_pods, "delay", enqueued.append)
    return enqueued


def envelope(response) -> dict:
    body = response.json()
    assert {"code", "field", "value", "reason"} <= set(body), body
    return body


# ------------------------------------------------------------------------------------------ submission


def test_submit_as_file_text_document_yaml_or_upload(pool, alice, no_pod_creation, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        _submit_five_ways(api(alice))
    assert len(no_pod_creation) == 5  # each enqueued once, after commit
    assert Workflow.objects.get(workflow_id="as-file-1").submitted_by == alice


def _submit_five_ways(client):
    text = yaml.safe_dump(spec("as-file"))
    as_file = client.post(SUBMIT, {"file": text}, format="json")
    assert as_file.status_code == 200, as_file.json()
    body = as_file.json()
    assert body["name"] == body["workflow_id"] == "as-file-1" and body["status"] == "PENDING"
    assert body["tasks"] == [{"name": "t0", "platform": "cpu", "pod_name": "as-file-1-t0"}]
    assert isinstance(body["warnings"], list)
    as_document = client.post(SUBMIT, spec("as-doc"), format="json")
    assert as_document.json()["workflow_id"] == "as-doc-1"
    as_yaml = client.post(SUBMIT, yaml.safe_dump(spec("as-yaml")), content_type="application/yaml")
    assert as_yaml.status_code == 200 and as_yaml.json()["workflow_id"] == "as-yaml-1"
    as_text = client.post(SUBMIT, yaml.safe_dump(spec("as-yaml")), content_type="text/plain")
    assert as_text.json()["workflow_id"] == "as-yaml-2"
    from django.core.files.uploadedfile import SimpleUploadedFile

    upload = SimpleUploadedFile("train.yaml", yaml.safe_dump(spec("as-upload")).encode(), "application/yaml")
    as_upload = client.post(SUBMIT, {"file": upload}, format="multipart")
    assert as_upload.status_code == 200 and as_upload.json()["workflow_id"] == "as-upload-1"


def test_dry_run_returns_resolved_pods_with_provenance_and_placement(pool, alice, no_pod_creation):
    response = api(alice).post(f"{SUBMIT}?dry_run=true", {"file": yaml.safe_dump(spec("dry", tasks=2))}, format="json")
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["workflow_id"] is None and body["status"] == "DRY_RUN"
    task = body["tasks"][0]
    assert task["ok"] is True and task["pod"]["metadata"]["name"] == "dry-dry-run-t0"
    # as it would be created: confined to the node pool it is charged to (docs/quotas.md, "Confinement")
    selector = {"hive.openshift.io/machine-pool": "cpu", "pool-portal/node-pool": "sim-default"}
    assert task["pod"]["spec"]["nodeSelector"] == selector
    assert task["provenance"] and "placement" in task and "fits" in task["placement"]
    valid = api(alice).post(f"{SUBMIT}?validation_only=true", spec("valid"), format="json").json()
    assert valid["status"] == "VALID" and "pod" not in valid["tasks"][0]
    assert not Workflow.objects.exists() and no_pod_creation == []


def test_priority_is_stored_and_checked(pool, alice):
    assert api(alice).post(f"{SUBMIT}?priority=low", spec("low"), format="json").status_code == 200
    assert Workflow.objects.get(workflow_id="low-1").priority == "LOW"
    refused = api(alice).post(f"{SUBMIT}?priority=URGENT", spec("urgent"), format="json")
    assert refused.status_code == 400
    assert envelope(refused)["field"] == "priority" and refused.json()["error_code"] == "USAGE"


def test_submission_with_a_portal_token(pool, alice):
    from access.models import Role

    token = TokenFactory(user=alice, roles=list(Role.objects.filter(name="osmo-batch")))
    client = api()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token.secret}")
    assert client.post(SUBMIT, spec("tokened"), format="json").status_code == 200
    assert client.get("/api/workflow").json()["workflows"][0]["workflow_id"] == "tokened-1"


# ------------------------------------------------------------------------------------------ error matrix


@pytest.mark.parametrize(
    ("case", "status", "code", "field"),
    [
        ("anonymous", 401, "not_authenticated", ""),
        ("unknown pool", 404, "pool_not_found", "pool"),
        ("no access", 403, "forbidden", "resource"),
        ("not YAML", 400, "invalid_spec", ""),
        ("unknown field", 400, "invalid_spec", "tasks[0].imag"),
        ("missing resource", 400, "invalid_spec", "tasks[0].resource"),
        ("unknown platform", 400, "invalid_spec", "resources.default.platform"),
        ("gate refused", 400, "workflow_invalid", "tasks[0].spec.containers[0].securityContext.privileged"),
        ("empty body", 400, "invalid_spec", "file"),
        ("file not text", 400, "invalid_spec", "file"),
        ("bad JSON", 400, "parse_error", ""),
        ("bad flag", 400, "invalid", "dry_run"),
        ("too large", 400, "parse_error", ""),
        ("maintenance", 409, "pool_in_maintenance", "pool"),
    ],
)
def test_error_matrix(case, status, code, field, pool, alice, bob):
    client, url, body, kwargs = api(alice), SUBMIT, spec("bad"), {"format": "json"}
    if case == "anonymous":
        client = api()
    elif case == "unknown pool":
        url = "/api/pool/batch-nope/workflow"  # alice may use batch*: the pool does not exist
    elif case == "no access":
        client = api(bob)
    elif case == "not YAML":
        body = {"file": "version: 2\nworkflow: [unclosed"}
    elif case == "unknown field":
        body["workflow"]["tasks"][0]["imag"] = "x"
    elif case == "missing resource":
        body["workflow"]["tasks"][0]["resource"] = "gpu"
    elif case == "unknown platform":
        body["workflow"]["resources"]["default"]["platform"] = "tpu"
    elif case == "gate refused":
        body["workflow"]["tasks"][0]["privileged"] = True
    elif case == "empty body":
        body = {}
    elif case == "file not text":
        body = {"file": 42}
    elif case == "bad JSON":
        body, kwargs = "{not json", {"content_type": "application/json"}
    elif case == "too large":
        body = {"file": "#" * 3_000_000}
    elif case == "bad flag":
        url = f"{SUBMIT}?dry_run=maybe"
    elif case == "maintenance":
        pool.enable_maintenance = True
        pool.save(update_fields=["enable_maintenance"])
    response = client.post(url, body, **kwargs)
    assert response.status_code == status, response.json()
    error = envelope(response)
    assert (error["code"], error["field"]) == (code, field), error
    assert error["reason"]
    if case == "gate refused":
        assert error["problems"][0]["task"] == "t0" and error["problems"][0]["platform"] == "cpu"
    assert not Workflow.objects.exists()


def test_a_spec_error_names_the_path_value_and_reason(pool, alice):
    document = spec("bad")
    document["workflow"]["resources"]["default"]["memory"] = "10A"
    error = api(alice).post(SUBMIT, document, format="json").json()
    assert {key: error[key] for key in ("code", "field", "value", "reason", "message")} == {
        "code": "invalid_spec",
        "field": "resources.default.memory",
        "value": "10A",
        "reason": "is not a Kubernetes quantity; use e.g. 16Gi or 512Mi",
        "message": "resources.default.memory '10A': is not a Kubernetes quantity; use e.g. 16Gi or 512Mi",
    }


def test_yaml_errors_name_line_and_column(pool, alice):
    error = api(alice).post(SUBMIT, {"file": "version: 2\nworkflow:\n  name: [x\n"}, format="json").json()
    assert error["code"] == "invalid_spec" and error["reason"].startswith("file:4:1: invalid YAML")


@pytest.mark.parametrize(
    "text",
    [
        "a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
        "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
        "e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: [*e, *e, *e, *e, *e, *e, *e, *e, *e]\n",
        "version: 2\nworkflow: " + "[" * 5000 + "]" * 5000 + "\n",
        "version: 2\nworkflow: {name: x, labels: {a: .nan}}\n",
        "version: 2\nworkflow: {name: x, labels: {when: 2024-01-01}, tasks: []}\n",
        "version: 2\nworkflow:\n  name: nul\n  resources: {default: {}}\n"
        '  tasks: [{name: t, image: x, command: ["a\\0b"]}]\n',
    ],
)
def test_hostile_documents_are_refused_cleanly(pool, alice, text):
    response = api(alice).post(SUBMIT, {"file": text}, format="json")
    assert response.status_code == 400, response.content[:300]
    assert envelope(response)["code"] == "invalid_spec"


JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4),
    max_leaves=25,
)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    garbage=st.one_of(
        st.binary(max_size=300),
        st.text(max_size=300),
        JSONISH.map(lambda value: json.dumps(value)),
        JSONISH.map(lambda value: json.dumps({"version": 2, "workflow": value})),
        JSONISH.map(lambda value: json.dumps({"file": yaml.safe_dump({"version": 2, "workflow": value})})),
        JSONISH.map(
            lambda value: json.dumps(
                {"version": 2, "workflow": {"name": "fz", "resources": {"default": {}}, "tasks": [value]}}
            )
        ),
    ),
    content_type=st.sampled_from(
        [
            "application/json",
            "application/yaml",
            "text/plain",
            "application/xml",
            "multipart/form-data; boundary=x",
            "application/x-www-form-urlencoded",
        ]
    ),
)
def test_fuzzed_garbage_never_breaks_the_endpoint(pool, alice, garbage, content_type):
    data = garbage if isinstance(garbage, bytes) else garbage.encode("utf-8", "surrogatepass")
    response = api(alice).generic("POST", SUBMIT, data, content_type=content_type)
    assert response.status_code < 500, (response.status_code, data[:200])
    if response.status_code != 200:
        envelope(response)


# ------------------------------------------------------------------------------------------ reading


@pytest.fixture
def three(pool, alice, carol, bob):
    """alice: 2 workflows (one cancelled); carol: 1."""
    for user, name in ((alice, "a-one"), (alice, "a-two"), (carol, "c-one")):
        assert api(user).post(SUBMIT, spec(name), format="json").status_code == 200
    Workflow.objects.filter(workflow_id="a-one-1").update(status="CANCELLED")


def ids(response) -> list[str]:
    assert response.status_code == 200, response.json()
    return [w["workflow_id"] for w in response.json()["workflows"]]


def test_list_defaults_to_your_own_workflows(three, alice, carol, bob):
    assert ids(api(alice).get("/api/workflow")) == ["a-two-1", "a-one-1"]
    assert ids(api(carol).get("/api/workflow")) == ["c-one-1"]
    assert ids(api(bob).get("/api/workflow")) == []


def test_others_workflows_need_workflow_list_on_their_pool(three, alice, bob, batch_role):
    from access.models import Role

    assert ids(api(alice).get("/api/workflow?all_users=true")) == ["c-one-1", "a-two-1", "a-one-1"]
    assert ids(api(alice).get("/api/workflow?users=carol")) == ["c-one-1"]
    Role.objects.filter(name="osmo-user").update(
        policies=[{"effect": "Allow", "actions": ["workflow:Read"], "resources": ["*"]}]
    )  # no workflow:List for bob
    assert ids(api(bob).get("/api/workflow?all_users=true")) == []
    assert ids(api(bob).get("/api/workflow?users=alice,carol")) == []


def test_list_filters_and_paging(three, alice):
    client = api(alice)
    assert ids(client.get("/api/workflow?statuses=CANCELLED")) == ["a-one-1"]
    assert ids(client.get("/api/workflow?statuses=pending&statuses=cancelled")) == ["a-two-1", "a-one-1"]
    assert ids(client.get("/api/workflow?all_users=true&pools=batch&order=asc")) == ["a-one-1", "a-two-1", "c-one-1"]
    assert ids(client.get("/api/workflow?all_users=true&name=one")) == ["c-one-1", "a-one-1"]
    first = client.get("/api/workflow?all_users=true&limit=2").json()
    assert first["more_entries"] is True and len(first["workflows"]) == 2
    assert ids(client.get("/api/workflow?all_users=true&limit=2&offset=2")) == ["a-one-1"]
    assert ids(client.get("/api/workflow?submitted_after=2999-01-01T00:00:00Z")) == []
    assert envelope(client.get("/api/workflow?limit=1001"))["field"] == "limit"
    assert envelope(client.get("/api/workflow?statuses=DONE"))["field"] == "statuses"
    row = client.get("/api/workflow").json()["workflows"][0]
    assert {
        "name",
        "workflow_id",
        "uuid",
        "pool",
        "submitted_by",
        "priority",
        "status",
        "task_count",
        "submit_time",
        "start_time",
        "end_time",
    } <= set(row)


def test_list_filters_by_priority_users_and_time(three, alice):
    """The filters `test_list_filters_and_paging` leaves out (workflows/filters.py WorkflowFilter)."""
    start = timezone.now().replace(microsecond=0)
    for minutes, workflow_id in enumerate(("a-one-1", "a-two-1", "c-one-1")):
        Workflow.objects.filter(workflow_id=workflow_id).update(created_at=start + timedelta(minutes=minutes))
    Workflow.objects.filter(workflow_id="c-one-1").update(priority="HIGH")
    client = api(alice)
    assert ids(client.get("/api/workflow?all_users=true&priority=high")) == ["c-one-1"]
    assert ids(client.get("/api/workflow?all_users=true&priority=LOW,NORMAL")) == ["a-two-1", "a-one-1"]
    assert ids(client.get("/api/workflow?users=alice&users=carol")) == ["c-one-1", "a-two-1", "a-one-1"]
    middle = (start + timedelta(minutes=1)).isoformat()
    assert ids(client.get("/api/workflow", {"all_users": "true", "submitted_before": middle})) == ["a-one-1"]
    assert ids(client.get("/api/workflow", {"all_users": "true", "submitted_after": middle})) == ["c-one-1", "a-two-1"]


def test_the_cli_door_filters_through_the_same_filterset(three):
    """`who=None` (the CLI) skips the API's serializer: statuses in any case, and a refused value is a
    PortalError naming the field (not a filter silently dropped)."""
    from portal.errors import PortalError
    from workflows import queries

    page = queries.list_workflows(None, queries.WorkflowQuery(statuses=["cancelled"], all_users=True))
    assert [w.workflow_id for w in page.workflows] == ["a-one-1"]
    with pytest.raises(PortalError) as refused:
        queries.list_workflows(None, queries.WorkflowQuery(users=["al\x00ice"], all_users=True))
    assert refused.value.field == "users"


def test_list_query_count_does_not_grow_with_rows(three, alice):
    client = api(alice)
    client.get("/api/workflow?all_users=true")  # warm up
    few = queries_of(lambda: client.get("/api/workflow?all_users=true&limit=1"))
    many = queries_of(lambda: client.get("/api/workflow?all_users=true&limit=100"))
    assert len(few) == len(many) <= 4, many

    def add_workflows():  # stored ones, each with tasks: the list counts them
        for workflow in WorkflowFactory.create_batch(20, pool=Workflow.objects.first().pool, submitted_by=alice):
            TaskFactory.create_batch(3, workflow=workflow)

    assert_constant_queries(lambda: client.get("/api/workflow?all_users=true&limit=100"), grow=add_workflows)


def test_detail_spec_and_events(three, alice, carol, bob):
    detail = api(alice).get("/api/workflow/a-two-1")
    assert detail.status_code == 200
    body = detail.json()
    assert body["workflow_id"] == "a-two-1" and body["submitted_by"] == "alice" and body["pool"] == "batch"
    assert body["tasks"][0]["name"] == "t0" and body["tasks"][0]["status"] == "PENDING"
    assert body["tasks"][0]["pod_name"] == "a-two-1-t0"
    assert api(alice).get("/api/workflow/a-two-1/spec").json()["spec"] == spec("a-two")
    events = api(alice).get("/api/workflow/a-two-1/events").json()["events"]
    assert [(e["task"], e["kind"], e["message"]) for e in events] == [("t0", "SUBMITTED", "submitted by alice")]
    assert api(carol).get("/api/workflow/a-two-1").status_code == 200  # workflow:* on pool/batch*
    denied = api(bob).get("/api/workflow/a-two-1")  # osmo-user holds workflow:Read on *: allowed
    assert denied.status_code == 200
    from access.models import Role

    Role.objects.filter(name="osmo-user").update(policies=[])
    hidden = api(bob).get("/api/workflow/a-two-1/events")  # another team's: exactly as a missing one
    assert hidden.status_code == 404 and envelope(hidden) == {
        "code": "workflow_not_found",
        "field": "workflow_id",
        "value": "a-two-1",
        "reason": "no workflow 'a-two-1'",
        "error_code": "NOTFOUND",
        "message": "workflow_id 'a-two-1': no workflow 'a-two-1'",
    }
    missing = api(alice).get("/api/workflow/nope-1")
    assert missing.status_code == 404 and envelope(missing)["code"] == "workflow_not_found"


def test_the_flat_tasks_carry_every_field_the_group_tasks_have(three, alice):
    """A running task's node is `node_name` in the flat `tasks` as in `groups[].tasks[]`, and so is every other
    field of the group's task, with the same value; only `status` keeps the portal's names in the flat list."""
    started = timezone.now()
    Task.objects.filter(workflow__workflow_id="a-two-1").update(
        status=TaskStatus.RUNNING, node="cpu-node-3", pod_created_at=started, started_at=started
    )
    body = api(alice).get("/api/workflow/a-two-1").json()
    [flat], [in_group] = body["tasks"], body["groups"][0]["tasks"]
    assert flat["node_name"] == in_group["node_name"] == flat["node"] == "cpu-node-3"
    assert {key: flat.get(key, "(missing)") for key in in_group if key != "status"} == {
        key: value for key, value in in_group.items() if key != "status"
    }
    assert (flat["status"], in_group["status"]) == ("RUNNING", "RUNNING")
    cancelled = api(alice).get("/api/workflow/a-one-1").json()
    [flat], [in_group] = cancelled["tasks"], cancelled["groups"][0]["tasks"]
    assert flat["node_name"] is in_group["node_name"] is None  # no node yet: null in both, as OSMO has it


def test_cancel_over_the_api(three, alice, bob, carol):
    from access.models import Role

    Role.objects.filter(name="osmo-user").update(policies=[])
    refused = api(bob).post("/api/workflow/a-two-1/cancel", {}, format="json")  # may not even see it
    assert refused.status_code == 404 and envelope(refused)["code"] == "workflow_not_found"
    done = api(alice).post("/api/workflow/a-two-1/cancel", {"message": "oops"}, format="json")
    assert done.status_code == 200 and done.json()["status"] == "FAILED_CANCELED"  # OSMO's name for CANCELLED
    assert done.json()["tasks"][0]["error"] == "cancelled by alice: oops"
    again = api(carol).post("/api/workflow/a-two-1/cancel", {}, format="json")
    assert again.status_code == 409 and envelope(again)["code"] == "workflow_finished"
    assert api(carol).post("/api/workflow/a-two-1/cancel?force=true", {}, format="json").status_code == 200
    assert (
        envelope(api(alice).post("/api/workflow/a-two-1/cancel", {"force": "sometimes"}, format="json"))["field"]
        == "force"
    )


# ------------------------------------------------------------------------------------------ cost and schema


def test_submission_query_count_is_the_same_for_1_and_8_tasks(pool, alice):
    client = api(alice)
    client.post(SUBMIT, spec("warm"), format="json")  # content types, roles cache and the like
    counts = []
    for tasks in (1, 8):
        with captured_queries() as queries:
            response = client.post(SUBMIT, spec(f"q{tasks}", tasks=tasks), format="json")
        assert response.status_code == 200
        counts.append(len(queries))
    assert counts[0] == counts[1], counts
    assert Task.objects.filter(workflow__workflow_id="q8-1").count() == 8


def test_under_the_name_lock_a_submission_only_writes(pool, alice):
    """`_next_id` locks the workflow's name until commit: the node capacities and the node pool charged are
    read before it, so concurrent submissions of one name do not wait for those reads."""
    client = api(alice)
    client.post(SUBMIT, spec("warm"), format="json")
    with captured_queries() as queries:
        assert client.post(SUBMIT, spec("locked"), format="json").status_code == 200
    lock = next(i for i, q in enumerate(queries) if '"workflows_workflowname"' in q)
    held = [q.split()[0] for q in queries[lock:]]
    assert set(held) <= {"INSERT", "RELEASE", "COMMIT"}, queries[lock:]
    before = queries[:lock]
    assert any('"pools_nodemembership"' in q for q in before) and any('"quotas_nodepool"' in q for q in before)
    assert Workflow.objects.get(workflow_id="locked-1").node_pool  # charged all the same


def test_openapi_schema_documents_every_workflow_endpoint(admin_api):
    schema = yaml.safe_load(admin_api.get("/api/schema/").content)
    paths = schema["paths"]
    operations = {
        "/api/pool/{pool}/workflow": "post",
        "/api/workflow": "get",
        "/api/workflow/{workflow_id}": "get",
        "/api/workflow/{workflow_id}/spec": "get",
        "/api/workflow/{workflow_id}/events": "get",
        "/api/workflow/{workflow_id}/cancel": "post",
        "/api/workflow/{workflow_id}/logs": "get",
        "/api/workflow/{workflow_id}/task/{task_name}/logs": "get",
    }
    for path, method in operations.items():
        operation = paths[path][method]
        assert operation["summary"] and "200" in operation["responses"] and "403" in operation["responses"]
    submit_op = paths["/api/pool/{pool}/workflow"]["post"]
    assert {"application/json", "application/yaml", "multipart/form-data"} <= set(submit_op["requestBody"]["content"])
    assert {p["name"] for p in submit_op["parameters"]} >= {"pool", "dry_run", "validation_only", "priority"}
    assert "409" in submit_op["responses"]
    list_params = {p["name"] for p in paths["/api/workflow"]["get"]["parameters"]}
    assert {"users", "pools", "statuses", "submitted_after", "submitted_before", "offset", "limit"} <= list_params


def test_every_user_gets_their_own_principal(pool, alice):
    """Sanity: the principal memo is per request; two users in a row do not share decisions."""
    eve = UserFactory(username="eve")
    assert api(alice).post(SUBMIT, spec("mine"), format="json").status_code == 200
    assert api(eve).post(SUBMIT, spec("mine"), format="json").status_code == 403


# Lone surrogates ('\ud800') are excluded: no client can send one (a URL is UTF-8, and they have no UTF-8 form).
URL_TEXT = st.characters(blacklist_categories=("Cs",))


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    text=st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="/"), min_size=1, max_size=40),
    query=st.text(URL_TEXT, max_size=20),
)
@example(text="a\x00b", query="\x00").via("NUL: PostgreSQL refuses it in text")
@example(text="\ud7ff\ue000", query="\U0010ffff").via("the code points around the surrogates")
def test_fuzzed_paths_and_filters_never_break_the_api(pool, alice, admin_user, text, query):
    """NUL and control characters in paths and filters are refused as 404/400 (PostgreSQL refuses NUL)."""
    from urllib.parse import quote

    from django.contrib.auth.models import Group

    admin_user.groups.add(Group.objects.get(name="osmo-admin"))
    segment, value = quote(text, safe=""), quote(query, safe="")
    for client in (api(alice), api(admin_user)):
        responses = [
            client.get(f"/api/workflow/{segment}"),
            client.get(f"/api/workflow/{segment}/events"),
            client.get(f"/api/workflow/{segment}/spec"),
            client.post(f"/api/workflow/{segment}/cancel", {}, format="json"),
            client.post(f"/api/pool/{segment}/workflow", spec("fz"), format="json"),
            client.get(f"/api/workflow?users={value}&pools={value}&name={value}&statuses={value}"),
        ]
        for response in responses:
            assert response.status_code < 500, (response.status_code, text, query)
            if response.status_code >= 400:
                envelope(response)
