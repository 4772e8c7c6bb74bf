"""`osmo config show|update|history|list|rollback|diff|tag|delete|set` for POOL, POD_TEMPLATE,
RESOURCE_VALIDATION, BACKEND and ROLE, played against gunicorn as OSMO's client 6.4 sends them.

Every request below is the one NVIDIA/OSMO `src/cli/config.py` builds (function named in the comment), and
every field asserted is one that function reads. `fetch_data` and `deep_diff` restate, in our own words,
what `_fetch_data_from_config` and `deep_diff` in that file do to the answers, since the CLI's edits
depend on them.
"""

from __future__ import annotations

import copy
import datetime

import pytest

from configs import store
from configs.revisions import Actor
from pools.management.commands.seed_demo import demo_documents
from tests.osmo_cli.client import OsmoUserError

pytestmark = pytest.mark.heavy

SEEDER = Actor(name="seeder", source="cli")
# OSMO's types, and the portal's NODE_POOL (every backend's Default node pool has a revision: docs/quotas.md) and
# MACHINE_POOL (the demo's ROSA backend has two)
TYPES = ("POOL", "POD_TEMPLATE", "RESOURCE_VALIDATION", "BACKEND", "ROLE", "NODE_POOL", "MACHINE_POOL")


@pytest.fixture
def admin(osmo_user, osmo_login):
    """`osmo login` as an administrator, over the demo backends, templates, validations and pools."""
    cli = osmo_login(osmo_user("osmo-admin", username="cfg-admin"))
    for config_type, documents in demo_documents():
        store.apply_many(config_type, documents, SEEDER)
    return cli


def fetch_data(config_info):
    """config.py _fetch_data_from_config: unwrap `backends`, `pools` (and `buckets`), then index a list of
    named objects by name."""
    for key in ("backends", "pools", "buckets"):
        if isinstance(config_info, dict) and key in config_info:
            config_info = config_info[key]
    named = isinstance(config_info, list) and config_info and isinstance(config_info[0], dict)
    if named and "name" in config_info[0]:
        config_info = {item["name"]: item for item in config_info}
    return config_info


def deep_diff(current, updated):
    """config.py deep_diff: None when equal; for two dicts only the keys of `updated` that differ (removed
    keys are not sent); anything else (lists included) is `updated` whole."""
    if current == updated:
        return None
    if isinstance(current, dict) and isinstance(updated, dict):
        changed = {}
        for key, value in updated.items():
            sub = deep_diff(current[key], value) if key in current else value
            if sub is not None:
                changed[key] = sub
        return changed or None
    return updated


def cli_time(created_at: str) -> datetime.datetime:
    """common.py convert_utc_datetime_to_user_zone: `T` replaced by a space, then one of three formats."""
    for fmt in ("%Y-%m-%d %H:%M:%S.%f", "%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M"):
        try:
            return datetime.datetime.strptime(created_at.replace("T", " "), fmt)
        except ValueError:
            continue
    raise AssertionError(f"the CLI cannot read created_at {created_at!r} (OSMOError: Invalid time format)")


def history(cli, config_type=None, **params):
    """config.py _run_history_command: omit_data always; offset/count/order defaults 0/20/asc, order
    upper-cased; `config_types` a one-item list (requests sends `config_types=POOL`)."""
    query = {"omit_data": True, "offset": 0, "limit": 20, "order": "ASC", **params}
    if config_type:
        query["config_types"] = [config_type]
    result = cli.request("GET", "api/configs/history", params=query)
    for row in result["configs"]:  # the table's columns, as the CLI builds them
        assert row["config_type"] in TYPES
        assert isinstance(row["name"], str)  # `config['name'] or '-'`
        assert isinstance(row["revision"], int) and isinstance(row["username"], str)
        cli_time(row["created_at"])
        assert isinstance(row["description"], str)
        assert row["tags"] is None or isinstance(row["tags"], list)  # `', '.join(sorted(config['tags']))`
    return result["configs"]


def latest_revision(cli, config_type: str) -> int:
    """config.py _run_tag_command / _run_diff_command get_current_revision: DESC, limit 1, ['revision']."""
    params = {"config_types": [config_type], "order": "DESC", "limit": 1}
    return cli.request("GET", "api/configs/history", params=params)["configs"][0]["revision"]


