"""Time-based fair share (NODE_POOL `time_based_fair_share`; docs/quotas.md, "Time-based fair share"): the
block's bounds at every door, one revision per change; past usage from the usage record moving admission's
over-quota split, the fair-share page and `quota show`; the decay; constant queries.

The world (tests/quotas/conftest.py): node pool h100 (4 × 8 = 32 GPUs); research (vision, speech), ops
(infer). Here research deserves 16 GPUs, vision and speech 4 each; both ask for far more than they deserve.
"""

from __future__ import annotations

import json
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from access.services import roles
from configs import store
from configs.errors import ConfigError
from configs.models import Revision
from pools.models import Pool
from quotas.models import NodePool
from quotas.services import quotas
from quotas.services.state import state
from tests.factories import UserFactory, WorkflowFactory
from tests.queries import assert_constant_queries
from tests.quotas.conftest import CLI
from tests.usage.factories import attempt_row
from workflows.models import WorkflowStatus

POOL = "h100"


def set_block(block) -> dict:
    document = {**store.show("NODE_POOL", POOL), "time_based_fair_share": block}
    store.apply("NODE_POOL", POOL, document, CLI)
    return store.show("NODE_POOL", POOL)["time_based_fair_share"]


def queued(project, gpus: int):
    return WorkflowFactory(
        pool=Pool.objects.get(name="train"),
        project=project,
        node_pool=POOL,
        status=WorkflowStatus.QUEUED,
        requests={"gpu": gpus, "cpu": 0, "memory": 0},
    )


def used(project: str, gpus: int, days_ago: float, hours: float, node_pool: str = POOL):
    """An attempt of `gpus` GPUs that ended `days_ago` days ago after running `hours` hours."""
    ended = timezone.now() - timedelta(days=days_ago)
    return attempt_row(
        project=project,
        department="research",
        node_pool=node_pool,
        gpu=gpus,
        started_at=ended - timedelta(hours=hours),
        ended_at=ended,
    )


def shares() -> dict[str, int]:
    result = state(NodePool.objects.get(name=POOL)).result
    return {name: result.shares["gpu"].projects[name].fair_share for name in ("vision", "speech")}


@pytest.fixture
def contended(carved, teams):
    quotas.set_quota(None, POOL, "department", "research", "gpu", deserved=16)
    for name in ("vision", "speech"):
        quotas.set_quota(None, POOL, "project", name, "gpu", deserved=4)
        queued(teams[name], 32)
    return teams


# --- the document --------------------------------------------------------------------------------------


def test_the_block_is_off_by_default_and_takes_its_defaults_with_one_revision_per_change(carved):
    assert store.show("NODE_POOL", POOL)["time_based_fair_share"] is None
    revisions = Revision.objects.count()
    assert set_block({}) is None  # {} reads as off: nothing changed, no revision
    assert Revision.objects.count() == revisions
    assert set_block({"half_life_hours": 24}) == {"window_days": 7, "half_life_hours": 24, "k": 1.0}
    assert set_block({"window_days": 14, "k": 2.5}) == {"window_days": 14, "half_life_hours": None, "k": 2.5}
    assert Revision.objects.count() == revisions + 2
    node_pool = NodePool.objects.get(name=POOL)
    assert (node_pool.fair_share_window_days, str(node_pool.fair_share_k)) == (14, "2.50")
    assert set_block(None) is None and not NodePool.objects.get(name=POOL).time_based_fair_share


BAD = [
    ({"window_days": 0}, "window_days", "whole number of days from 1 to 90"),
    ({"window_days": 91}, "window_days", "whole number of days from 1 to 90"),
    ({"window_days": "7"}, "window_days", "whole number of days from 1 to 90"),
    ({"half_life_hours": 0}, "half_life_hours", "null (no decay) or a whole number of hours from 1 to 2160"),
    ({"half_life_hours": 2161}, "half_life_hours", "from 1 to 2160"),
    ({"k": -0.5}, "k", "a number from 0 to 10 with at most two decimals"),
    ({"k": 10.01}, "k", "a number from 0 to 10 with at most two decimals"),
    ({"k": 1.234}, "k", "a number from 0 to 10 with at most two decimals"),
    ({"k": "1"}, "k", "a number from 0 to 10 with at most two decimals"),
    ({"k": True}, "k", "a number from 0 to 10 with at most two decimals"),
    ({"decay": 1}, "decay", "unknown field; allowed fields are half_life_hours, k, window_days"),
]


