"""`osmo workflow submit [--dry-run] [--pool P] [--set …] [--set-string …] [--set-env …] [--label …]`,
`osmo workflow query ID`, `osmo workflow list …` and `osmo workflow cancel ID`, played against gunicorn as
OSMO's client 6.4 sends them (NVIDIA/OSMO src/cli/workflow.py; the transport is tests/osmo_cli/client.py).

Pods are created by the server's own (eager) Celery in the simulated cluster of tests/workflows (kubesim);
the test process reconciles (as the beat task would) when a test needs the cluster's statuses."""

from __future__ import annotations

import datetime

import pytest
import yaml

from tests.osmo_cli.client import OsmoClient, OsmoUserError
from tests.polling import wait_until
from tests.workflows.conftest import backend, batch_role, kube_server, pool, spec  # noqa: F401 - fixtures
from workflows import reconcile
from workflows.models import Workflow

TEMPLATED = """version: 2
workflow:
  name: {{workflow_name}}
  labels: {team: "{{ team }}"}
  resources:
    default: {cpu: {{ cpus }}, memory: 64Mi, storage: 64Mi}
  tasks:
  - name: hello
    image: busybox:{{busybox_version}}
    command: [sh, -c]
    args: ["echo {{message}} from {{workflow_id}} > {{output}}/x"]

default-values:
  workflow_name: hello-osmo
  busybox_version: "1.36"
  message: Hello from OSMO!
  team: vision
  cpus: 0.1
"""


@pytest.fixture
def cli(pool, batch_role, osmo_user, osmo_login) -> OsmoClient:  # noqa: F811 - the imported fixtures
    """Ada, who may submit to pool batch (osmo-batch: workflow:* on pool/batch*), logged in as the CLI."""
    ada = osmo_user("osmo-user", username="ada")
    ada.groups.add(batch_role.group)
    return osmo_login(ada)


def template_data(text: str, set_variables=(), set_string_variables=()) -> dict:
    """workflow.py TemplateData.to_dict: the body of every submission."""
    return {
        "file": text,
        "set_variables": list(set_variables),
        "set_string_variables": list(set_string_variables),
        "uploaded_templated_spec": None,
    }


def osmo_submit(cli: OsmoClient, text: str, pool_name: str = "batch", *, templated: bool = False,
                dry: bool = False, params: dict | None = None, set_variables=(), set_string_variables=()):  # fmt: skip
    """workflow.py submit_workflow_helper: a templated spec (or --dry-run) is first sent with dry_run=True and
    the answer's `spec` read back; the real submission sends that (yaml.dump of it) with dry_run=False."""
    params = dict(params or {})
    data = template_data(text, set_variables, set_string_variables)
    result = None
    if templated or dry:
        params["dry_run"] = True
        result = cli.request("POST", f"api/pool/{pool_name}/workflow", payload=data, params=params)
        if dry:
            return result  # workflow.py: print(f"{result['spec']}")
        params["dry_run"] = False
    if templated:
        data["uploaded_templated_spec"] = data["file"]
        document = yaml.safe_load(result["spec"])  # workflow.py: yaml.safe_load(result['spec'])
    else:
        document = yaml.safe_load(data["file"])
    data["file"] = yaml.dump(document)  # workflow.py: template_data.file = yaml.dump(updated_workflow_dict)
    return cli.request("POST", f"api/pool/{pool_name}/workflow", payload=data, params=params)


def user_zone(utc_time: str) -> datetime.datetime:
    """common.py convert_utc_datetime_to_user_zone: `T` replaced by a space, then these formats only."""
    for fmt in ("%Y-%m-%d %H:%M:%S.%f", "%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M"):
        try:
            return datetime.datetime.strptime(utc_time.replace("T", " "), fmt)
        except ValueError:
            continue
    raise AssertionError(f"Invalid time format: {utc_time}")  # the CLI raises OSMOError


def printed_submission(result: dict) -> str:
    """workflow.py print_submission_results (text): what the user sees."""
    lines = [f"Workflow ID        - {result['name']}", f"Workflow Overview  - {result['overview']}"]
    if result.get("dashboard_url") is not None:
        lines.append(f"Workflow Dashboard - {result['dashboard_url']}")
    lines += [f"WARNING: {warning}" for warning in result.get("warnings", [])]
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------ submit


