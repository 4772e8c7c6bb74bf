"""What-if (quotas.services.what_if; docs/quotas.md, "What-if"): a recorded day on the simulated cluster's h100
node pool (32 GPUs) replayed under today's quotas gives what happened; raising a project's quota lowers its wait
and keeps its GPU-hours; right now, a raise admits the queued workflow it names and reclaims what it may; the CLI
and REST doors refuse bad changes naming the token, and answer in a constant number of queries."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from django.core.management import base
from django.urls import reverse
from rest_framework.test import APIClient

from access.services import roles
from configs import revisions, store
from configs.models import Revision
from pools.models import Pool
from quotas.models import NodePool
from quotas.services import quotas
from quotas.services.what_if import period, what_if
from teams.models import Project
from tests.clirun import run_as_cli
from tests.factories import UserFactory, WorkflowFactory
from tests.queries import assert_constant_queries
from tests.quotas.conftest import CLI, H100_LABEL
from usage.models import DeservedSample, TaskAttempt, WorkflowRecord
from usage.services.rollup import rebuild_hours

DAY_START = datetime(2026, 11, 2, tzinfo=UTC)
HOUR = timedelta(hours=1)
URL = "/api/quotas/what-if"


def record(workflow_id: str, project: str, gpus: int, submitted: timedelta, admitted: timedelta, ran: timedelta):
    """A finished workflow of `project` on h100, and its one task's attempt (8 GPUs at $2/h a GPU)."""
    at = DAY_START + submitted
    started, finished = DAY_START + admitted, DAY_START + admitted + ran
    WorkflowRecord.objects.create(
        workflow_id=workflow_id, project=project, department="research", pool="research", node_pool="h100",
        priority="NORMAL", requests={"gpu": gpus, "cpu": 0, "memory": 0}, parts={"h100": {"gpu": gpus}},
        submitted_at=at, admitted_at=started, running_at=started, finished_at=finished, status="COMPLETED",
    )  # fmt: skip
    TaskAttempt.objects.create(
        task_pk=abs(hash(workflow_id)) % 10**9, attempt=0, workflow_id=workflow_id, task="train", project=project,
        department="research", pool="research", platform="h100", node_pool="h100", backend="sim", gpu=gpus,
        started_at=started, ended_at=finished, outcome="completed", hourly_cost_micros=gpus * 2_000_000,
    )  # fmt: skip


@pytest.fixture
def guaranteed(carved, teams):
    """research deserves h100's 32 GPUs, all of them speech's; vision none."""
    quotas.set_quota(None, "h100", "department", "research", "gpu", deserved=32)
    quotas.set_quota(None, "h100", "project", "speech", "gpu", deserved=32)


@pytest.fixture
def recorded_day(guaranteed):
    """speech fills h100 for 4 hours from midnight; vision's 8-GPU workflow, submitted at 00:10, waits for it."""
    for index in range(4):
        record(f"speech-{index}", "speech", 8, timedelta(0), timedelta(0), 4 * HOUR)
    record("vision-0", "vision", 8, timedelta(minutes=10), 4 * HOUR, HOUR)
    for hour in range(24):  # what the quotas' hourly task samples: speech deserved 32 all day
        DeservedSample.objects.create(
            hour=DAY_START + hour * HOUR, node_pool="h100", project="speech", department="research", gpu_deserved=32
        )
    rebuild_hours(DAY_START, DAY_START + timedelta(days=1))  # the usage report reads the hourly rollups


def rows(answer: dict) -> dict[str, dict]:
    return {row["project"]: row for row in answer["projects"]}


def test_the_recorded_day_replayed_under_its_quotas_is_what_happened(recorded_day):
    answer = what_if(DAY_START, DAY_START + timedelta(days=1), [])
    assert answer["workflows"] == 5 and answer["left_out"] == 0 and answer["prices"] == {"h100": 2.0}
    for name in ("speech", "vision"):
        row = rows(answer)[name]
        assert row["baseline"] == row["proposed"]  # nothing changes
        for key in ("jobs", "started", "wait_p50_s", "wait_p95_s", "gpu_hours", "preemptions", "cost"):
            assert row["baseline"][key] == row["actual"][key], (name, key, row)
    assert rows(answer)["vision"]["actual"]["wait_p95_s"] == 4 * 3600 - 600
    # speech held its 32 GPUs for 4 hours of 24: 20 × 32 GPU-hours idle, in the record and in the replay alike
    speech = rows(answer)["speech"]
    idle = [speech[run]["idle_guarantee_gpu_hours"] for run in ("actual", "baseline", "proposed")]
    assert idle == [640.0, 640.0, 640.0]


