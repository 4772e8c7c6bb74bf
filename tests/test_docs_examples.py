"""The examples in docs/ run as written: every page's ```bash blocks, in order, in a real shell against the
demo data of `make dev`, a simulated cluster and a live server (tests/docs_runner.py), one page after the other
on the same demo; none fails, and the demo still works afterwards. What cannot run there is listed, with why
(tests/docs_runner.py's EXCLUDED)."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
from io import StringIO
from pathlib import Path

import pytest
import yaml
from django.core.management import call_command
from pytest_django.live_server_helper import LiveServer

from access.services import roles
from clusters.models import Backend, MachinePool
from configs import store
from kubesim import EmulatorServer
from tests.docs_runner import EXCLUDED, DocsShell, runnable_blocks, transcripts
from tests.warm_cli import warm

ROOT = Path(__file__).resolve().parent.parent
# Each test in a transaction of its own that is rolled back: what the module's demo (below) committed stays for
# the next test; the mark also makes pytest-django set the test database up when only this module runs.
pytestmark = [pytest.mark.heavy, pytest.mark.django_db]


def bash_commands(markdown: Path) -> list[list[str]]:
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", markdown.read_text(), re.S):
        for command in block.replace("\\\n", " ").splitlines():
            command = command.split("  #")[0].strip()
            if command.startswith("python manage.py "):
                commands.append(shlex.split(command)[2:])
    return commands


# --- every page, in a real shell, against the demo (tests/docs_runner.py) -------------------------------------

PAGES = sorted(ROOT.joinpath("docs").glob("*.md")) + [ROOT / "README.md"]


@pytest.fixture(scope="module")
def demo(django_db_setup, django_db_blocker):
    """`make dev` in small, once for the module: the demo data, a simulated cluster the demo backends point at and
    a live server, as a reader has them after `make dev`. Flushed at the end, as a transactional test is."""
    with django_db_blocker.unblock():
        roles.ensure_builtin_roles()  # an earlier transactional test's flush removed the migration's roles
        call_command("seed_demo", stdout=StringIO(), stderr=StringIO())
        server = LiveServer("localhost:0")
        server._live_server_modified_settings.enable()
        try:
            with EmulatorServer(host="127.0.0.1", port=0, fleet="demo", schedulers=("kai", "kueue")) as cluster:
                Backend.objects.update(api_url=cluster.url)
                shell = DocsShell(PORTAL=server.url, KUBESIM=cluster.url)
                # `python manage.py …` forked from one warm Django process: seconds less per command (warm_cli)
                with warm(shell.env) as shell.env:
                    yield shell
        finally:
            server._live_server_modified_settings.disable()
            server.stop()
            call_command("flush", "--noinput", verbosity=0)
            roles.ensure_builtin_roles()


@pytest.fixture(scope="module")
def page_runs(demo) -> dict[str, str]:
    """Each page's runnable blocks in one shell of its own, one page after the other on the same demo (a reader
    who follows several pages): the page's stdout, or `FAILED` and what the shell printed."""
    outputs = {}
    for page in PAGES:
        blocks, _ = runnable_blocks(page)
        shell = demo
        if page.name == "README.md":  # it activates .venv itself: a new user's terminal has no Django on its PATH
            shell = DocsShell(**{**demo.env, "PATH": _path_without_the_environment(demo.env["PATH"])})
        try:
            outputs[page.name] = shell.run(blocks) if any(block.strip() for block in blocks) else ""
        except AssertionError as failed:
            outputs[page.name] = f"FAILED {failed}"
    return outputs


def _path_without_the_environment(path: str) -> str:
    return os.pathsep.join(entry for entry in path.split(os.pathsep) if not entry.startswith(str(ROOT)))


def test_every_page_runs_as_written_against_the_demo(page_runs):
    failed = {page: output for page, output in page_runs.items() if output.startswith("FAILED")}
    assert failed == {}, "\n\n".join(f"== {page}\n{output}" for page, output in failed.items())