# --- show -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("config_type", "name"),
    [
        ("POOL", "heterogeneous_pool"),
        ("POD_TEMPLATE", "default_ctrl"),
        ("RESOURCE_VALIDATION", "default_cpu"),
        ("BACKEND", "gpu-cluster-01"),
        ("ROLE", "osmo-user"),
    ],
)
def test_show_a_type_and_one_named_object(admin, config_type, name):
    # config.py _get_current_config: GET api/configs/<type lower>; _run_show_command prints it, or with
    # names indexes fetch_data(result) by each name
    whole = admin.request("GET", f"api/configs/{config_type.lower()}")
    shown = fetch_data(whole)[name]
    expected = store.show(config_type, name)
    assert shown == ({"name": name, **expected} if config_type == "BACKEND" else expected)
    if config_type == "POOL":
        assert set(whole) == {"pools"}  # config.py _run_update_command: `diff = diff['pools']`
    if config_type == "BACKEND":
        assert [b["name"] for b in whole["backends"]] == sorted(b["name"] for b in whole["backends"])
    if config_type == "ROLE":
        assert isinstance(whole, list) and all("name" in role for role in whole)


def test_show_an_older_revision(admin):
    store.apply("POOL", "heterogeneous_pool", {"backend": "default", "description": "changed"}, SEEDER)
    before = latest_revision(admin, "POOL") - 1
    # config.py _run_show_command with TYPE:N: history(config_types, omit_data False, revision) → configs[0].data
    params = {"config_types": ["POOL"], "omit_data": False, "revision": before}
    data = admin.request("GET", "api/configs/history", params=params)["configs"][0]["data"]
    assert fetch_data(data)["heterogeneous_pool"]["description"] == "Simulation and training pool"
    nothing = admin.request("GET", "api/configs/history", params={**params, "revision": 999})
    assert nothing["configs"] == []  # the CLI then says "No config found matching the specified criteria"


# --- update -----------------------------------------------------------------------------------------


def test_update_a_named_pool_patches_the_deep_diff(admin):
    # config.py UPDATE_CONFIG_API_MAPPING[POOL]['named'] = PATCH, payload key configs_dict
    current = fetch_data(admin.request("GET", "api/configs/pool"))["heterogeneous_pool"]
    edited = copy.deepcopy(current)
    edited["description"] = "edited in the CLI's editor"
    edited["platforms"]["a100_platform"]["description"] = "A100s"
    edited["common_resource_validations"] = ["default_cpu"]
    diff = deep_diff(current, edited)
    assert set(diff) == {"description", "platforms", "common_resource_validations"}
    payload = {"configs_dict": diff, "description": "tighter", "tags": ["cli"]}
    admin.request("PATCH", "api/configs/pool/heterogeneous_pool", payload=payload)  # CLI ignores the answer
    assert fetch_data(admin.request("GET", "api/configs/pool"))["heterogeneous_pool"] == edited
    row = history(admin, "POOL", order="DESC", limit=1)[0]
    assert (row["name"], row["description"], row["tags"], row["username"]) == (
        "heterogeneous_pool",
        "tighter",
        ["cli"],
        "cfg-admin",
    )


def test_update_all_pools_puts_the_map_without_its_wrapper(admin):
    # config.py: POOL 'default' = PUT configs; `diff = diff['pools']` before sending
    current = admin.request("GET", "api/configs/pool")
    edited = copy.deepcopy(current)
    edited["pools"]["robotics-inference"]["description"] = "whole-type edit"
    assert deep_diff(current, edited) is not None
    admin.request("PUT", "api/configs/pool", payload={"configs": edited["pools"], "description": "all"})
    assert admin.request("GET", "api/configs/pool") == edited


def test_update_pod_templates_whole_and_named(admin):
    # config.py POD_TEMPLATE: 'default' PUT configs (the whole map), 'named' PUT configs (the body)
    current = admin.request("GET", "api/configs/pod_template")
    edited = copy.deepcopy(current)
    edited["gpu_tolerations"] = {"spec": {"tolerations": [{"key": "gpu", "operator": "Exists"}]}}
    admin.request("PUT", "api/configs/pod_template", payload={"configs": edited, "description": "new"})
    assert admin.request("GET", "api/configs/pod_template") == edited
    body = {"spec": {"nodeSelector": {"kubernetes.io/arch": "arm64"}}}
    admin.request("PUT", "api/configs/pod_template/arm", payload={"configs": body, "description": "named"})
    assert fetch_data(admin.request("GET", "api/configs/pod_template"))["arm"] == body


