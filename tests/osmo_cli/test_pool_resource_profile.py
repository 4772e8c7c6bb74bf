"""`osmo profile set|list`, `osmo pool list [-p ...] [-m free]` and `osmo resource list [--pool P] [--all]`
played against gunicorn as OSMO's client 6.4 sends them (NVIDIA/OSMO src/cli/profile.py, pool.py,
resources.py), every field the CLI reads asserted, with where it reads it.

World (tests/clusters/conftest.py, the kubesim demo fleet, inventory synced in this process): pool train =
4 h100 nodes + 2 a100 nodes (8 GPUs each), research = the same 4 h100 nodes, batch = cpu nodes; one
running 8-GPU pod on h100-node-0. The user holds osmo-user and osmo-train (OSMO's generated role: pools
starting with `train`).
"""

from __future__ import annotations

import math
import re

import pytest
from django.contrib.auth.models import User

from access.services import roles
from clusters import inventory
from notifications.models import Notification
from pools.models import Pool
from tests.clusters.conftest import CLI, H100_NODES, backend, kube_server, pools_config, running_pod  # noqa: F401
from tests.factories import TaskFactory, WorkflowFactory
from tests.notifications.receivers import smtp_server
from tests.osmo_cli.client import OsmoUserError
from workflows.lifecycle.settle import fail_task

# src/lib/utils/common.py ALLOCATABLE_RESOURCES_LABELS: the resource columns, in this order
RESOURCE_NAMES = ("storage", "cpu", "memory", "gpu")
BINARY_POWERS = {"B": -3, "Ki": -2, "K": -2, "KiB": -2, "Mi": -1, "M": -1, "MiB": -1, "G": 0, "Gi": 0, "GiB": 0}


@pytest.fixture
def world(pools_config, backend, kube_server, transactional_db):  # noqa: F811
    kube_server.emulator.load("pods", [running_pod("w", "h100-node-0", gpu=8, workload=True)])
    inventory.sync_backend(backend.pk)
    roles.set_pool_role("osmo-train", CLI)


@pytest.fixture
def cli(world, osmo_user, osmo_login):
    return osmo_login(osmo_user("osmo-user", "osmo-train", username="ana"))


def gib(text: str) -> float:
    """common.convert_fields → convert_resource_value_str: memory and storage are `<number><unit>` strings
    (RESOURCE_REGEX; no unit = bytes), converted to GiB; anything else raises in the CLI."""
    match = re.fullmatch(r"(?P<size>\d+(?:\.\d+)?)(?P<unit>[a-zA-Z]*)", str(text))
    assert match, f"the CLI cannot convert {text!r}"
    return float(match["size"]) * 1024.0 ** BINARY_POWERS[match["unit"] or "B"]


def cli_amount(name: str, fields: dict) -> float:
    """common.convert_fields: cpu and gpu with float(fields.get(key, 0)); memory and storage fields[key]."""
    return float(fields.get(name, 0)) if name in ("cpu", "gpu") else gib(fields[name])


def resource_rows(answer: dict, free: bool) -> list[list[str]]:
    """What src/cli/resources.py _cluster_resources reads to build its table: one row per pool/platform of
    each resource (exposed_fields['pool/platform'], 'node'; resource_type), each column allocatable from
    platform_allocatable_fields[pool][platform] (else allocatable_fields) and usage from usage_fields
    (common.convert_allocatable_request_fields), request rounded up and allocatable down (round_resources)."""
    rows = []
    for resource in answer["resources"]:
        exposed = resource["exposed_fields"]
        by_pool: dict[str, list[str]] = {}
        for pair in exposed.get("pool/platform", []):
            by_pool.setdefault(pair.split("/")[0], []).append(pair.split("/")[1])
        for pool_index, (pool, platforms) in enumerate(by_pool.items()):
            for platform_index, platform in enumerate(platforms):
                first = pool_index == 0 and platform_index == 0
                row = [str(exposed.get("node", "-")) if first else "", pool, platform]
                row.append(resource["resource_type"] if first else "")
                allocatable_fields = resource.get("platform_allocatable_fields", {}).get(pool, {}).get(platform)
                for name in RESOURCE_NAMES:
                    allocatable = cli_amount(name, allocatable_fields or resource["allocatable_fields"])
                    request = cli_amount(name, resource["usage_fields"])
                    whole = math.floor(allocatable)
                    used = min(math.ceil(request), whole)
                    row.append("0" if allocatable <= 0 else (f"{whole - used}" if free else f"{used}/{whole}"))
                rows.append(row)
    return rows