@pytest.mark.parametrize(("block", "key", "reason"), BAD)
def test_out_of_bounds_values_are_refused_at_the_field_and_nothing_is_written(carved, block, key, reason):
    before = store.show("NODE_POOL", POOL)
    with pytest.raises(ConfigError) as refused:
        set_block(block)
    assert refused.value.field == f"time_based_fair_share.{key}" and reason in refused.value.reason
    assert refused.value.value == ("decay" if key == "decay" else block[key])  # an unknown key names itself
    assert store.show("NODE_POOL", POOL) == before


@pytest.mark.parametrize(("block", "key", "reason"), [BAD[1], BAD[5], BAD[7]])
def test_the_config_api_refuses_them_with_field_value_and_reason(carved, block, key, reason):
    client = APIClient()
    client.force_authenticate(UserFactory(username="root", is_superuser=True, is_staff=True))
    body = {**store.show("NODE_POOL", POOL), "time_based_fair_share": block}
    revisions = Revision.objects.count()
    response = client.put(f"/api/configs/node_pool/{POOL}", {"configs": body}, format="json")
    assert response.status_code == 400, response.content[:300]
    error = response.json()
    assert error["field"] == f"time_based_fair_share.{key}" and reason in error["reason"]
    assert error["value"] == next(iter(block.values()))
    assert Revision.objects.count() == revisions
    body["time_based_fair_share"] = {"k": 0.5}
    assert client.put(f"/api/configs/node_pool/{POOL}", {"configs": body}, format="json").status_code == 200
    assert store.show("NODE_POOL", POOL)["time_based_fair_share"]["k"] == 0.5


def test_the_cli_refuses_them_naming_the_field(carved, tmp_path):
    path = tmp_path / "h100.json"
    path.write_text(json.dumps({**store.show("NODE_POOL", POOL), "time_based_fair_share": {"window_days": 365}}))
    with pytest.raises(ConfigError) as refused:
        call_command("config", "update", "NODE_POOL", POOL, "--file", str(path), stdout=StringIO())
    assert "time_based_fair_share.window_days" in str(refused.value) and "from 1 to 90" in str(refused.value)
    assert store.show("NODE_POOL", POOL)["time_based_fair_share"] is None


def test_a_window_longer_than_the_raw_usage_record_keeps_is_refused_at_every_door(carved, settings, tmp_path):
    """Usage is read from the raw record (running attempts, exact decay): a window past its retention would read
    less than it says. Refused at the field, naming the retention; a window of exactly the retention is taken."""
    settings.USAGE_RAW_RETENTION_DAYS = 30
    reason = "the raw usage record keeps 30 days (USAGE_RAW_RETENTION_DAYS)"
    with pytest.raises(ConfigError) as refused:
        set_block({"window_days": 31})
    assert (refused.value.field, refused.value.value) == ("time_based_fair_share.window_days", 31)
    assert "must be at most 30 days" in refused.value.reason and reason in refused.value.reason
    client = APIClient()
    client.force_authenticate(UserFactory(username="root", is_superuser=True, is_staff=True))
    body = {**store.show("NODE_POOL", POOL), "time_based_fair_share": {"window_days": 45}}
    response = client.put(f"/api/configs/node_pool/{POOL}", {"configs": body}, format="json")
    assert response.status_code == 400 and response.json()["value"] == 45 and reason in response.json()["reason"]
    assert store.show("NODE_POOL", POOL)["time_based_fair_share"] is None
    assert set_block({"window_days": 30}) == {"window_days": 30, "half_life_hours": None, "k": 1.0}