def test_update_resource_validations_whole_and_named(admin):
    # config.py RESOURCE_VALIDATION: 'default' PUT with payload key configs_dict; 'named' PUT configs (a list)
    current = admin.request("GET", "api/configs/resource_validation")
    edited = copy.deepcopy(current)
    edited["default_cpu"][0]["assert_message"] = "too many CPUs"
    admin.request("PUT", "api/configs/resource_validation", payload={"configs_dict": edited, "description": "d"})
    assert admin.request("GET", "api/configs/resource_validation") == edited
    rules = [{"operator": "GT", "left_operand": "{{USER_GPU}}", "right_operand": "0", "assert_message": "a GPU"}]
    admin.request("PUT", "api/configs/resource_validation/needs_gpu", payload={"configs": rules, "description": "n"})
    assert fetch_data(admin.request("GET", "api/configs/resource_validation"))["needs_gpu"] == rules


def test_update_a_backend_posts_the_changed_fields_whole(admin):
    # config.py BACKEND 'named' = POST configs: the deep diff's keys, each sent with its whole new value
    current = fetch_data(admin.request("GET", "api/configs/backend"))["gpu-cluster-01"]
    edited = {**current, "description": "renamed in the editor", "dashboard_url": "https://dash.example"}
    diff = {key: edited[key] for key in deep_diff(current, edited)}
    admin.request("POST", "api/configs/backend/gpu-cluster-01", payload={"configs": diff, "description": "b"})
    assert fetch_data(admin.request("GET", "api/configs/backend"))["gpu-cluster-01"] == edited


def test_update_roles_whole_and_named(admin):
    # config.py ROLE: 'default' PUT configs (the list as shown), 'named' PUT configs (one role)
    roles = admin.request("GET", "api/configs/role")
    edited = copy.deepcopy(roles)
    user_role = next(role for role in edited if role["name"] == "osmo-user")
    user_role["description"] = "everyone signed in"
    admin.request("PUT", "api/configs/role", payload={"configs": edited, "description": "roles"})
    assert fetch_data(admin.request("GET", "api/configs/role"))["osmo-user"]["description"] == "everyone signed in"
    one = {**fetch_data(edited)["osmo-default"], "description": "anyone"}
    admin.request("PUT", "api/configs/role/osmo-default", payload={"configs": one, "description": "one"})
    assert fetch_data(admin.request("GET", "api/configs/role"))["osmo-default"]["description"] == "anyone"


def test_an_invalid_update_is_a_clean_user_error(admin):
    with pytest.raises(OsmoUserError) as refused:
        admin.request(
            "PATCH",
            "api/configs/pool/heterogeneous_pool",
            payload={"configs_dict": {"backend": "nowhere"}, "description": "bad"},
        )
    assert refused.value.status_code == 400 and "backend" in refused.value.message
    with pytest.raises(OsmoUserError) as missing:
        admin.request("PATCH", "api/configs/pool/ghost", payload={"configs_dict": {"description": "x"}})
    assert missing.value.status_code == 404
    # a 6.0 role action whose path lost its leading slash: OSMO refuses it; saving a role that grants nothing
    # and exiting 0 would be worse
    legacy = {"name": "osmo-habit", "description": "", "policies": [{"actions": ["http:api/pool/habit*:*"]}]}
    with pytest.raises(OsmoUserError) as bare_path:
        admin.request("PUT", "api/configs/role/osmo-habit", payload={"configs": legacy, "description": "habit"})
    assert bare_path.value.status_code == 400 and "did you mean '/api/pool/habit*'" in bare_path.value.message


# --- history and list -------------------------------------------------------------------------------