def test_raising_a_quota_lowers_the_wait_and_keeps_the_gpu_hours(recorded_day):
    answer = what_if(
        DAY_START, DAY_START + timedelta(days=1), ["vision h100 gpu=8", "speech h100 gpu=24"]
    )  # fmt: skip
    vision = rows(answer)["vision"]
    assert vision["proposed"]["wait_p95_s"] < vision["baseline"]["wait_p95_s"] == 4 * 3600 - 600
    assert vision["proposed"]["gpu_hours"] >= vision["baseline"]["gpu_hours"] == 8.0
    speech = rows(answer)["speech"]  # its work above its new deserved is reclaimed for vision: lost, then redone
    assert speech["proposed"]["preemptions"] >= 1 and speech["proposed"]["gpu_hours"] >= speech["baseline"]["gpu_hours"]
    assert answer["changes"] == ["vision h100 gpu=8", "speech h100 gpu=24"]


def live(project: str, gpus: int, status: str, *, preemptible: bool = False, age: timedelta = 2 * HOUR):
    return WorkflowFactory(
        pool=Pool.objects.get(name="research"), project=Project.objects.get(name=project), node_pool="h100",
        status=status, requests={"gpu": gpus, "cpu": 0, "memory": 0}, preemptible=preemptible,
        created_at=datetime.now(UTC) - age, admitted_at=None if status == "QUEUED" else datetime.now(UTC) - age,
    )  # fmt: skip


def test_right_now_a_raise_admits_the_queued_workflow_it_names(carved, teams):
    store.apply("NODE_POOL", "h100", {"backend": "sim", "selector": H100_LABEL, "over_quota": False}, CLI)
    quotas.set_quota(None, "h100", "department", "research", "gpu", deserved=32)
    quotas.set_quota(None, "h100", "project", "speech", "gpu", deserved=32)
    for _ in range(3):
        live("speech", 8, "RUNNING")
    waiting = live("vision", 8, "QUEUED")  # held: vision deserves nothing and over-quota is off
    now = what_if(*period(), ["vision h100 gpu=8", "infer a100 gpu=1"])["right_now"]
    assert [effect["node_pool"] for effect in now] == ["a100", "h100"]
    now = now[1:]
    assert now == [
        {"node_pool": "h100", "admits": [waiting.workflow_id], "no_longer_admits": [], "preempts": [],
         "above_deserved": []}
    ]  # fmt: skip


def test_right_now_a_raise_reclaims_and_a_cut_leaves_running_work_above_its_guarantee(carved, teams):
    quotas.set_quota(None, "h100", "department", "research", "gpu", deserved=32)
    quotas.set_quota(None, "h100", "project", "speech", "gpu", deserved=24)
    kept = [live("speech", 8, "RUNNING", age=(3 - index) * HOUR) for index in range(3)]
    borrowed = live("speech", 8, "RUNNING", preemptible=True)  # above speech's 24
    live("vision", 8, "QUEUED", age=timedelta(minutes=1))
    (effect,) = what_if(*period(), ["vision h100 gpu=8", "speech h100 gpu=16"])["right_now"]
    assert effect["preempts"] == [borrowed.workflow_id] and effect["admits"] == []
    assert effect["above_deserved"] == [kept[2].workflow_id]  # the youngest of its guaranteed three


# -- the doors -------------------------------------------------------------------------------------------------------
@pytest.fixture
def cli(capsys, monkeypatch):
    monkeypatch.setattr(base.connections, "close_all", lambda: None)  # keep the test's transaction
    return lambda *args: run_as_cli(capsys, "quotas", "quota", *args)


