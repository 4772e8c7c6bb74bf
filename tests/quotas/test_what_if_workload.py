"""What-if over a synthetic workload (docs/quotas.md, "A synthetic workload"; quotas.services.what_if_workload):
`quota what-if --workload FILE` and the REST body's `workload` replay the given jobs in place of the record,
under today's quotas and under the changes; every number and the file's size are bounded, and a bad job is
refused naming it (`workload[i].key`), its value and why.

The world (tests/quotas/conftest.py, test_what_if's `guaranteed`): h100 (32 GPUs); research deserves all of it,
all of it speech's; vision deserves none."""

from __future__ import annotations

import json

import pytest
from rest_framework.test import APIClient

from quotas.services.what_if_workload import MAX_FILE_BYTES
from tests.factories import UserFactory
from tests.quotas.test_what_if import URL, cli, guaranteed, researcher, rows  # noqa: F401  (fixtures)

# speech fills h100 for 4 hours from the start; vision's 8-GPU job, submitted 10 minutes in, waits for it
JOBS = [
    *({"id": f"speech-{i}", "project": "speech", "node_pool": "h100", "gpus": 8, "submit_offset_s": 0,
       "duration_s": 4 * 3600} for i in range(4)),
    {"id": "vision-0", "project": "vision", "node_pool": "h100", "gpus": 8, "submit_offset_s": 600,
     "duration_s": 3600, "priority": "HIGH"},
]  # fmt: skip
CHANGES = ["vision h100 gpu=8", "speech h100 gpu=24"]


@pytest.fixture
def admin():
    client = APIClient()
    client.force_authenticate(UserFactory(username="root", is_superuser=True, is_staff=True))
    return client


def test_the_cli_replays_a_workload_file_under_todays_quotas_and_the_changes(guaranteed, cli, tmp_path):  # noqa: F811
    path = tmp_path / "workload.yaml"
    path.write_text("".join(f"- {json.dumps(job)}\n" for job in JOBS))  # YAML's flow style: one job a line
    code, out, err = cli("what-if", "--workload", str(path), *sum((["--set", c] for c in CHANGES), []))
    assert (code, err) == (0, ""), err
    assert "a synthetic workload of 5 jobs replayed (nothing actually happened)" in out
    code, out, _ = cli("what-if", "--workload", str(path), "--format", "json", "--set", CHANGES[0], "--set", CHANGES[1])
    answer = json.loads(out)
    assert (answer["workload"], answer["workflows"], answer["left_out"]) == ("synthetic", 5, 0)
    vision = rows(answer)["vision"]
    assert vision["actual"]["jobs"] == 0 and vision["actual"]["wait_p95_s"] is None  # nothing happened
    assert vision["baseline"]["wait_p95_s"] == 4 * 3600 - 600  # today's quotas: it waits for speech
    assert vision["proposed"]["wait_p95_s"] < 600  # its deserved 8: reclaimed from speech at once
    assert rows(answer)["speech"]["proposed"]["preemptions"] >= 1


def test_rest_takes_the_same_workload_and_gives_the_same_figures(guaranteed, cli, admin, tmp_path):  # noqa: F811
    path = tmp_path / "workload.json"
    path.write_text(json.dumps(JOBS))
    _, out, _ = cli("what-if", "--workload", str(path), "--format", "json", "--set", CHANGES[0], "--set", CHANGES[1])
    answer = admin.post(URL, {"workload": JOBS, "changes": CHANGES}, format="json")
    assert answer.status_code == 200, answer.json()
    by_cli = rows(json.loads(out))
    assert {name: (row["baseline"], row["proposed"]) for name, row in rows(answer.json()).items()} == {
        name: (row["baseline"], row["proposed"]) for name, row in by_cli.items()
    }
    assert answer.json()["workload"] == "synthetic"