def test_history_fields_order_and_filters(admin):
    first = latest_revision(admin, "POOL")
    for text in ("one", "two", "three"):
        body = {"backend": "default", "description": text}
        admin.request("PUT", "api/configs/pool/h", payload={"configs": body, "description": text, "tags": [text]})
    rows = history(admin, "POOL", name="h")
    # the server's default and the CLI's: oldest first among the newest `limit`
    assert [(r["revision"], r["description"]) for r in rows] == [
        (first + 1, "one"),
        (first + 2, "two"),
        (first + 3, "three"),
    ]
    assert [r["revision"] for r in history(admin, "POOL", name="h", order="DESC")] == [first + 3, first + 2, first + 1]
    assert [r["description"] for r in history(admin, "POOL", name="h", limit=2)] == ["two", "three"]
    assert [r["description"] for r in history(admin, "POOL", name="h", limit=2, offset=1)] == ["one", "two"]
    assert [r["description"] for r in history(admin, "POOL", tags=["two"])] == ["two"]
    assert [r["description"] for r in history(admin, "POOL", revision=first + 1)] == ["one"]
    # --created-after/--created-before/--at-timestamp: common.convert_timezone gives UTC `%Y-%m-%dT%H:%M:%S`
    stamp = cli_time(rows[1]["created_at"]).strftime("%Y-%m-%dT%H:%M:%S")
    assert len(history(admin, "POOL", created_before="2000-01-01T00:00:00")) == 0
    assert "three" in [r["description"] for r in history(admin, "POOL", created_after=stamp)]
    assert all(r["config_type"] == "POOL" for r in history(admin, "POOL"))
    every = history(admin, limit=1000)
    assert {r["config_type"] for r in every} == {
        "POOL",
        "POD_TEMPLATE",
        "RESOURCE_VALIDATION",
        "BACKEND",
        "NODE_POOL",
        "MACHINE_POOL",  # the demo's ROSA backend has the seed's two machine pools
    }


def test_list_shows_each_types_current_revision(admin):
    # config.py _run_list_command: omit_data and at_timestamp=common.current_time(); reads config_type,
    # revision, username, created_at; sorts by config_type
    for now in (datetime.datetime.now(datetime.UTC), datetime.datetime.utcnow()):  # noqa: DTZ003
        rows = history(admin, at_timestamp=str(now))
        assert sorted(r["config_type"] for r in rows) == [
            "BACKEND",
            "MACHINE_POOL",
            "NODE_POOL",
            "POD_TEMPLATE",
            "POOL",
            "RESOURCE_VALIDATION",
        ]
        assert {r["config_type"]: r["revision"] for r in rows}["POOL"] == latest_revision(admin, "POOL")


# --- rollback, diff, tag, delete -----------------------------------------------------------------------


def test_rollback_restores_a_whole_type_as_a_new_revision(admin):
    before = latest_revision(admin, "POOL")
    admin.request("PUT", "api/configs/pool/extra", payload={"configs": {"backend": "default"}, "description": "+"})
    admin.request(
        "PATCH",
        "api/configs/pool/heterogeneous_pool",
        payload={"configs_dict": {"description": "drifted"}, "description": "drift"},
    )
    # config.py _run_rollback_command: POST {revision, config_type, description[, tags]}; prints the answer
    answer = admin.request(
        "POST",
        "api/configs/history/rollback",
        payload={"revision": before, "config_type": "POOL", "description": "undo", "tags": ["rollback"]},
    )
    assert answer["revision"] == before + 3
    pools = fetch_data(admin.request("GET", "api/configs/pool"))
    assert "extra" not in pools and pools["heterogeneous_pool"]["description"] == "Simulation and training pool"
    row = history(admin, "POOL", order="DESC", limit=1)[0]
    assert (row["revision"], row["description"], row["tags"]) == (
        before + 3,
        f"Roll back POOL to r{before}: undo",
        ["rollback"],
    )
    with pytest.raises(OsmoUserError) as refused:
        admin.request("POST", "api/configs/history/rollback", payload={"revision": 999, "config_type": "POOL"})
    assert refused.value.status_code == 404