def test_submit_a_plain_spec(cli):
    text = yaml.safe_dump(spec("plain"))
    result = osmo_submit(cli, text)
    # workflow.py print_submission_results: result['name'], result['overview'], .get('dashboard_url'), warnings
    assert result["name"] == "plain-1"
    assert result["overview"].endswith("/workflows/plain-1/")
    assert result["dashboard_url"] is None and isinstance(result["warnings"], list)
    assert "Workflow ID        - plain-1" in printed_submission(result)
    assert Workflow.objects.get(workflow_id="plain-1").submitted_by.username == "ada"


def test_submit_dry_run_prints_the_spec_and_stores_nothing(cli):
    result = osmo_submit(cli, yaml.safe_dump(spec("dry")), dry=True)
    # workflow.py submit_workflow_helper: `print(f"{result['spec']}")`
    assert yaml.safe_load(result["spec"])["workflow"]["name"] == "dry"
    assert result["name"] == "dry"  # objects.py SubmitResponse.name: the spec's name
    assert not Workflow.objects.filter(name="dry").exists()


def test_submit_a_templated_spec_renders_it_in_a_dry_run_first(cli):
    sets, strings = ["workflow_name=greet", "cpus=0.2"], ["busybox_version=1.37"]
    dry = osmo_submit(cli, TEMPLATED, dry=True, set_variables=sets, set_string_variables=strings)
    rendered = yaml.safe_load(dry["spec"])
    assert rendered["workflow"]["name"] == "greet" and "default-values" not in rendered
    task = rendered["workflow"]["tasks"][0]
    assert task["image"] == "busybox:1.37" and rendered["workflow"]["resources"]["default"]["cpu"] == 0.2
    # OSMO's tokens are not template variables: they stay for the submission to fill
    assert task["args"] == ["echo Hello from OSMO! from {{workflow_id}} > {{output}}/x"]

    result = osmo_submit(cli, TEMPLATED, templated=True, set_variables=sets, set_string_variables=strings)
    assert result["name"] == "greet-1"
    stored = Workflow.objects.get(workflow_id="greet-1")
    assert stored.labels == {"team": "vision"}
    assert stored.tasks.get().pod["spec"]["containers"][0]["args"][0].startswith("echo Hello from OSMO! from greet-1")


def test_submit_with_set_env_and_labels_and_priority(cli):
    # workflow.py _submit_workflow: params priority, label (a list); env_vars for --set-env
    params = {"priority": "LOW", "label": ["team=vision", "stage=dev"], "env_vars": ["MODE=fast", "LIST=a,b"]}
    result = osmo_submit(cli, yaml.safe_dump(spec("opts")), params=params)
    stored = Workflow.objects.get(workflow_id=result["name"])
    assert stored.priority == "LOW" and stored.labels == {"team": "vision", "stage": "dev"}
    env = {e["name"]: e.get("value") for e in stored.tasks.get().pod["spec"]["containers"][0]["env"]}
    assert env["MODE"] == "fast" and env["LIST"] == "a,b"


def test_submit_a_workflow_id_submits_its_spec_again(cli):
    first = osmo_submit(cli, yaml.safe_dump(spec("again")))
    # workflow.py _submit_workflow: a workflow ID instead of a file: payload None, params workflow_id
    result = cli.request("POST", "api/pool/batch/workflow", payload=None, params={"workflow_id": first["name"]})
    assert result["name"] == "again-2" and result["overview"].endswith("/workflows/again-2/")


def test_submit_refusals_carry_osmos_error_codes(cli):
    with pytest.raises(OsmoUserError) as usage:
        osmo_submit(cli, TEMPLATED.replace("{{message}}", "{{ missing }}"), templated=True)
    # client.py handle_response: error_code + message; USAGE is OSMO's OSMOUsageError (a Jinja error)
    assert usage.value.status_code == 400 and usage.value.payload["error_code"] == "USAGE"
    assert "undefined variable missing" in usage.value.message

    privileged = spec("priv")
    privileged["workflow"]["tasks"][0]["privileged"] = True  # the platform does not allow it
    with pytest.raises(OsmoUserError) as resource:
        osmo_submit(cli, yaml.safe_dump(privileged))
    assert resource.value.payload["error_code"] == "RESOURCE"  # OSMO's OSMOResourceError

    with pytest.raises(OsmoUserError) as missing_pool:
        osmo_submit(cli, yaml.safe_dump(spec("x")), pool_name="no-such-pool")
    assert missing_pool.value.status_code == 404 and missing_pool.value.payload["error_code"] == "NOTFOUND"


# ------------------------------------------------------------------------------------------ query


