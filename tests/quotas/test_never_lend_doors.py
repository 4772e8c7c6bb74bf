"""The "never lend" switch of a team's quota in a node pool (`lend: false`) at every door that writes quotas: the
NODE_POOL document, `quota set --no-lend/--lend`, REST PATCH and PUT, the admin grid's lend cell; its history
comes with the NODE_POOL revisions (and a rollback undoes it); bad input is refused with field, value and
reason, and nothing is written.

Fleet and teams: tests/quotas/conftest.py (node pools h100, a100; research → vision, speech; ops → infer)."""

from __future__ import annotations

import json

import pytest
from django.core.management import base
from django.urls import reverse

from configs import revisions, store
from configs.errors import ConfigError
from quotas.models import NodePool, Quota
from quotas.services import quotas
from tests.clirun import run_as_cli
from tests.quotas.conftest import CLI, H100_LABEL

URL = "/api/quotas/node_pools"


@pytest.fixture
def cli(capsys, monkeypatch):
    monkeypatch.setattr(base.connections, "close_all", lambda: None)  # keep the test's transaction
    apps = {"quota": "quotas", "config": "pools"}
    return lambda name, *args: run_as_cli(capsys, apps[name], name, *args)


@pytest.fixture
def guaranteed(carved, teams):
    quotas.set_quota(None, "h100", "department", "research", "gpu", deserved=16)
    quotas.set_quota(None, "h100", "project", "vision", "gpu", deserved=8)


def lends(team: str, resource: str = "gpu", node_pool: str = "h100") -> bool:
    field = "department__name" if team in ("research", "ops") else "project__name"
    return Quota.objects.get(node_pool__name=node_pool, resource=resource, **{field: team}).lend


def document() -> dict:
    return store.show("NODE_POOL", "h100")


def test_the_document_says_lend_false_only_where_a_team_never_lends(guaranteed):
    assert document()["projects"]["vision"] == {"gpu": {"deserved": 8, "limit": None, "weight": 1}}
    body = {
        "backend": "sim",
        "selector": H100_LABEL,
        "departments": {"research": {"gpu": {"deserved": 16, "lend": False}}},
        "projects": {"vision": {"gpu": {"deserved": 8}}, "speech": {"gpu": {"lend": False}}},
    }
    store.apply("NODE_POOL", "h100", body, CLI)
    shown = document()
    assert shown["departments"]["research"]["gpu"] == {"deserved": 16, "limit": None, "weight": 1, "lend": False}
    assert shown["projects"]["vision"]["gpu"] == {"deserved": 8, "limit": None, "weight": 1}
    # never lending nothing is still said (the switch is kept for when a guarantee comes)
    assert shown["projects"]["speech"] == {"gpu": {"deserved": 0, "limit": None, "weight": 1, "lend": False}}
    assert not lends("research") and lends("vision") and not lends("speech") and lends("speech", "cpu")


def test_a_lend_that_is_not_a_boolean_is_refused_and_nothing_is_written(guaranteed):
    for bad in ("no", 0, None, "false"):
        with pytest.raises(ConfigError) as caught:
            quotas.set_quota(None, "h100", "project", "vision", "gpu", deserved=2, lend=bad)
        assert caught.value.field == "gpu.lend" and caught.value.value == bad
        assert "true or false" in caught.value.reason
    assert (
        lends("vision")
        and Quota.objects.get(project__name="vision", node_pool__name="h100", resource="gpu").deserved == 8
    )


def test_quota_set_no_lend_and_lend_one_revision_each_and_rollback(guaranteed, cli):
    before = revisions.history("NODE_POOL", "h100")[0].revision
    code, out, err = cli("quota", "set", "vision", "h100", "--no-lend")
    assert (code, err) == (0, "")
    assert out.startswith("project vision in h100: gpu deserved 8 limit - weight 1 never lends; ")
    assert not any(lends("vision", r) for r in ("gpu", "cpu", "memory"))
    assert lends("speech") and lends("research")
    code, out, _ = cli("quota", "set", "--department", "research", "h100", "--no-lend", "--format", "json")
    assert code == 0 and json.loads(out)["quotas"]["gpu"] == {"deserved": 16, "limit": None, "weight": 1, "lend": False}
    code, out, _ = cli("quota", "set", "vision", "h100", "--lend", "--gpu", "6")
    assert code == 0 and "gpu deserved 6 limit - weight 1;" in out and lends("vision")
    history = revisions.history("NODE_POOL", "h100")
    assert history[0].revision == before + 3
    assert [entry.description for entry in history[:3]] == [
        "quota of project vision in h100: gpu deserved=6 lend=True, cpu lend=True, memory lend=True",
        "quota of department research in h100: gpu lend=False, cpu lend=False, memory lend=False",
        "quota of project vision in h100: gpu lend=False, cpu lend=False, memory lend=False",
    ]
    code, _, err = cli("config", "rollback", "NODE_POOL", "h100", str(before + 1))
    assert code == 0, err
    assert not lends("vision") and lends("research")  # back to the revision that made vision never lend