def test_diff_tag_and_delete_a_revision(admin):
    first = latest_revision(admin, "BACKEND")
    admin.request("POST", "api/configs/backend/default", payload={"configs": {"description": "d2"}, "description": "x"})
    second = latest_revision(admin, "BACKEND")
    # config.py _run_diff_command: GET /api/configs/diff (leading slash: `//api/...`) → first_data, second_data
    params = {"config_type": "BACKEND", "first_revision": str(first), "second_revision": str(second)}
    answer = admin.request("GET", "/api/configs/diff", params=params)
    assert fetch_data(answer["second_data"])["default"]["description"] == "d2"
    assert fetch_data(answer["first_data"])["default"]["description"] != "d2"
    # config.py _run_tag_command: POST .../history/<type>/revision/<n>/tags {set_tags, delete_tags}
    admin.request("POST", f"api/configs/history/backend/revision/{second}/tags", payload={"set_tags": ["good"]})
    assert history(admin, "BACKEND", revision=second)[0]["tags"] == ["good"]
    # config.py _run_delete_command with TYPE:N: DELETE .../history/<type>/revision/<n>; not the current one
    admin.request("DELETE", f"api/configs/history/backend/revision/{first}")
    assert history(admin, "BACKEND", revision=first) == []
    with pytest.raises(OsmoUserError) as current:
        admin.request("DELETE", f"api/configs/history/backend/revision/{second}")
    assert current.value.status_code == 400 and "current revision" in current.value.message


@pytest.mark.parametrize(
    ("config_type", "name"),
    [
        ("POOL", "extra"),
        ("POD_TEMPLATE", "spare"),
        ("RESOURCE_VALIDATION", "spare"),
        ("BACKEND", "spare"),
        ("ROLE", "osmo-spare"),
    ],
)
def test_delete_a_named_config(admin, config_type, name):
    bodies = {
        "POOL": {"backend": "default"},
        "POD_TEMPLATE": {"spec": {}},
        "RESOURCE_VALIDATION": [],
        "BACKEND": {"description": "spare"},
        "ROLE": {"name": name, "description": "spare", "policies": []},
    }
    store.apply(config_type, name, bodies[config_type], SEEDER)
    # config.py _run_delete_command: DELETE api/configs/<type>/<name> {description[, tags]}
    admin.request("DELETE", f"api/configs/{config_type.lower()}/{name}", payload={"description": "bye"})
    assert name not in fetch_data(admin.request("GET", f"api/configs/{config_type.lower()}"))
    row = history(admin, config_type, order="DESC", limit=1)[0]
    assert (row["name"], row["description"]) == (name, "bye")


# --- set ----------------------------------------------------------------------------------------------


def test_set_a_pool_role(admin, osmo_user, osmo_login):
    # config.py _run_set_command + create_role(POOL): PUT api/configs/role/<name> {configs: Role.to_dict()};
    # role.py RolePolicy.to_dict sorts the actions, RoleAction.to_dict is {base, path, method}, the method
    # capitalised by the validator ('post' → 'Post')
    role = {
        "name": "osmo-heterogeneous_pool",
        "description": "Generated Role for pool heterogeneous_pool",
        "policies": [
            {
                "actions": [
                    {"base": "http", "path": "/api/pool/heterogeneous_pool*", "method": "Post"},
                    {"base": "http", "path": "/api/profile/*", "method": "*"},
                ]
            }
        ],
        "immutable": False,
    }
    admin.request("PUT", "api/configs/role/osmo-heterogeneous_pool", payload={"configs": role, "description": "s"})
    saved = fetch_data(admin.request("GET", "api/configs/role"))["osmo-heterogeneous_pool"]
    # read as OSMO 6.2+ reads a 6.0 path role: submitting to the pool, and the profile
    assert {"effect": "Allow", "actions": ["workflow:Create"], "resources": ["pool/heterogeneous_pool*"]} in saved[
        "policies"
    ]
    # the role works: a user holding it may use the pool (`GET api/pool` lists every pool, as OSMO, each marked
    # `accessible`; `all_pools=false` only those)
    outsider = osmo_login(osmo_user("osmo-user")).request("GET", "api/pool")["pools"]
    assert outsider["heterogeneous_pool"]["accessible"] is False
    member = osmo_login(osmo_user("osmo-user", "osmo-heterogeneous_pool"))
    assert member.request("GET", "api/pool")["pools"]["heterogeneous_pool"]["accessible"] is True
    assert "heterogeneous_pool" in member.request("GET", "api/pool", params={"all_pools": False})["pools"]