def test_a_retention_shortened_under_a_window_counts_what_is_kept_and_the_page_says_so(
    contended, settings, admin_client
):
    """The window was set when the record kept 90 days; the portal restarted keeping 30. Usage is what the record
    still holds, over what the node pool could have given in those 30 days, and every door says so."""
    set_block({"window_days": 60})
    used("speech", 16, days_ago=1, hours=72)
    settings.USAGE_RAW_RETENTION_DAYS = 30
    url = reverse("admin:quotas_nodepool_fairshare", args=[NodePool.objects.get(name=POOL).pk])
    html = admin_client.get(url).content.decode()
    section = html[html.index('id="usage-weights"') :]
    said = (
        "usage over the last 30 days (the window is 60 days, but the raw usage record keeps 30:"
        " USAGE_RAW_RETENTION_DAYS), no decay, k = 1"
    )
    assert said in section
    admin = APIClient()
    admin.force_authenticate(UserFactory(username="root", is_superuser=True, is_staff=True))
    block = admin.get(f"/api/quotas/node_pools/{POOL}").json()["time_based_fair_share"]
    assert (block["window_days"], block["counted_days"]) == (60, 30)
    rows = {(row["kind"], row["name"]): row for row in block["weights"]["gpu"]}
    assert rows[("project", "speech")]["usage"] == pytest.approx(16 * 72 / (32 * 30 * 24), abs=1e-4)
    out = StringIO()
    call_command("quota", "show", POOL, stdout=out)
    assert f"time-based fair share: {said}" in out.getvalue()


# --- admission, the page, quota show -------------------------------------------------------------------


def test_a_heavy_past_user_gets_less_of_the_surplus_and_deserved_never_moves(contended):
    assert shares() == {"vision": 16, "speech": 16}  # 4 + 4 deserved, the 24 left split evenly
    used("speech", 16, days_ago=1, hours=72)  # 16 × 72 GPU-h of 32 × 168 possible: usage 0.214
    assert shares() == {"vision": 16, "speech": 16}  # the block is off: usage does not count
    set_block({"window_days": 7})
    # speech: 0.5 + (0.5 − 0.214) = 0.786, vision 1.0 → 24 × 0.44 = 10.6 and 13.4 above the 4 deserved each
    assert shares() == {"vision": 17, "speech": 15}
    result = state(NodePool.objects.get(name=POOL)).result
    assert all(result.shares["gpu"].projects[n].deserved_part == 4 for n in ("vision", "speech"))
    used("speech", 16, days_ago=8, hours=72)  # outside the window: nothing more
    assert shares() == {"vision": 17, "speech": 15}
    set_block({"window_days": 7, "k": 3})  # a stronger k: speech 0.5 + 3 × 0.286 = 1.36 against vision's 2.0
    assert shares() == {"vision": 18, "speech": 14}


def test_with_a_half_life_the_same_usage_further_back_weighs_less(contended):
    set_block({"window_days": 7, "half_life_hours": 24})
    attempt = used("speech", 32, days_ago=0, hours=24)
    recent = shares()
    assert recent["speech"] < 16
    for _ in range(3):  # 2, 4, then 6 days back
        back = timedelta(days=2)
        type(attempt).objects.filter(pk=attempt.pk).update(
            started_at=attempt.started_at - back, ended_at=attempt.ended_at - back
        )
        attempt.refresh_from_db()
        older = shares()
        assert older["speech"] >= recent["speech"] and older["vision"] <= recent["vision"]
        recent = older
    assert shares() == {"vision": 16, "speech": 16}  # six days back, at 1/64, it no longer moves a GPU


def test_running_attempts_count_up_to_now(contended):
    set_block({"window_days": 1})
    twelve_hours_ago = timezone.now() - timedelta(hours=12)
    attempt_row(project="speech", node_pool=POOL, gpu=32, started_at=twelve_hours_ago, ended_at=None)
    # usage 0.5: speech 0.5 + 0 = 0.5, vision 1.0 → 8 and 16 of the 24
    assert shares() == {"vision": 20, "speech": 12}


