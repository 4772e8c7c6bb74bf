"""The report's doors (docs/usage.md, "Reports"): `manage.py usage report` in its three formats, the other verbs,
and `GET /api/usage/report`: filters, pages, who sees which rows, errors naming the field and the value, and a
constant number of queries."""

from __future__ import annotations

import csv
import io
import json
from datetime import timedelta

import pytest
from django.core.management import base, call_command
from rest_framework.test import APIClient

from access.services import roles
from tests.clirun import run_as_cli
from tests.factories import RoleFactory, UserFactory
from tests.queries import assert_constant_queries
from tests.quotas.conftest import CLI, teams  # noqa: F401  (fixture)
from tests.usage.factories import T0, attempt_row
from usage.models import TaskAttempt, UsageRollup

pytestmark = pytest.mark.django_db
URL = "/api/usage/report"
PERIOD = {"from": "2026-11-01", "to": "2026-11-02"}


def world():
    attempt_row(project="vision", department="research", gpu=2)
    attempt_row(project="speech", department="research", gpu=1, node_pool="h100")
    attempt_row(project="infer", department="ops", gpu=4, pool="serve", started_at=T0 + timedelta(hours=25))


def cli(*args: str) -> str:
    out = io.StringIO()
    call_command("usage", *args, stdout=out)
    return out.getvalue()