def test_the_cli_prints_the_three_runs_side_by_side(recorded_day, cli):
    code, out, err = cli(
        "what-if", "--from", "2026-11-02", "--to", "2026-11-03", "--set", "vision h100 gpu=8",
        "--set", "speech h100 gpu=24", "--capacity", "h100 gpu=+8",
    )  # fmt: skip
    assert (code, err) == (0, ""), err
    assert "5 workflows replayed" in out and "capacity h100 gpu=+8" in out
    vision = out[out.index("\nvision") :].splitlines()[1:4]
    assert [line.split()[2 if index == 0 else 0] for index, line in enumerate(vision)] == [
        "actual", "baseline", "proposed"
    ]  # fmt: skip
    assert "230.0m" in out  # vision's recorded and baseline p50/p95: 3 h 50 min
    assert "right now in h100:" in out
    code, out, _ = cli("what-if", "--from", "2026-11-02", "--to", "2026-11-03", "--format", "json")
    assert code == 0 and rows(json.loads(out))["vision"]["baseline"]["wait_p95_s"] == 13800


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--set", "vision h100 gpu=abc"], "changes[0].gpu: must be a whole number from 0 to 100000 (value: 'abc')"),
        (["--set", "vision h100 colour=3"], "changes[0].colour: unknown key; a project's keys are"),
        (["--set", "vision h100"], "changes[0]: give at least one key=value"),
        (["--set", "vision ghost gpu=1"], "changes[0].node_pool: unknown node pool (value: 'ghost')"),
        (["--set", "nobody h100 gpu=1"], "changes[0].project: unknown project here (value: 'nobody')"),
        (["--set", "vision h100 gpu=8 limit-gpu=4"], "changes[0]: limit is below the deserved quota 8"),
        (["--set", "department research h100 priority=1"], "changes[0].priority: unknown key; a department's"),
        (["--capacity", "h100 gpu=lots"], "changes[0].gpu: GPUs more (+N) or fewer (-N)"),
        (["--from", "2026-01-01", "--to", "2026-03-01"], "--from: the period is at most 31 days"),
        (["--from", "yesterday"], "--from: a date (2026-11-25) or an ISO 8601 time"),
    ],
)
def test_the_cli_refuses_a_bad_change_naming_it(guaranteed, cli, args, said):
    code, out, err = cli("what-if", *args)
    assert code == 1 and out == "", out
    assert said in err, err


@pytest.fixture
def researcher(teams):
    roles.ensure_builtin_roles()
    user = UserFactory(username="rita")
    roles.update_user_roles(user, add=["osmo-user", teams["vision"].role.name], actor=CLI)
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_rest_answers_what_the_cli_does_and_refuses_bad_tokens(recorded_day, researcher):
    # 8 GPUs more for h100: vision's workflow needs not wait for speech's (its department is at its deserved)
    changes = ["vision h100 gpu=8", "capacity h100 gpu=+8"]
    body = {"start": "2026-11-02T00:00:00Z", "end": "2026-11-03T00:00:00Z", "changes": changes}
    answer = researcher.post(URL, body, format="json")
    assert answer.status_code == 200, answer.json()
    shown = rows(answer.json())
    assert set(shown) == {"vision"}  # rita sees her project's figures only
    assert shown["vision"]["proposed"]["wait_p95_s"] < shown["vision"]["baseline"]["wait_p95_s"]
    refused = researcher.post(URL, {**body, "changes": ["speech h100 gpu=8"]}, format="json")
    assert refused.status_code == 400 and refused.json()["field"] == "changes[0].project"  # not hers to see
    bad = researcher.post(URL, {**body, "changes": ["vision h100 gpu=-1"]}, format="json")
    assert bad.status_code == 400 and bad.json()["field"] == "changes[0].gpu" and bad.json()["value"] == "-1"
    too_many = researcher.post(URL, {**body, "changes": ["vision h100 gpu=1"] * 1001}, format="json")
    assert too_many.status_code == 400
    assert APIClient().post(URL, body, format="json").status_code in (401, 403)


def test_rest_queries_do_not_grow_with_the_period(recorded_day, researcher):
    body = {"start": "2026-11-02T00:00:00Z", "end": "2026-11-03T00:00:00Z", "changes": ["vision h100 gpu=8"]}
    count = iter(range(100))

    def more() -> None:
        index = next(count)
        record(f"more-{index}", "vision", 1, timedelta(hours=5, minutes=index), timedelta(hours=5, minutes=index), HOUR)
        record(f"other-{index}", "speech", 2, timedelta(hours=6), timedelta(hours=6), HOUR)

    assert_constant_queries(lambda: researcher.post(URL, body, format="json"), more)