def test_the_demo_still_works_after_every_page(demo, page_runs):
    """What the docs must never break: the demo's machine pools, the platform researchers submit to, a submit."""
    assert set(MachinePool.objects.values_list("name", flat=True)) >= {"additional", "ml-training"}
    assert {"batch", "t4-spot"} <= set(store.show("POOL", "robotics-spot")["platforms"])
    token = json.loads(_cli(demo, "token", "create", "researcher", "after-docs", "--expires", "1d", "--format", "json"))
    spec = (ROOT / "docs/examples/workflows/hello.yaml").read_text().replace("gpu: 0}", "gpu: 0, platform: batch}")
    url, auth = f"{demo.env['PORTAL']}/api/pool/robotics-spot/workflow", f"Authorization: Bearer {token['token']}"
    curl = ["curl", "-s", "-X", "POST", url, "-H", auth, "-H", "Content-Type: application/yaml", "--data-binary", "@-"]
    submitted = subprocess.run(curl, input=spec, capture_output=True, text=True, check=True)
    answer = json.loads(submitted.stdout)
    assert answer.get("status") in ("PENDING", "QUEUED"), answer


def _cli(shell: DocsShell, *args: str) -> str:
    done = subprocess.run(
        [str(ROOT / ".venv/bin/python"), "manage.py", *args], cwd=ROOT, env=shell.env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_only_the_listed_commands_are_left_out():
    """A page's examples run unless listed in EXCLUDED (with why): a new page, a new block is covered."""
    left_out = {page.relative_to(ROOT).as_posix(): runnable_blocks(page)[1] for page in PAGES}
    assert {page: len(commands) for page, commands in left_out.items() if commands} == {
        "README.md": 2,
        "docs/clusters.md": 4,
        "docs/configuration.md": 9,
        "docs/deploy.md": 51,
        "docs/osmo-cli.md": 1,
        "docs/performance.md": 6,
        "docs/scale.md": 4,
        "docs/simulated-cluster.md": 3,
        "docs/testing.md": 3,
    }
    assert all(reason for reasons in EXCLUDED.values() for reason in reasons.values())
    assert set(EXCLUDED) <= set(left_out), "EXCLUDED names a page that is gone"


def test_workflows_api_page_submits_cancels_and_reads_logs(page_runs):
    out = page_runs["workflows-api.md"]
    assert out.count("valid for pool robotics-inference (DRY_RUN; nothing stored)") == 2  # hello, two-task
    cancelled = re.findall(r"workflow (hello-\d+): CANCELLED", out)
    assert cancelled, out  # cancel used the id the submit printed
    assert f"pod osmo-workflows/{cancelled[-1]}-say-hello created" in out  # and so did events
    assert "echo hi from {{workflow_id}}" in out  # the templated spec's dry run printed it rendered
    # the logs of a pod the simulated cluster (no kubelet here) never starts: a notice, not an error
    assert '[say-hello] (No log yet: container "say-hello" in pod' in out
    assert "is waiting to start: ContainerCreating" in out


def test_readme_api_example_submits_in_a_shell_without_the_environment_on_its_path(page_runs):
    answer = json_documents(page_runs["README.md"])[-1]
    assert answer["workflow_id"].startswith("hello-") and answer["status"] == "PENDING", answer


def test_access_page_token_example_lists_the_pools(page_runs):
    pools = json.loads(page_runs["access.md"].rstrip().splitlines()[-1])  # curl's answer, after the CLI's text
    assert "code" not in pools, pools  # the list of pools, not an error


def test_admission_page_explains_why_its_gang_waits_and_cancels_it(page_runs):
    out = page_runs["admission.md"]
    waits = "waiting: node pool gpu-cluster-01-a100: asks for 24 A100 GPUs, more than the node pool's 16 A100 GPUs"
    assert waits in out, out
    assert re.search(r"workflow a100-gang-\d+: CANCELLED", out), out


def test_machine_pool_platforms_page_makes_its_platforms_on_the_demo_and_deletes_its_pool(page_runs):
    out, page = page_runs["machine-pool-platforms.md"], ROOT / "docs/machine-pool-platforms.md"
    for transcript in transcripts(page)[:2]:  # the platform made, the template (the others: placement, files only)
        assert transcript.expected + "\n" in out, transcript.command
    assert "- no node now; machine pool ml-training can add a g4dn.xlarge, 1 × T4; up to 3\n" in out
    _, shown = out.split("POOL rosa-platforms deleted (revision 4)\n")  # then placement over config show's YAML
    assert "ml-training (would-be g4dn.xlarge)  yes   - (no node now; machine pool ml-training can add" in shown, out


def test_machine_pools_page_lists_and_describes_the_demos_machine_pools(page_runs):
    out = page_runs["machine-pools.md"]
    rows: dict[str, list[str]] = {}  # the first of each: `machinepool list`'s row
    for line in out.splitlines():
        if line.startswith(("additional ", "ml-training ")):
            rows.setdefault(line.split()[0], line.split())
    assert rows["additional"][1:5] == ["rosa-cluster-01", "Yes", "2-5", "m5.xlarge"], out
    assert rows["ml-training"][1:5] == ["rosa-cluster-01", "Yes", "0-3", "g4dn.xlarge"], out
    assert "Yes (on-demand)" in " ".join(rows["ml-training"])
    assert (
        "Platforms:             robotics-spot/t4-spot\n" in out and "node.kubernetes.io/machinepool: ml-training" in out
    )
    scheduling = json.loads(out[out.rindex('{\n  "scheduling"') :])  # the REST detail, the page's last answer
    assert scheduling["platforms"] == [{"pool": "robotics-spot", "platform": "t4-spot"}]
    assert scheduling["scheduling"]["node_selector"] == {"node.kubernetes.io/machinepool": "ml-training"}


def test_quota_schedulers_page_writes_its_kai_backends_queues_to_the_demo_cluster_and_removes_them(page_runs):
    out, page = page_runs["quota-schedulers.md"], (ROOT / "docs/quota-schedulers.md").read_text()
    shown = re.search(r"`vision`'s there:\n\n```text\n(.*?)```", page, re.S).group(1)
    queues, listed = out.split("\n[\n", 1)
    assert queues.count("kind: Queue") == 10 and queues.endswith("\n" + shown.rstrip("\n")), queues
    applied = yaml.safe_load(listed.split("\n]\n", 1)[1].split("\n{\n", 1)[0])
    assert applied["created"] == [] and len(applied["replaced"]) == 10, applied
    assert '"scheduler": "kai"' in out and out.rstrip().endswith("BACKEND kai-cluster deleted (revision 3)"), out


def test_config_cli_page_creates_and_shows_its_pool(page_runs):
    out = page_runs["config-cli.md"]
    assert "POOL team-a100 created (revision 1)" in out and "cluster-a" in out


def test_config_api_page_writes_and_shows(page_runs):
    written, shown = json_documents(page_runs["config-api.md"])
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


def test_placement_page_places_the_rosa_seed_workloads_on_the_demo_cluster(page_runs):
    out = page_runs["placement.md"]
    table, as_json = out.split("\n{", 1)
    assert "additional-node-0   yes" in table and "2 of 29 nodes fit." in table
    fits = [row["name"] for row in json.loads("{" + as_json)["nodes"] if row["fits"]]
    assert fits == ["ml-training-node-0", "ml-training-node-1"]


@pytest.mark.parametrize("page", ["workflows.md", "workflows-api.md", "placement.md", "clusters.md"])
def test_shown_error_transcripts_are_what_the_commands_print(demo, page_runs, page):
    shown = transcripts(ROOT / "docs" / page)
    assert shown, f"{page} shows no `$ command` transcript"
    for transcript in shown:
        code, output = demo.transcript(transcript)
        assert (code, output) == (1, transcript.expected), transcript.command


def test_every_documented_example_file_exists():
    """A page that names an example file ships it (docs/examples/..., tests/fixtures/...)."""
    missing = []
    for page in [*(ROOT / "docs").glob("*.md"), ROOT / "README.md"]:
        for path in re.findall(r"(?:docs/examples|tests/fixtures)/[\w./-]+\.(?:ya?ml|json)", page.read_text()):
            if not (ROOT / path).exists():
                missing.append(f"{page.name}: {path}")
    assert missing == []


def test_credentials_page_sets_lists_refuses_and_never_shows_a_value(page_runs):
    out = page_runs["credentials.md"]
    answers = json_documents(out)  # null (set), null, the list, the refusal, null, the pull secrets, the delete
    listed, refused = answers[2], answers[3]
    assert [c["cred_name"] for c in listed["credentials"]] == ["ngc", "wandb"], out
    assert refused["field"] == "tasks[0].credentials.wandb-env" and refused["code"] == "credential_missing", out
    assert answers[5] == [{"name": "with-credentials-dry-run-registry"}], out
    assert answers[6]["credentials"][0]["cred_name"] == "wandb-env"
    assert "nvapi-example" not in out and "example-key" not in out  # never shown back