def test_query_answers_groups_of_tasks(cli, backend):  # noqa: F811 - backend is the imported fixture
    two = spec("pair", tasks=2)
    name = osmo_submit(cli, yaml.safe_dump(two))["name"]
    wait_until(lambda: Workflow.objects.get(workflow_id=name).status != "PENDING", timeout=20)  # pods created
    wait_until(lambda: _reconciled(backend, name) == "COMPLETED", timeout=30, interval=0.2)

    # workflow.py _query_workflow: GET api/workflow/{id}, params verbose
    result = cli.request("GET", f"api/workflow/{name}", params={"verbose": False})
    assert result["status"] == "COMPLETED" and result["submitted_by"] == "ada"
    assert result["overview"].endswith(f"/workflows/{name}/")
    user_zone(result["submit_time"])  # convert_utc_datetime_to_user_zone(workflow_result.get('submit_time'))
    assert result.get("labels") == {}
    tasks = [task for group in result["groups"] for task in group["tasks"]]  # _get_tasks_from_workflow
    assert sorted(t["name"] for t in tasks) == ["t0", "t1"]
    for task in tasks:
        assert task["status"] == "COMPLETED" and task["retry_id"] == 0
        user_zone(task["start_time"])  # `if task['start_time']`: converted when set
    verbose = cli.request("GET", f"api/workflow/{name}", params={"verbose": True})
    assert [t["name"] for g in verbose["groups"] for t in g["tasks"]] == [t["name"] for t in tasks]


def test_query_an_unknown_workflow(cli):
    with pytest.raises(OsmoUserError) as missing:
        cli.request("GET", "api/workflow/nope-1", params={"verbose": False})
    assert missing.value.status_code == 404 and missing.value.payload["error_code"] == "NOTFOUND"


def _reconciled(backend, workflow_id: str) -> str:  # noqa: F811
    reconcile.reconcile_backend(backend.pk)
    return Workflow.objects.get(workflow_id=workflow_id).status


# ------------------------------------------------------------------------------------------ list


def osmo_list(cli: OsmoClient, count: int = 20, offset: int = 0, order: str = "asc", **filters) -> list[dict]:
    """workflow.py _list_workflows: params users/statuses/name/pools/priority, order always DESC (asc is the
    reversed page), all_pools without --pool, paged by limit/offset while more_entries."""
    params = {"order": "DESC", **filters}
    if "pools" not in params:
        params["all_pools"] = True
    current, found = 0, []
    while True:
        step = min(count - current, 1000)
        params["limit"], params["offset"] = step, offset + current
        answer = cli.request("GET", "api/workflow", params=params)
        found.extend(answer["workflows"])
        current += step
        if count <= current or not answer["more_entries"]:
            break
    return list(reversed(found)) if order == "asc" else found


def test_list_ordering_paging_and_filters(cli):
    names = [osmo_submit(cli, yaml.safe_dump(spec(f"l{i}")), params={"priority": p})["name"]
             for i, p in enumerate(["LOW", "NORMAL", "HIGH"])]  # fmt: skip
    newest_first = osmo_list(cli, order="desc")
    assert [w["name"] for w in newest_first] == names[::-1]
    assert [w["name"] for w in osmo_list(cli)] == names  # asc: latest at the bottom
    entry = newest_first[0]
    # workflow.py _workflow_table_generator: user, name, submit_time, status, priority, labels, overview
    assert entry["user"] == "ada" and entry["priority"] == "HIGH" and entry["labels"] == {}
    assert entry["status"] in ("PENDING", "WAITING", "RUNNING", "COMPLETED")
    assert entry["overview"].endswith(f"/workflows/{names[2]}/")
    user_zone(entry["submit_time"])

    assert [w["name"] for w in osmo_list(cli, count=2, order="desc")] == names[:0:-1]  # limit=2
    assert [w["name"] for w in osmo_list(cli, count=2, offset=2, order="desc")] == names[:1]  # --offset
    assert [w["name"] for w in osmo_list(cli, priority=["LOW"])] == names[:1]
    assert [w["name"] for w in osmo_list(cli, name="l1")] == names[1:2]
    assert [w["name"] for w in osmo_list(cli, pools=["batch"], users=["ada"])] == names
    assert osmo_list(cli, statuses=["FAILED_IMAGE_PULL", "FAILED_PREEMPTED"]) == []  # OSMO's, never given here
    today = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT00:00:00")  # common.convert_timezone's form
    assert len(osmo_list(cli, submitted_after=today)) == 3 and osmo_list(cli, submitted_before=today) == []
    assert osmo_list(cli, all_users=True, count=1, order="desc")[0]["name"] == names[2]  # --all-users