def pool_rows(answer: dict, free: bool) -> list[list[str]]:
    """What src/cli/pool.py _list_pool reads: node_sets[].pools[] name, description, status and
    resource_usage (quota_free, total_free | quota_used, quota_limit, total_usage, total_capacity), the
    node set's capacity or free marked "(shared)" after its first pool; then resource_sum's figures."""
    rows = []
    for node_set in answer["node_sets"]:
        for index, pool in enumerate(node_set["pools"]):
            usage = pool["resource_usage"]
            shared = "" if index == 0 else " (shared)"
            row = [pool["name"], pool["description"], pool["status"]]
            if free:
                row += [usage["quota_free"], f"{usage['total_free']}{shared}"]
            else:
                row += [
                    usage["quota_used"],
                    usage["quota_limit"],
                    usage["total_usage"],
                    f"{usage['total_capacity']}{shared}",
                ]
            rows.append(row)
    total = answer["resource_sum"]
    keys = ("quota_free", "total_free") if free else ("quota_used", "quota_limit", "total_usage", "total_capacity")
    rows.append(["", "", ""] + [str(total[key]) for key in keys])
    return rows


def test_osmo_profile_set_pool_then_list(cli):
    # src/cli/profile.py _run_setting_set: POST api/profile/settings, payload {'pool': value}, params {};
    # the answer is not read ("Profile Set"), so it only has to be a 200
    cli.request("POST", "api/profile/settings", payload={"pool": "train"}, params={})
    # src/cli/profile.py _run_setting_list: GET api/profile/settings; reads result['profile'] username,
    # email_notification, slack_notification, bucket, pool, and result['pools'] ("accessible")
    result = cli.request("GET", "api/profile/settings")
    assert result["profile"]["username"] == "ana"
    assert result["profile"]["pool"] == "train"
    assert result["profile"]["email_notification"] is False and result["profile"]["slack_notification"] is False
    assert result["profile"]["bucket"] is None
    assert result["pools"] == ["train"]
    # src/cli/profile.py _run_setting_list, logged in with a token (using_osmo_token): GET
    # api/auth/access_token params {'access_token': <the token>}; reads token_name, expires_at (split at 'T',
    # parsed as %Y-%m-%d) and roles (joined with ', ')
    token = cli.request("GET", "api/auth/access_token", params={"access_token": cli.api_token})
    assert isinstance(token, dict) and token["token_name"].startswith("token-")
    assert len(token["expires_at"].split("T")[0].split("-")) == 3 and isinstance(token["roles"], list)
    with pytest.raises(OsmoUserError) as unknown:
        cli.request("GET", "api/auth/access_token", params={"access_token": "pp_not-a-token-of-anyone"})
    assert unknown.value.status_code == 401 and unknown.value.payload["error_code"] == "USER"
    # src/cli/profile.py: `osmo profile set notifications email true` → {'email_notification': True}
    cli.request("POST", "api/profile/settings", payload={"email_notification": True}, params={})
    assert cli.request("GET", "api/profile/settings")["profile"] == {
        "username": "ana",
        "email_notification": True,
        "slack_notification": False,
        "bucket": None,
        "pool": "train",
    }


def test_osmo_profile_set_notifications_then_a_finished_workflow_is_emailed(cli, settings):
    # src/cli/profile.py _run_setting_set: `notifications email|slack [true|false]` → POST api/profile/settings
    # with {'email_notification': bool} or {'slack_notification': bool}, params {}; "true" or nothing is True
    for payload in ({"email_notification": True}, {"slack_notification": True}, {"slack_notification": False}):
        cli.request("POST", "api/profile/settings", payload=payload, params={})
    # _run_setting_list prints profile email_notification and slack_notification under "notifications:"
    profile = cli.request("GET", "api/profile/settings")["profile"]
    assert (profile["email_notification"], profile["slack_notification"]) == (True, False)
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST = "127.0.0.1"
    with smtp_server() as (port, inbox):
        settings.EMAIL_PORT = port
        workflow = WorkflowFactory(pool=Pool.objects.get(name="train"), submitted_by=User.objects.get(username="ana"))
        task = TaskFactory(workflow=workflow, status="RUNNING")
        assert fail_task(task, "FAILED", "exit code 1", kind="EXITED")  # commits: the receiver runs now
        [mail] = inbox.mails
    assert mail.recipients == ["ana@example.com"]
    assert mail.message["Subject"] == f"Workflow {workflow.workflow_id} failed"
    assert Notification.objects.get(workflow=workflow).status == "sent"


def test_osmo_profile_set_pool_refusals_reach_the_cli_as_messages(cli):
    for pool, status, words in (("ghost", 404, "no pool named 'ghost'"), ("research", 403, "default pool")):
        with pytest.raises(OsmoUserError) as refused:
            cli.request("POST", "api/profile/settings", payload={"pool": pool}, params={})
        # client.py handle_response: a 4xx's `message` is printed, exit 1
        assert refused.value.status_code == status and words in refused.value.message
        assert refused.value.payload["error_code"] in ("USER", "NOTFOUND")