BAD = [
    ({"gpus": 0}, "workload[1].gpus", 0, "must be a whole number from 1 to 100000"),
    ({"gpus": 100_001}, "workload[1].gpus", 100_001, "must be a whole number from 1 to 100000"),
    ({"gpus": "8"}, "workload[1].gpus", "8", "must be a whole number from 1 to 100000"),
    ({"gpus": True}, "workload[1].gpus", "True", "must be a whole number from 1 to 100000"),
    ({"submit_offset_s": -1}, "workload[1].submit_offset_s", -1, "from 0 to 604799 (seconds after the start)"),
    ({"submit_offset_s": 604_800}, "workload[1].submit_offset_s", 604_800, "from 0 to 604799"),
    ({"duration_s": 0}, "workload[1].duration_s", 0, "must be a whole number from 1 to 2678400"),
    ({"duration_s": 2**70}, "workload[1].duration_s", 2**70, "must be a whole number from 1 to 2678400"),
    ({"project": "nobody"}, "workload[1].project", "nobody", "unknown project"),
    ({"node_pool": "ghost"}, "workload[1].node_pool", "ghost", "unknown node pool"),
    ({"priority": "URGENT"}, "workload[1].priority", "URGENT", "must be HIGH, NORMAL or LOW"),
    ({"colour": 3}, "workload[1].colour", None, "unknown field; allowed fields are id, project, node_pool"),
    ({"id": "speech-0"}, "workload[1].id", "speech-0", "names a job already in the workload"),
    ({"id": "x" * 101}, "workload[1].id", "x" * 100, "must be a text of 1 to 100 characters"),
]


@pytest.mark.parametrize(("change", "field", "value", "reason"), BAD)
def test_rest_refuses_a_bad_job_naming_it_its_value_and_why(guaranteed, admin, change, field, value, reason):  # noqa: F811
    jobs = [JOBS[0], {**JOBS[1], **change}]
    answer = admin.post(URL, {"workload": jobs}, format="json")
    assert answer.status_code == 400, answer.json()
    error = answer.json()
    assert error["field"] == field and reason in error["reason"], error
    if value is not None:
        assert error["value"] == value


def test_rest_refuses_a_missing_key_too_many_jobs_and_a_project_the_caller_may_not_see(guaranteed, admin, researcher):  # noqa: F811
    missing = admin.post(URL, {"workload": [{k: v for k, v in JOBS[0].items() if k != "gpus"}]}, format="json")
    assert (missing.status_code, missing.json()["field"], missing.json()["reason"]) == (400, "workload[0].gpus",
                                                                                          "is required")  # fmt: skip
    too_many = admin.post(URL, {"workload": [JOBS[0]] * 1001}, format="json")
    assert too_many.status_code == 400 and "workload" in json.dumps(too_many.json())
    hidden = researcher.post(URL, {"workload": JOBS}, format="json")  # rita sees vision, not speech
    assert hidden.status_code == 400 and hidden.json()["field"] == "workload[0].project"
    assert researcher.post(URL, {"workload": [JOBS[4]]}, format="json").status_code == 200


def test_the_cli_refuses_a_file_too_large_or_not_a_list_naming_the_option(guaranteed, cli, tmp_path):  # noqa: F811
    large = tmp_path / "large.yaml"
    large.write_text("# " + "x" * MAX_FILE_BYTES + "\n")
    code, out, err = cli("what-if", "--workload", str(large))
    assert code == 1 and f"--workload: the file has {MAX_FILE_BYTES + 3} bytes, at most {MAX_FILE_BYTES}" in err
    mapping = tmp_path / "mapping.yaml"
    mapping.write_text("project: vision\n")
    code, out, err = cli("what-if", "--workload", str(mapping))
    assert code == 1 and "workload: must be a non-empty list of jobs" in err, err
    code, out, err = cli("what-if", "--workload", str(tmp_path / "none.yaml"))
    assert code == 1 and "--workload: cannot read the file" in err, err
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{**JOBS[0], "gpus": 0}]))
    code, out, err = cli("what-if", "--workload", str(bad))
    assert code == 1 and "workload[0].gpus: must be a whole number from 1 to 100000" in err, err
