"""What-if changes (quotas.services.what_if_changes, what_if_machines; docs/quotas.md "What-if"): the grammar
reads a keyword only in its own form, so a project named `department`, `capacity` or `machinepool` stays
reachable (`project NAME …` always names a project); a machine pool's max becomes the GPUs its node pool gains
or loses, on the CLI, REST and the admin grid's preview, with the other kinds' bounds and errors."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse

from configs import revisions
from portal.errors import DomainError
from quotas.models import NodePool
from quotas.services.what_if import what_if
from quotas.services.what_if_changes import MAX_NODES, parse_change
from tests.factories import MachinePoolFactory, ProjectFactory
from tests.quotas.test_what_if import DAY_START, URL, cli, guaranteed, recorded_day, researcher, rows  # noqa: F401


@pytest.mark.parametrize(
    ("text", "kind", "team", "node_pool"),
    [
        ("department h100 gpu=8", "project", "department", "h100"),  # a project named department
        ("department research h100 gpu=8", "department", "research", "h100"),
        ("capacity h100 gpu=+8", "capacity", "", "h100"),
        ("project capacity h100 gpu=8", "project", "capacity", "h100"),
        ("capacity priority=2", "priority", "capacity", ""),
        ("machinepool h100 gpu=8", "project", "machinepool", "h100"),
        ("machinepool h100-spot max=4", "machinepool", "h100-spot", ""),
        ("project project h100 gpu=8", "project", "project", "h100"),
        ("project department priority=1", "priority", "department", ""),
    ],
)
def test_a_keyword_is_read_only_in_its_own_form(text, kind, team, node_pool):
    change = parse_change(text, "changes[0]")
    assert (change.kind, change.team, change.node_pool) == (kind, team, node_pool)


@pytest.mark.parametrize(
    ("text", "field", "said"),
    [
        (f"machinepool h100-spot max={MAX_NODES + 1}", "changes[0].max", f"from 0 to {MAX_NODES}"),
        ("machinepool h100-spot max=-1", "changes[0].max", "whole number"),
        ("machinepool h100-spot max=4 gpu=8", "changes[0].gpu", "a machine pool's keys are max"),
        ("machinepool a b max=4", "changes[0]", "machinepool NAME max=N"),
        ("department research gpu=8 weight-gpu=2 x", "changes[0]", "names first"),
    ],
)
def test_a_bad_machine_pool_change_names_its_token(text, field, said):
    with pytest.raises(DomainError) as refused:
        parse_change(text, "changes[0]")
    assert refused.value.field == field and said in str(refused.value), str(refused.value)


@pytest.fixture
def h100_machines(recorded_day, carved):  # noqa: F811
    """A spot machine pool of p5.48xlarge (8 H100s a node), at most 2 nodes: its nodes are h100's by their label."""
    return MachinePoolFactory(backend=carved, name="h100-spot", instance_type="p5.48xlarge", max_replicas=2)


def test_a_machine_pools_max_moves_its_node_pools_gpus(h100_machines):
    answer = what_if(DAY_START, DAY_START + timedelta(days=1), ["machinepool h100-spot max=4"])
    vision = rows(answer)["vision"]  # 16 GPUs more in h100: vision's workflow needs not wait for speech's
    assert vision["proposed"]["wait_p95_s"] == 0 < vision["baseline"]["wait_p95_s"]
    assert [r["node_pool"] for r in answer["right_now"]] == ["h100"]
    fewer = what_if(DAY_START, DAY_START + timedelta(days=1), ["machinepool h100-spot max=0"])
    assert rows(fewer)["vision"]["proposed"]["wait_p95_s"] > rows(fewer)["vision"]["baseline"]["wait_p95_s"]  # 16 fewer


def test_a_project_named_like_a_keyword_is_changed_through_every_door(recorded_day, teams, cli):  # noqa: F811
    ProjectFactory(name="capacity", department=teams["research"])
    answer = what_if(DAY_START, DAY_START + timedelta(days=1), ["project capacity h100 gpu=0"])
    assert answer["changes"] == ["project capacity h100 gpu=0"]
    code, _, err = cli("what-if", "--from", "2026-11-02", "--to", "2026-11-03", "--set", "capacity h100 gpu=+8")
    assert (code, err) == (0, "")  # the keyword form: h100's capacity


def test_the_doors_refuse_an_unknown_or_gpu_less_machine_pool(h100_machines, cli, researcher):  # noqa: F811
    MachinePoolFactory(backend=h100_machines.backend, name="workers", instance_type="m5.xlarge")
    code, out, err = cli("what-if", "--set", "machinepool ghost max=3")
    assert code == 1 and "changes[0].machinepool: unknown machine pool (value: 'ghost')" in err, err
    body = {"start": "2026-11-02T00:00:00Z", "end": "2026-11-03T00:00:00Z", "changes": ["machinepool workers max=9"]}
    answer = researcher.post(URL, body, format="json")
    assert answer.status_code == 400 and answer.json()["field"] == "changes[0].machinepool", answer.json()
    assert "has no GPUs" in answer.json()["reason"]
    body["changes"] = ["machinepool h100-spot max=4"]
    assert researcher.post(URL, body, format="json").status_code == 200


def test_the_grid_previews_a_machine_pools_max_it_cannot_save(h100_machines, admin_client):
    url = reverse("admin:quotas_nodepool_quotas", args=[NodePool.objects.get(name="h100").pk])
    before = revisions.history("NODE_POOL", "h100")[0].revision
    form = {"project:vision:gpu:deserved": "0", "preview": "1", "what_if_more": "machinepool h100-spot max=4\n"}
    text = admin_client.post(url, form).content.decode()
    preview = text[text.index("Preview of this change") : text.index('id="what-if-replay"')]
    assert "<code>machinepool h100-spot max=4</code>" in preview, preview
    assert "machinepool h100-spot max=4\n</textarea>" in text  # kept for the next preview
    refused = admin_client.post(url, {**form, "what_if_more": "machinepool ghost max=4"}).content.decode()
    assert "cannot preview" in refused and "unknown machine pool" in refused
    assert revisions.history("NODE_POOL", "h100")[0].revision == before  # a preview writes nothing
