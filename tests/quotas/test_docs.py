"""docs/quotas.md: its examples run as written, in order, against a fresh database, and print what it shows;
the REST example runs in a shell against a live server."""

from __future__ import annotations

import json
import shlex
from io import StringIO

import pytest
from django.core.management import call_command

from access.services import roles
from configs import revisions
from portal.errors import DomainError
from tests.docs_runner import DocsShell, bash_blocks, transcripts
from tests.test_docs_examples import ROOT, bash_commands, json_documents

PAGE = ROOT / "docs" / "quotas.md"


@pytest.mark.django_db
def test_quotas_page_runs_as_written(monkeypatch):
    monkeypatch.chdir(ROOT)
    commands = bash_commands(PAGE)
    assert len(commands) == 20
    outputs = {}
    for index, args in enumerate(commands):
        if index == 17:  # before the time-based fair share rewrites the document: the doors' end state
            after = json.loads(_run("config", "show", "NODE_POOL", "a100"))
        out = StringIO()
        call_command(*args, stdout=out, stderr=StringIO())
        outputs[" ".join(args)] = out.getvalue()
    page = PAGE.read_text()
    for command in ("config show NODE_POOL a100", "config show NODE_POOL gpu-cluster-default", "quota show a100"):
        assert f"```\n{outputs[command]}```" in page  # the page shows the real output, whole
    shown = json.loads(outputs["config show NODE_POOL a100"])
    assert shown["projects"]["optics"]["memory"]["deserved"] == 512 * 2**30
    # the doors: one revision per `quota set`, and the rollback to revision 2 restored its quotas
    autonomy = json.loads(outputs["quota set --department autonomy a100 --cpu 64 --format json"])
    assert autonomy["revision"] == 4 and autonomy["quotas"]["cpu"]["deserved"] == 64000
    shown_pool = json.loads(outputs["node-pool show a100 --format json"])
    assert (shown_pool["deserved"]["gpu"], shown_pool["managed"], shown_pool["overcommitted"]) == (16, True, True)
    assert after["projects"]["optics"]["gpu"] == {"deserved": 10, "limit": None, "weight": 2}
    assert after["projects"]["motion"]["gpu"] == {"deserved": 4, "limit": None, "weight": 1}
    assert "cpu" not in after["departments"]["autonomy"]
    never = outputs["quota set optics a100 --no-lend"].strip()  # then --lend: the document is as it was
    assert never.startswith("project optics in a100: gpu deserved 10 limit - weight 2 never lends;")
    assert f"The first prints `{never}`" in " ".join(page.split())
    for transcript in transcripts(PAGE):
        with pytest.raises(DomainError) as refused:
            _run(*shlex.split(transcript.command)[2:])
        assert f"error: {refused.value}" == transcript.expected
    assert len(transcripts(PAGE)) == 2
    # the time-based fair share, last: its block and the weights before and after usage (none here)
    block = json.loads(outputs["quota show a100 --format json"])["time_based_fair_share"]
    assert (block["window_days"], block["half_life_hours"], block["k"]) == (7, 24, 1.0)
    assert f'the `text` "{block["text"]}"' in " ".join(page.split())
    optics = next(row for row in block["weights"]["gpu"] if row["name"] == "optics")
    assert (optics["usage"], optics["weight_before"], optics["weight_after"]) == (0, 0.5, 1.0)
    # the synthetic workload: its four jobs replayed; a100 has no nodes here, so only the proposed run's 16 GPUs
    # more run them
    answer = json.loads(outputs[" ".join(commands[19])])
    assert (answer["workload"], answer["workflows"]) == ("synthetic", 4)
    replayed = {row["project"]: row for row in answer["projects"]}
    assert replayed["optics"]["actual"]["jobs"] == 0 and replayed["optics"]["proposed"]["gpu_hours"] == 8 * 4 + 2 * 0.5


def _run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO())
    return out.getvalue()


def test_quotas_rest_example_runs_in_a_shell_against_a_live_server(live_server, transactional_db, monkeypatch):
    monkeypatch.chdir(ROOT)
    roles.ensure_builtin_roles()  # a transactional test's flush removed the migration's roles
    call_command("user", "create", "admin", "--roles", "osmo-admin", stdout=StringIO())
    for args in bash_commands(PAGE)[:5]:  # the backend, the teams and node pool a100
        call_command(*args, stdout=StringIO(), stderr=StringIO())
    [block] = [block for block in bash_blocks(PAGE) if "curl" in block]
    patched, shown = json_documents(DocsShell(PORTAL=live_server.url).run([block]))
    assert patched["quotas"]["gpu"] == {"deserved": 8, "limit": 12, "weight": 2, "lend": True}
    assert patched["revision"] == 2
    optics = next(row for row in shown["projects"] if (row["project"], row["resource"]) == ("optics", "gpu"))
    assert (optics["deserved"], optics["limit"]) == (8, 12)
    assert revisions.history("NODE_POOL", "a100")[0].description == "optics lends 2"