def test_the_fair_share_page_and_quota_show_say_the_weights_before_and_after(contended, admin_client):
    url = reverse("admin:quotas_nodepool_fairshare", args=[NodePool.objects.get(name=POOL).pk])
    assert 'id="usage-weights"' not in admin_client.get(url).content.decode()
    set_block({"window_days": 7, "half_life_hours": 48, "k": 1.5})
    used("speech", 16, days_ago=0, hours=24)
    html = admin_client.get(url).content.decode()
    section = html[html.index('id="usage-weights"') :]
    assert "usage over the last 7 days, half-life 48 h, k = 1.5" in section
    speech = section[section.index('data-team="project:speech"') :]
    speech = speech[: speech.index("</tr>")]
    assert "<td>0.500</td>" in speech and "%" in speech
    vision = section[section.index('data-team="project:vision"') :]
    assert "<td>0.0%</td><td>0.500</td><td>1.250</td>" in vision[: vision.index("</tr>")]  # 0.5 + 1.5 × 0.5

    out = StringIO()
    call_command("quota", "show", POOL, stdout=out)
    shown = out.getvalue()
    assert "time-based fair share: usage over the last 7 days, half-life 48 h, k = 1.5" in shown
    assert any(
        line.split()[:3] == ["vision", "project", "gpu"] and line.endswith("1.250") for line in shown.splitlines()
    )
    out = StringIO()
    call_command("quota", "show", POOL, "--format", "json", stdout=out)
    block = json.loads(out.getvalue())["time_based_fair_share"]
    assert (block["window_days"], block["half_life_hours"], block["k"]) == (7, 48, 1.5)
    rows = {(row["kind"], row["name"]): row for row in block["weights"]["gpu"]}
    assert rows[("project", "vision")]["weight_after"] == 1.25 and rows[("project", "speech")]["usage"] > 0
    assert rows[("department", "research")]["usage"] == rows[("project", "speech")]["usage"]


def test_the_page_takes_constant_queries_with_the_block_set(contended, admin_client):
    set_block({"window_days": 7, "half_life_hours": 24})
    url = reverse("admin:quotas_nodepool_fairshare", args=[NodePool.objects.get(name=POOL).pk])

    def grow():
        for project in ("vision", "speech", "infer", "someone-gone"):
            used(project, 2, days_ago=1, hours=3)

    assert_constant_queries(lambda: admin_client.get(url), grow)


def test_the_node_pool_api_says_the_weights_of_the_teams_the_caller_may_see(contended):
    set_block({"window_days": 7})
    used("speech", 16, days_ago=1, hours=72)
    admin = APIClient()
    admin.force_authenticate(UserFactory(username="root", is_superuser=True, is_staff=True))
    block = admin.get(f"/api/quotas/node_pools/{POOL}").json()["time_based_fair_share"]
    assert (block["window_days"], block["half_life_hours"], block["k"]) == (7, None, 1.0)
    rows = {(row["kind"], row["name"]): row for row in block["weights"]["gpu"]}
    assert {("department", "research"), ("department", "ops"), ("project", "speech")} <= rows.keys()
    assert rows[("project", "speech")]["usage"] == pytest.approx(16 * 72 / (32 * 168), abs=1e-4)
    assert rows[("project", "speech")]["weight_after"] == pytest.approx(0.5 + 0.5 - 16 * 72 / (32 * 168), abs=1e-4)
    roles.ensure_builtin_roles()
    rita = UserFactory(username="rita")
    roles.update_user_roles(rita, add=["osmo-user", contended["vision"].role.name], actor=CLI)
    researcher = APIClient()
    researcher.force_authenticate(rita)
    shown = researcher.get(f"/api/quotas/node_pools/{POOL}").json()["time_based_fair_share"]["weights"]["gpu"]
    assert {row["name"] for row in shown} <= {"research", "vision"} and "vision" in {row["name"] for row in shown}