def test_quota_set_refuses_lend_and_no_lend_together(guaranteed, cli):
    code, out, err = cli("quota", "set", "vision", "h100", "--lend", "--no-lend")
    assert code != 0 and out == ""
    assert "not allowed with argument" in err and "--lend" in err and "--no-lend" in err
    assert lends("vision")


def test_rest_patch_and_put_set_and_reset_the_switch(guaranteed, admin_api):
    patched = admin_api.patch(f"{URL}/h100/projects/vision", {"gpu": {"lend": False}}, format="json")
    assert patched.status_code == 200, patched.json()
    assert patched.json()["quotas"]["gpu"] == {"deserved": 8, "limit": None, "weight": 1, "lend": False}
    assert patched.json()["quotas"]["cpu"]["lend"] is True and not lends("vision")
    kept = admin_api.patch(f"{URL}/h100/projects/vision", {"gpu": {"deserved": 4}}, format="json")
    assert kept.json()["quotas"]["gpu"]["lend"] is False  # PATCH keeps what it is not given
    put = admin_api.put(f"{URL}/h100/projects/vision", {"gpu": {"deserved": 4}}, format="json")
    assert put.json()["quotas"]["gpu"] == {"deserved": 4, "limit": None, "weight": 1, "lend": True}  # PUT: whole
    detail = admin_api.get(f"{URL}/h100").json()
    assert {row["lend"] for row in detail["projects"]} == {True}


@pytest.mark.parametrize("bad", ["no", 0, 1, None, "false"])
def test_rest_refuses_a_lend_that_is_not_a_boolean(guaranteed, admin_api, bad):
    answer = admin_api.patch(f"{URL}/h100/projects/vision", {"gpu": {"deserved": 2, "lend": bad}}, format="json")
    assert answer.status_code == 400
    assert (answer.json()["field"], answer.json()["value"]) == ("gpu.lend", bad)
    assert (
        lends("vision")
        and Quota.objects.get(project__name="vision", node_pool__name="h100", resource="gpu").deserved == 8
    )


def grid_url() -> str:
    return reverse("admin:quotas_nodepool_quotas", args=[NodePool.objects.get(name="h100").pk])


def test_the_admin_grid_has_a_lend_cell_per_team_and_resource(guaranteed, admin_client):
    quotas.set_quota(None, "h100", "project", "speech", "gpu", lend=False)
    text = admin_client.get(grid_url()).content.decode()
    assert '<select name="project:vision:gpu:lend"' in text
    speech = text[text.index('name="project:speech:gpu:lend"') :]
    assert speech.index('value="never" selected') < speech.index("</select>")
    before = revisions.history("NODE_POOL", "h100")[0].revision
    answer = admin_client.post(
        grid_url(), {"project:vision:gpu:lend": "never", "project:speech:gpu:lend": "lend"}, follow=True
    )
    assert f"Quotas of h100 saved: 2 team(s) changed, one revision (r{before + 1})." in answer.content.decode()
    assert not lends("vision") and lends("speech")
    assert revisions.history("NODE_POOL", "h100")[0].description == (
        "quotas in h100: project speech gpu deserved=0 limit=None weight=1 lend=True;"
        " project vision gpu deserved=8 limit=None weight=1 lend=False"
    )
    assert revisions.history("NODE_POOL", "h100")[0].revision == before + 1


def test_the_admin_grid_refuses_an_unknown_lend_choice_on_its_cell(guaranteed, admin_client):
    before = revisions.history("NODE_POOL", "h100")[0].revision
    answer = admin_client.post(grid_url(), {"project:vision:gpu:lend": "sometimes", "project:speech:gpu:deserved": "4"})
    text = answer.content.decode()
    assert "project vision, GPU lend: choose lend or never" in text and "(you entered &#x27;sometimes&#x27;)" in text
    assert revisions.history("NODE_POOL", "h100")[0].revision == before  # nothing written, not even speech's
    assert lends("vision")