def api(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def person(name: str, *role_names: str):
    user = UserFactory(username=name)
    roles.update_user_roles(user, add=["osmo-user", *role_names], actor=CLI)
    return user


# ------------------------------------------------------------------------------------------------ CLI


def test_the_cli_report_as_a_table_json_and_csv(teams):  # noqa: F811
    world()
    table = cli("report", "--from", "2026-11-01", "--to", "2026-11-02", "--by", "department")
    lines = table.splitlines()
    assert lines[0] == "usage from 2026-11-01 00:00 to 2026-11-03 00:00 UTC, by department, total"
    assert lines.pop(1) == "idle guarantee unknown: no deserved sample in this period (shown as -)"
    assert lines[1].split() == [
        "DEPARTMENT",
        "GPU_HOURS",
        "CPU_HOURS",
        "MEMORY_GIB_HOURS",
        "COST_USD",
        "DESERVED_GPU_HOURS",
        "IDLE_GUARANTEE_GPU_HOURS",
    ]
    assert lines[2].split()[:2] == ["ops", "4.00"] and lines[3].split()[:2] == ["research", "3.00"]
    document = json.loads(
        cli("report", "--from", "2026-11-01", "--to", "2026-11-02", "--by", "pool,project", "--format", "json")
    )
    assert document["columns"][:3] == ["pool", "project", "gpu_hours"]
    assert [(r["pool"], r["project"], r["gpu_hours"]) for r in document["rows"]] == [
        ("serve", "infer", 4.0),
        ("research", "vision", 2.0),
        ("research", "speech", 1.0),
    ]
    text = cli(
        "report",
        "--from",
        "2026-11-01",
        "--to",
        "2026-11-02",
        "--granularity",
        "day",
        "--project",
        "vision",
        "--format",
        "csv",
    )
    rows = list(csv.DictReader(io.StringIO(text)))
    assert rows == [
        {
            "period": "2026-11-01T00:00:00+00:00",
            "project": "vision",
            "gpu_hours": "2.0",
            "cpu_hours": "1.0",
            "memory_gib_hours": "1.0",
            "cost_usd": "5.0",
            "deserved_gpu_hours": "",  # no deserved sample that day: unknown, not 0
            "idle_guarantee_gpu_hours": "",
        }
    ]


def test_the_cli_refuses_bad_options_on_one_line_naming_flag_and_value(capsys, monkeypatch):
    monkeypatch.setattr(base.connections, "close_all", lambda: None)  # keep the test's transaction
    code, _, err = run_as_cli(capsys, "usage", "usage", "report", "--from", "last week")
    assert code == 1
    assert err.strip().splitlines() == [
        "error: --from: expected a date (2026-11-01) or an ISO time (2026-11-01T08:00, naive is UTC)"
        " (value: 'last week')"
    ]
    code, _, err = run_as_cli(capsys, "usage", "usage", "report", "--by", "team")
    assert code == 1 and "--by" in err and "'team'" in err


def test_rollup_rebuild_and_prune(teams, settings):  # noqa: F811
    settings.USAGE_RAW_RETENTION_DAYS = 36500  # T0's hours within the raw retention, whatever today's date
    world()
    assert cli("rollup") == "2 hour(s) rolled up\n"  # T0 and a day and an hour later
    assert TaskAttempt.objects.filter(rolled_up=True).count() == 3
    UsageRollup.objects.all().delete()
    assert cli("rebuild", "--from", "2026-11-01", "--to", "2026-11-01") == "2 hourly rollup row(s) rebuilt\n"
    assert cli("prune").startswith("deleted ")


# ------------------------------------------------------------------------------------------------ REST


@pytest.fixture
def people(teams, admin_user):  # noqa: F811
    roles.ensure_builtin_roles()
    RoleFactory(
        name="quota-reader",
        policies=[{"effect": "Allow", "actions": ["config:Read"], "resources": ["config/node_pool"]}],
    )
    return {
        "rita": person("rita", teams["vision"].role.name),  # a researcher in vision
        "quinn": person("quinn", "quota-reader"),  # may read every team's quotas
        "admin": admin_user,
    }


def test_rest_filters_and_groups_like_the_cli(people):
    world()
    answer = api(people["admin"]).get(URL, {**PERIOD, "by": "department,node-pool", "pool": "research"}).json()
    assert answer["columns"][:2] == ["department", "node_pool"]
    assert [(r["department"], r["node_pool"], r["gpu_hours"]) for r in answer["rows"]] == [
        ("research", "a100", 2.0),
        ("research", "h100", 1.0),
    ]
    assert (answer["from"], answer["to"], answer["count"]) == ("2026-11-01T00:00:00Z", "2026-11-03T00:00:00Z", 2)
    hourly = api(people["admin"]).get(URL, {**PERIOD, "granularity": "hour", "node_pool": ["a100", "h100"]}).json()
    assert {r["period"] for r in hourly["rows"]} == {"2026-11-01T00:00:00+00:00", "2026-11-02T01:00:00+00:00"}
    h100 = api(people["admin"]).get(URL, {**PERIOD, "granularity": "hour", "node_pool": "h100"}).json()
    assert [(r["period"], r["project"]) for r in h100["rows"]] == [("2026-11-01T00:00:00+00:00", "speech")]


def test_rest_pages(people):
    world()
    client = api(people["admin"])
    first = client.get(URL, {**PERIOD, "limit": 2}).json()
    second = client.get(URL, {**PERIOD, "limit": 2, "offset": 2}).json()
    assert [r["project"] for r in first["rows"]] == ["infer", "vision"] and first["more_entries"] is True
    assert [r["project"] for r in second["rows"]] == ["speech"] and second["more_entries"] is False
    assert first["count"] == second["count"] == 3


def test_rest_csv_is_the_same_page(people):
    world()
    answer = api(people["admin"]).get(URL, {**PERIOD, "format": "csv", "limit": 2})
    assert answer.status_code == 200 and answer["Content-Type"].startswith("text/csv")
    assert "attachment" in answer["Content-Disposition"]
    rows = list(csv.DictReader(io.StringIO(answer.content.decode())))
    assert [(r["project"], r["gpu_hours"], r["cost_usd"]) for r in rows] == [
        ("infer", "4.0", "5.0"),
        ("vision", "2.0", "5.0"),
    ]


def test_a_researcher_sees_only_their_projects_an_admin_or_quota_reader_every_team(people):
    world()
    by_department = {**PERIOD, "by": "department"}
    rita = api(people["rita"]).get(URL, by_department).json()
    assert [(r["department"], r["gpu_hours"]) for r in rita["rows"]] == [("research", 2.0)]  # vision's only
    assert api(people["rita"]).get(URL, {**PERIOD, "project": "infer"}).json()["rows"] == []
    for name in ("quinn", "admin"):
        rows = api(people[name]).get(URL, by_department).json()["rows"]
        assert [(r["department"], r["gpu_hours"]) for r in rows] == [("ops", 4.0), ("research", 3.0)]
    anonymous = APIClient().get(URL)
    assert anonymous.status_code == 401


@pytest.mark.parametrize(
    ("params", "field", "value"),
    [
        ({"from": "soon"}, "from", "soon"),
        ({"to": "2026-02-30"}, "to", "2026-02-30"),
        ({"from": "2026-11-03", "to": "2026-11-01"}, "to", "2026-11-01"),
        ({"by": "gpu"}, "by", "gpu"),
        ({"granularity": "minute"}, "granularity", "minute"),
        ({"limit": "0"}, "limit", "0"),
        ({"limit": "1e9"}, "limit", "1e9"),
        ({"offset": "-1"}, "offset", "-1"),
        ({"format": "xml"}, "format", "xml"),
        ({"to": "9999-12-31"}, "to", "9999-12-31"),
        ({"from": "0001-01-01T00:00+01:00"}, "from", "0001-01-01T00:00+01:00"),
        ({"from": "1969-12-31"}, "from", "1969-12-31"),
        ({"project": ",".join(f"p{n}" for n in range(1001))}, "project", 1001),
    ],
)
def test_rest_bad_input_is_a_400_naming_field_and_value(people, params, field, value):
    answer = api(people["admin"]).get(URL, params)
    assert answer.status_code == 400, answer.content
    body = answer.json()
    assert (body["field"], body["value"]) == (field, value) and body["reason"]


def test_csv_errors_are_json(people):
    answer = api(people["admin"]).get(URL, {"format": "csv", "from": "soon"})
    assert answer.status_code == 400 and answer.json()["field"] == "from"


@pytest.mark.parametrize("who", ["rita", "admin"])
def test_rest_report_runs_a_constant_number_of_queries(people, who):
    client = api(people[who])
    world()

    def more():
        for n in range(20):
            attempt_row(
                project=("vision", "speech", "infer")[n % 3], node_pool=f"np{n}", started_at=T0 + timedelta(hours=n)
            )

    assert_constant_queries(lambda: client.get(URL, {**PERIOD, "by": "project,node-pool"}), more, at_most=12)