def test_queued_work_is_pending_to_osmos_client_and_found_by_pending(cli):
    """QUEUED (waiting for quota admission) is the portal's word; OSMO's client, which knows no QUEUED, reads
    PENDING, and `osmo workflow list --status PENDING` finds it (tests/quotas/test_queued_status.py: the
    portal's own API and CLI say QUEUED)."""
    name = osmo_submit(cli, yaml.safe_dump(spec("waits", platform="parked")))["name"]
    Workflow.objects.filter(workflow_id=name).update(status="QUEUED")  # as a managed node pool's gate leaves it
    assert cli.request("GET", f"api/workflow/{name}", params={"verbose": False})["status"] == "PENDING"
    assert [(w["name"], w["status"]) for w in osmo_list(cli, statuses=["PENDING"])] == [(name, "PENDING")]
    assert osmo_list(cli, statuses=["RUNNING"]) == []


def test_list_by_labels_tags_and_app(cli):
    # workflow.py _list_workflows: params label (selectors key=value or key, each checked by
    # validation.parse_workflow_label_selector), no_label, tags, app
    vision = osmo_submit(cli, yaml.safe_dump(spec("v")), params={"label": ["team=vision", "stage=dev"]})["name"]
    audio = osmo_submit(cli, yaml.safe_dump(spec("a")), params={"label": ["team=audio"]})["name"]
    bare = osmo_submit(cli, yaml.safe_dump(spec("b")))["name"]
    assert [w["name"] for w in osmo_list(cli, label=["team=vision"])] == [vision]
    assert [w["name"] for w in osmo_list(cli, label=["team"])] == [vision, audio]
    assert [w["name"] for w in osmo_list(cli, label=["team", "stage=dev"])] == [vision]  # every selector holds
    assert [w["name"] for w in osmo_list(cli, no_label=["team"])] == [bare]
    assert [w["name"] for w in osmo_list(cli, no_label=["team=vision"])] == [audio, bare]
    # the portal keeps no workflow tags and has no apps: as an OSMO service where none is set, nothing matches
    assert osmo_list(cli, tags=["nightly"]) == [] and osmo_list(cli, app="my-app") == []
    with pytest.raises(OsmoUserError) as refused:
        osmo_list(cli, label=["=vision"])
    assert refused.value.status_code == 400 and refused.value.payload["field"] == "label"


# ------------------------------------------------------------------------------------------ cancel


def test_cancel_then_query_and_list_by_osmos_status_name(cli):
    parked = spec("parked-wf", platform="parked")  # bound to a node, never starts
    name = osmo_submit(cli, yaml.safe_dump(parked))["name"]
    # workflow.py _cancel_workflow: POST api/workflow/{id}/cancel, params force (+ message), no body
    result = cli.request("POST", f"api/workflow/{name}/cancel", params={"force": False, "message": "enough"})
    assert result["name"] == name  # print(f"Cancel job for workflow {result['name']} is submitted!")
    assert cli.request("GET", f"api/workflow/{name}", params={"verbose": False})["status"] == "FAILED_CANCELED"
    tasks = cli.request("GET", f"api/workflow/{name}")["groups"][0]["tasks"]
    assert [t["status"] for t in tasks] == ["FAILED_CANCELED"]
    assert [w["name"] for w in osmo_list(cli, statuses=["FAILED_CANCELED"])] == [name]

    with pytest.raises(OsmoUserError) as finished:  # "Workflow cancelation failed for workflow …: <message>"
        cli.request("POST", f"api/workflow/{name}/cancel", params={"force": False})
    assert finished.value.status_code == 409 and finished.value.payload["error_code"] == "USER"
    forced = cli.request("POST", f"api/workflow/{name}/cancel", params={"force": True})
    assert forced["name"] == name


def test_cancel_someone_elses_workflow_is_refused_as_unknown(cli, osmo_user, osmo_login):
    name = osmo_submit(cli, yaml.safe_dump(spec("mine")))["name"]
    stranger = osmo_login(osmo_user("osmo-user", username="eve"), roles=[])
    with pytest.raises(OsmoUserError) as refused:
        stranger.request("POST", f"api/workflow/{name}/cancel", params={"force": False})
    assert refused.value.status_code == 404 and refused.value.payload["error_code"] == "NOTFOUND"
