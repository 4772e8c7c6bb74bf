"""The audit trail of config writes (every door), and `manage.py access explain`."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command

from access.models import AuditEvent
from configs import store
from configs.errors import ConfigError
from tests.access.conftest import ACTOR, allow, api, deny, holder, role
from tests.factories import PoolFactory

pytestmark = pytest.mark.django_db


def test_config_writes_are_audited_with_door_and_address():
    store.apply("BACKEND", "c1", {}, ACTOR)
    admin = holder("osmo-admin", username="ada")
    client = api(admin)
    assert client.put("/api/configs/pod_template/t1", {"configs": {"spec": {}}}, format="json").status_code == 200
    assert client.delete("/api/configs/pod_template/t1").status_code == 200
    events = list(AuditEvent.objects.filter(action__startswith="config.").order_by("id"))
    assert [(e.action, e.target, e.actor_name, e.source, e.remote_addr) for e in events] == [
        ("config.update", "NODE_POOL c1-default", "system", "system", None),  # every backend's Default (quotas)
        ("config.update", "BACKEND c1", "tester", "cli", None),
        ("config.update", "POD_TEMPLATE t1", "ada", "api", "10.1.2.3"),
        ("config.delete", "POD_TEMPLATE t1", "ada", "api", "10.1.2.3"),
    ]
    assert events[2].actor == admin and events[2].detail == {"config_type": "POD_TEMPLATE", "name": "t1", "revision": 1}


def test_batch_writes_audit_each_object_and_failed_writes_leave_nothing():
    store.apply_many("POD_TEMPLATE", {"a": {"spec": {}}, "b": {"spec": {}}}, ACTOR)
    assert AuditEvent.objects.filter(action="config.update").count() == 2
    with pytest.raises(ConfigError):
        store.apply_many("POD_TEMPLATE", {"c": {"spec": {}}, "d": {"spek": {}}}, ACTOR)
    assert AuditEvent.objects.filter(action="config.update").count() == 2


def test_unchanged_writes_are_not_audited():
    store.apply("POD_TEMPLATE", "a", {"spec": {}}, ACTOR)
    store.apply("POD_TEMPLATE", "a", {"spec": {}}, ACTOR)
    assert AuditEvent.objects.filter(action="config.update").count() == 1


def explain(*args) -> dict:
    out = StringIO()
    call_command("access", "explain", *args, "--format", "json", stdout=out)
    return json.loads(out.getvalue())


def test_explain_cli_names_the_allowing_role_and_policy(team_role):
    holder("osmo-team", username="ted")
    assert explain("ted", "team-gpu-pool") == {
        "allowed": True,
        "because": [
            "role osmo-team policy #1 (Allow workflow:* on pool/team*) allows workflow:Create on pool/team-gpu-pool"
        ],
    }
    assert explain("ted", "myteam-cluster-01") == {
        "allowed": False,
        "because": ["no policy of roles osmo-default, osmo-team allows workflow:Create on pool/myteam-cluster-01"],
    }


def test_explain_cli_names_the_denying_policy():
    role("team", allow(["workflow:*"], ["pool/*"]), deny(["workflow:Delete"], ["pool/prod*"]))
    holder("team", username="dee")
    assert explain("dee", "prod-a", "--action", "workflow:Delete") == {
        "allowed": False,
        "because": ["role team policy #2 (Deny workflow:Delete on pool/prod*) denies workflow:Delete on pool/prod-a"],
    }


def test_explain_cli_text_and_errors(team_role):
    holder("osmo-team", username="tim")
    PoolFactory(name="team-a")
    out = StringIO()
    call_command("access", "explain", "tim", "team-a", stdout=out)
    assert out.getvalue().startswith("ALLOWED: tim workflow:Create on pool/team-a\n  because role osmo-team")
    with pytest.raises(ConfigError) as error:
        call_command("access", "explain", "tim", "team-a", "--action", "create", stdout=StringIO())
    assert error.value.field == "--action"
    with pytest.raises(Exception, match="no user named"):
        call_command("access", "explain", "nobody", "team-a", stdout=StringIO())