def test_the_grid_previews_its_edits_then_applies_them_as_one_revision(carved, teams, admin_client):
    """Two teams edited, previewed, applied: one NODE_POOL revision whose diff holds both, which one rollback undoes."""
    store.apply("NODE_POOL", "h100", {"backend": "sim", "selector": H100_LABEL, "over_quota": False}, CLI)
    quotas.set_quota(None, "h100", "department", "research", "gpu", deserved=32)
    waiting = live("vision", 8, "QUEUED")
    url = reverse("admin:quotas_nodepool_quotas", args=[NodePool.objects.get(name="h100").pk])
    before = revisions.history("NODE_POOL", "h100")[0].revision
    form = {
        "project:vision:gpu:deserved": "8", "project:vision:gpu:limit": "", "project:vision:gpu:weight": "1",
        "project:speech:gpu:deserved": "4", "project:speech:gpu:limit": "6", "project:speech:gpu:weight": "1",
    }  # fmt: skip
    page = admin_client.post(url, {**form, "preview": "1"})
    assert page.status_code == 200
    text = page.content.decode()
    assert "Preview of this change" in text and "<code>vision h100 gpu=8 limit-gpu=none weight-gpu=1</code>" in text
    assert "<code>speech h100 gpu=4 limit-gpu=6 weight-gpu=1</code>" in text
    right_now = text[text.index('id="what-if-right-now"') : text.index('id="what-if-replay"')]
    assert f"admits {waiting.workflow_id}" in right_now
    assert 'name="project:vision:gpu:deserved" value="8"' in text and "Apply: save quotas" in text
    assert revisions.history("NODE_POOL", "h100")[0].revision == before  # a preview writes nothing
    saved = admin_client.post(url, {**form, "change_description": "spring plan"}, follow=True)
    assert f"Quotas of h100 saved: 2 team(s) changed, one revision (r{before + 1})." in saved.content.decode()
    latest = revisions.history("NODE_POOL", "h100")[0]
    assert latest.revision == before + 1
    assert latest.description == (
        "quotas in h100: project speech gpu deserved=4 limit=6 weight=1; project vision gpu deserved=8 limit=None"
        " weight=1; spring plan"
    )
    changed = {change.path for change in revisions.diff("NODE_POOL", "h100", before, before + 1).changes}
    assert {path.split(".")[1] for path in changed} == {"speech", "vision"}
    shown = store.show("NODE_POOL", "h100")["projects"]
    assert (shown["vision"]["gpu"]["deserved"], shown["speech"]["gpu"]["limit"]) == (8, 6)
    store.rollback("NODE_POOL", "h100", before, CLI)  # one rollback undoes the whole applied preview
    assert store.show("NODE_POOL", "h100") == revisions.get_revision("NODE_POOL", "h100", before).snapshot
    assert revisions.history("NODE_POOL", "h100")[0].revision == before + 2
    refused = admin_client.post(url, {**form, "project:vision:gpu:limit": "4", "preview": "1"}).content.decode()
    assert "Preview of this change" not in refused and "limit" in refused


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"changes": "vision h100 gpu=8"}, "changes"),
        ({"changes": [{"gpu": 8}]}, "changes"),
        ({"changes": ["=8"]}, "changes[0]"),
        ({"changes": ["capacity h100 gpu=+999999999999999999999"]}, "changes[0].gpu"),
        ({"changes": ["vision h100 gpu=8 gpu=9"]}, "changes[0].gpu"),
        ({"changes": ["vision priority=1001"]}, "changes[0].priority"),
        ({"end": "0001-01-01T00:00:00Z"}, "end"),
        ({"start": "2026-11-03T00:00:00Z", "end": "2026-11-02T00:00:00Z"}, "end"),
        ({"start": "not a time"}, "start"),
    ],
)
def test_rest_refuses_what_a_client_may_send_with_the_envelope(guaranteed, researcher, body, field):
    answer = researcher.post(URL, body, format="json")
    assert answer.status_code == 400, answer.content
    assert {"code", "field", "value", "reason"} <= set(answer.json())
    assert answer.json()["field"].startswith(field), answer.json()


def test_the_baseline_is_the_config_in_force_at_the_period_start(recorded_day):
    """The quotas change after the recorded day (vision gets speech's guarantee): replaying the day with nothing
    changed still gives what happened, since the baseline reads the NODE_POOL revision current at its start."""
    Revision.objects.filter(config_type="NODE_POOL", name="h100").update(created_at=DAY_START - timedelta(days=1))
    then = Revision.objects.filter(config_type="NODE_POOL", name="h100").order_by("-revision").first().revision
    quotas.set_quota(None, "h100", "project", "speech", "gpu", deserved=0)
    quotas.set_quota(None, "h100", "project", "vision", "gpu", deserved=32)
    assert Revision.objects.filter(config_type="NODE_POOL", name="h100").order_by("-revision")[0].revision > then

    answer = what_if(DAY_START, DAY_START + timedelta(days=1), [])
    assert answer["config"]["h100"] == then and answer["config"]["a100"] is None  # a100: no revision then
    for name in ("speech", "vision"):
        row = rows(answer)[name]
        for key in ("jobs", "started", "wait_p50_s", "wait_p95_s", "gpu_hours", "preemptions", "cost"):
            assert row["baseline"][key] == row["actual"][key], (name, key, row)
    # under today's quotas vision would reclaim speech's room at once: the change proposed says so
    moved = what_if(DAY_START, DAY_START + timedelta(days=1), ["speech h100 gpu=0", "vision h100 gpu=32"])
    assert rows(moved)["vision"]["proposed"]["wait_p95_s"] < rows(moved)["vision"]["actual"]["wait_p95_s"]