def test_osmo_pool_list(cli):
    train = Pool.objects.get(name="train")
    for priority, gpus in (("NORMAL", 4), ("LOW", 2)):
        pod = {"spec": {"containers": [{"name": "main", "resources": {"limits": {"nvidia.com/gpu": gpus}}}]}}
        TaskFactory(workflow=WorkflowFactory(pool=train, priority=priority), status="RUNNING", pod=pod)
    # src/cli/pool.py _list_pool → list_pools(quota=True): GET '/api/pool_quota' (a leading slash: the URL is
    # {url}//api/pool_quota), params {'pools': args.pool}; with no -p, [] (requests sends no parameter)
    answer = cli.request("GET", "/api/pool_quota", params={"pools": []})
    # every pool, as OSMO (all_pools defaults to true): one node set each; research shares train's h100 nodes
    # (the 8-GPU pod) but not its a100 ones
    assert pool_rows(answer, free=False) == [
        ["batch", "", "ONLINE", "0", "0", "0", "0"],
        ["research", "", "ONLINE", "0", "32", "0", "32"],
        ["train", "", "ONLINE", "4", "48", "6", "48"],  # quota used (NORMAL only) / limit / total usage / capacity
        ["", "", "", "4", "80", "6", "48"],  # each node once in the capacity
    ]
    assert pool_rows(answer, free=True) == [
        ["batch", "", "ONLINE", "0", "0"],
        ["research", "", "ONLINE", "32", "24"],
        ["train", "", "ONLINE", "44", "40"],
        ["", "", "", "76", "40"],
    ]
    # pool.list_pools (`osmo resource list`'s check) also lists every pool, the caller's marked accessible
    pools = cli.request("GET", "/api/pool", params={})["pools"]
    accessible = {name: row["accessible"] for name, row in pools.items()}
    assert accessible == {"batch": False, "research": False, "train": True}

    # `osmo pool list -p train research`: pools repeated; research shares train's h100 nodes but not its
    # a100 ones, so it is a node set of its own
    answer = cli.request("GET", "/api/pool_quota", params={"pools": ["train", "research"]})
    assert [[pool["name"] for pool in node_set["pools"]] for node_set in answer["node_sets"]] == [
        ["research"],
        ["train"],
    ]
    assert pool_rows(answer, free=True)[-1] == ["", "", "", str(32 + 44), "40"]  # each node once
    # `osmo pool list -p ghost`: no node sets, the CLI prints "Pools ghost not found"
    assert cli.request("GET", "/api/pool_quota", params={"pools": ["ghost"]})["node_sets"] == []


def test_osmo_resource_list_with_the_default_pool(cli):
    # src/cli/resources.py _cluster_resources: no --pool → pool.fetch_default_pool: GET api/profile/settings,
    # reads ['profile']['pool']; none set → the CLI stops with "No default pool set"
    assert cli.request("GET", "api/profile/settings")["profile"]["pool"] is None
    cli.request("POST", "api/profile/settings", payload={"pool": "train"}, params={})
    default = cli.request("GET", "api/profile/settings")["profile"]["pool"]
    assert default == "train"
    # then pool.list_pools(): GET '/api/pool' (no params), each pool must be in ['pools'].keys()
    assert default in cli.request("GET", "/api/pool", params={})["pools"]
    # then fetch_resources: GET api/resources, params {'pools': [...], 'all_pools': args.all}
    answer = cli.request("GET", "api/resources", params={"pools": [default], "all_pools": False})
    rows = resource_rows(answer, free=False)
    # columns: Node, Pool, Platform, Type, Storage [Gi], CPU [#], Memory [Gi], GPU [#]
    by_node = {row[0]: row for row in rows if row[0]}
    assert set(by_node) == set(H100_NODES) | {"a100-node-0", "a100-node-1"}
    assert {row[1] for row in rows} == {"train"}  # only the pool asked for, as OSMO
    h100 = by_node["h100-node-0"]
    assert h100[1:4] == ["train", "h100", "SHARED"]  # train and research share it
    assert h100[7] == "8/8"  # the running 8-GPU pod
    assert by_node["h100-node-1"][7] == "0/8" and by_node["a100-node-0"][3] == "RESERVED"
    storage, cpu, memory = (h100[4], h100[5], h100[6])
    assert all(re.fullmatch(r"\d+/\d+", value) for value in (storage, cpu, memory))
    free_rows = {row[0]: row for row in resource_rows(answer, free=True) if row[0]}
    assert free_rows["h100-node-0"][7] == "0" and free_rows["h100-node-1"][7] == "8"

    # `osmo resource list --all`: all_pools=True → every pool's nodes
    every = cli.request("GET", "api/resources", params={"pools": [default], "all_pools": True})
    assert {row[1] for row in resource_rows(every, free=False)} == {"train", "research", "batch"}
    # `--platform a100` (params['platforms'])
    a100 = cli.request("GET", "api/resources", params={"pools": ["train"], "all_pools": False, "platforms": ["a100"]})
    assert {row[0] for row in resource_rows(a100, free=False)} == {"a100-node-0", "a100-node-1"}


def test_osmo_resource_list_of_a_pool_the_cli_cannot_find(cli):
    # `osmo resource list --pool ghost`: the CLI checks GET /api/pool first and prints
    # "Pool ghost does not exist!"; the portal's own answer for the resources is a clean 404
    assert "ghost" not in cli.request("GET", "/api/pool", params={})["pools"]
    with pytest.raises(OsmoUserError) as refused:
        cli.request("GET", "api/resources", params={"pools": ["ghost"], "all_pools": False})
    assert refused.value.status_code == 404 and refused.value.message.endswith("no pool named 'ghost'")
