"""The examples in docs/ run as written: the config CLI page in-process (in order, against a fresh database);
the pages with REST, placement and error transcripts in a real shell against the demo data, a simulated
cluster and a live server (tests/docs_runner.py)."""

from __future__ import annotations

import json
import os
import re
import shlex
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from access.services import roles
from clusters.models import Backend
from kubesim import EmulatorServer
from tests.docs_runner import DocsShell, bash_blocks, transcripts
from workflows.models import Workflow

ROOT = Path(__file__).resolve().parent.parent


def bash_commands(markdown: Path) -> list[list[str]]:
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", markdown.read_text(), re.S):
        for command in block.replace("\\\n", " ").splitlines():
            command = command.split("  #")[0].strip()
            if command.startswith("python manage.py "):
                commands.append(shlex.split(command)[2:])
    return commands


@pytest.mark.django_db
def test_config_cli_page_runs_as_written(monkeypatch):
    monkeypatch.chdir(ROOT)
    commands = bash_commands(ROOT / "docs" / "config-cli.md")
    assert len(commands) >= 10
    outputs = []
    for args in commands:
        out = StringIO()
        call_command(*args, stdout=out, stderr=StringIO())
        outputs.append(out.getvalue())
    assert "POOL team-a100 created (revision 1)" in outputs[3]
    assert any("team-a100" in output and "cluster-a" in output for output in outputs)


# --- pages run in a real shell (tests/docs_runner.py) ---------------------------------------------------------


@pytest.fixture
def demo_site(live_server, transactional_db):
    """`make dev` in small: the demo data, a simulated cluster the demo backends point at, a live server."""
    roles.ensure_builtin_roles()  # a transactional test's flush removed the migration's roles
    call_command("seed_demo", stdout=StringIO(), stderr=StringIO())
    with EmulatorServer(host="127.0.0.1", port=0, fleet="demo") as cluster:
        Backend.objects.update(api_url=cluster.url)
        yield DocsShell(PORTAL=live_server.url, KUBESIM=cluster.url)


def test_workflows_api_page_runs_as_written(demo_site):
    out = demo_site.run(bash_blocks(ROOT / "docs" / "workflows-api.md"))
    assert out.count("valid for pool robotics-inference (DRY_RUN; nothing stored)") == 2  # hello, two-task
    statuses = dict(Workflow.objects.values_list("workflow_id", "status"))
    assert sorted(statuses) == [f"hello-{n}" for n in range(1, 6)]  # 3 + 1 over REST, 1 on the command line
    assert statuses["hello-4"] == statuses["hello-5"] == "CANCELLED"  # the two the page cancels, by their ids
    assert "workflow hello-5: CANCELLED" in out  # cancel used the id the submit printed
    assert "pod osmo-workflows/hello-5-say-hello created" in out  # and so did events
    assert "echo hi from {{workflow_id}}" in out  # the templated spec's dry run printed it rendered
    # the logs of a pod the simulated cluster (no kubelet here) never starts: a notice, not an error
    waiting = 'container "say-hello" in pod "hello-4-say-hello" is waiting to start: ContainerCreating'
    assert f"[say-hello] (No log yet: {waiting})" in out  # the text path
    assert '[say-hello] (No log yet: container "say-hello" in pod "hello-5-say-hello"' in out  # the CLI
    assert f'"notice":"No log yet: {waiting}"' in out.replace('\\"', '"')  # the JSON path


def test_readme_api_example_runs_in_a_shell_without_the_environment_on_its_path(demo_site):
    """The README's example activates .venv itself: a new user's terminal has no Django on its PATH."""
    demo_site.env["PATH"] = os.pathsep.join(
        entry for entry in demo_site.env["PATH"].split(os.pathsep) if not entry.startswith(str(ROOT))
    )
    block = next(block for block in bash_blocks(ROOT / "README.md") if "source .venv/bin/activate" in block)
    answer = json_documents(demo_site.run([block]))[-1]
    assert (answer["workflow_id"], answer["status"]) == ("hello-1", "PENDING"), answer


def test_access_page_token_example_runs_as_written(demo_site):
    call_command("config", "set", "ROLE", "osmo-team", "pool", stdout=StringIO())  # as the page did before
    call_command("user", "create", "ana", "--roles", "osmo-user,osmo-team", stdout=StringIO())
    pools = json_documents(demo_site.run(bash_blocks(ROOT / "docs" / "access.md")[-1:]))[-1]
    assert "code" not in pools, pools  # the list of pools, not an error


def test_config_api_page_runs_as_written(demo_site):
    written, shown = json_documents(demo_site.run(bash_blocks(ROOT / "docs" / "config-api.md")))
    assert written["created"] is True and shown["description"] == "second cluster"


def json_documents(text: str) -> list:
    """The JSON answers curl printed one after the other (without newlines between them)."""
    decoder, found, at = json.JSONDecoder(), [], 0
    while at < len(text.rstrip()):
        document, at = decoder.raw_decode(text, at)
        found.append(document)
        while at < len(text) and text[at].isspace():
            at += 1
    return found


def test_placement_page_places_the_rosa_seed_workloads_on_the_demo_cluster(demo_site):
    out = demo_site.run(bash_blocks(ROOT / "docs" / "placement.md"))
    table, as_json = out.split("\n{", 1)
    assert "additional-node-0   yes" in table and "2 of 29 nodes fit." in table
    fits = [row["name"] for row in json.loads("{" + as_json)["nodes"] if row["fits"]]
    assert fits == ["ml-training-node-0", "ml-training-node-1"]


@pytest.mark.parametrize("page", ["workflows.md", "workflows-api.md", "placement.md", "clusters.md"])
def test_shown_error_transcripts_are_what_the_commands_print(demo_site, page):
    shown = transcripts(ROOT / "docs" / page)
    assert shown, f"{page} shows no `$ command` transcript"
    for transcript in shown:
        code, output = demo_site.transcript(transcript)
        assert (code, output) == (1, transcript.expected), transcript.command


def test_every_documented_example_file_exists():
    """A page that names an example file ships it (docs/examples/..., tests/fixtures/...)."""
    missing = []
    for page in [*(ROOT / "docs").glob("*.md"), ROOT / "README.md"]:
        for path in re.findall(r"(?:docs/examples|tests/fixtures)/[\w./-]+\.(?:ya?ml|json)", page.read_text()):
            if not (ROOT / path).exists():
                missing.append(f"{page.name}: {path}")
    assert missing == []
