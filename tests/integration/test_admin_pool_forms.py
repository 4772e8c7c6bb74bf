"""The pool and platform admin forms: key–value rows, ordered pickers, the default platform choice, the live
node match (counts and grouped reasons against a backend's nodes), and the confirmation a save asks for
when it would leave a platform matching no node (and the warning the pool shows then)."""

from __future__ import annotations

import json

import pytest
from django.test import Client
from django.urls import reverse

from configs import store
from configs.models import Revision
from pools.models import NodeMembership, Platform, Pool
from tests.factories import BackendFactory, NodeFactory, UserFactory
from tests.integration.conftest import CLI
from tests.queries import assert_constant_queries

GPU = "nvidia.com/gpu.product"
VARIABLES = {"USER_CPU": 1, "USER_GPU": 0, "USER_MEMORY": "1Gi", "USER_STORAGE": "1Gi", "TEAM": "1"}
TAINT = {"key": "dedicated", "value": "ml", "effect": "NoSchedule"}


@pytest.fixture
def cluster(db):
    return build_cluster()


def build_cluster() -> Pool:
    """Backend `gpu`: 3 H100 nodes, 1 tainted H100, 2 A100 and 1 unlabelled; templates that pick among them;
    pool `train` with platforms `h100` (3 nodes) and `any` (6: all but the tainted one)."""
    backend = BackendFactory(name="gpu")
    for index in range(3):
        NodeFactory(backend=backend, name=f"h100-{index}", labels={GPU: "H100"})
    NodeFactory(backend=backend, name="h100-tainted", labels={GPU: "H100"}, taints=[TAINT])
    for index in range(2):
        NodeFactory(backend=backend, name=f"a100-{index}", labels={GPU: "A100"})
    NodeFactory(backend=backend, name="plain", labels={})
    store.apply("POD_TEMPLATE", "h100", {"spec": {"nodeSelector": {GPU: "H100"}}}, CLI)
    store.apply("POD_TEMPLATE", "a100", {"spec": {"nodeSelector": {GPU: "A100"}}}, CLI)
    store.apply(
        "POD_TEMPLATE", "tolerate", {"spec": {"tolerations": [{"key": "dedicated", "operator": "Exists"}]}}, CLI
    )
    store.apply("POD_TEMPLATE", "nowhere", {"spec": {"nodeSelector": {"rack": "none"}}}, CLI)
    store.apply("RESOURCE_VALIDATION", "first", [], CLI)
    store.apply("RESOURCE_VALIDATION", "second", [], CLI)
    store.apply(
        "POOL",
        "train",
        {
            "backend": "gpu",
            "default_platform": "any",
            "common_default_variables": VARIABLES,
            "default_exit_actions": {"COMPLETE": "0", "RESCHEDULE": "1-10,16"},
            "platforms": {"h100": {"override_pod_template": ["h100"]}, "any": {}},
        },
        CLI,
    )
    return Pool.objects.get(name="train")


def pool_post(pool: Pool, **overrides) -> dict:
    """The pool page as a browser posts it: rows for mappings, names in order for lists."""
    data = {
        "name": pool.name,
        "description": pool.description,
        "backend": pool.backend_id,
        "default_platform": pool.default_platform,
        "common_default_variables-key": list(VARIABLES),
        "common_default_variables-value": ["1", "0", "1Gi", "1Gi", '"1"'],
        "default_exit_actions-key": ["COMPLETE", "RESCHEDULE", ""],
        "default_exit_actions-value": ["0", "1-10,16", ""],
        "common_pod_template": [],
        "common_resource_validations": [],
        "topology_keys": "[]",
    }
    platforms = list(pool.platforms.order_by("name")) if pool.pk else []
    data.update({"platforms-TOTAL_FORMS": str(len(platforms)), "platforms-INITIAL_FORMS": str(len(platforms))})
    for index, platform in enumerate(platforms):
        data.update(
            {
                f"platforms-{index}-id": platform.pk,
                f"platforms-{index}-pool": pool.pk,
                f"platforms-{index}-name": platform.name,
                f"platforms-{index}-description": platform.description,
                f"platforms-{index}-default_variables-key": [""],
                f"platforms-{index}-default_variables-value": [""],
                f"platforms-{index}-allowed_mounts": "[]",
            }
        )
    data.update(overrides)
    return data


def platform_post(platform: Platform, **overrides) -> dict:
    data = {
        "description": platform.description,
        "default_variables-key": [""],
        "default_variables-value": [""],
        "allowed_mounts": "[]",
        "override_pod_template": ["h100"],
        "resource_validations": [],
    }
    data.update(overrides)
    return data


def revisions(name: str = "train") -> int:
    return Revision.objects.filter(config_type="POOL", name=name).count()


def errors_of(response) -> dict:
    return response.context["adminform"].form.errors


# ------------------------------------------------------------------------------------------ key–value rows


def test_rows_store_the_same_mapping_as_the_json_text_did(admin_client, cluster):
    before = store.show("POOL", "train")
    url = reverse("admin:pools_pool_change", args=[cluster.pk])
    response = admin_client.post(url, pool_post(cluster))
    assert response.status_code == 302, errors_of(response)
    shown = store.show("POOL", "train")
    assert shown["common_default_variables"] == VARIABLES  # 1 stays a number, "1" a string, 1Gi text
    assert shown["default_exit_actions"] == {"COMPLETE": "0", "RESCHEDULE": "1-10,16"}
    assert shown == before and revisions() == 1  # nothing changed: no new revision
    as_json = pool_post(cluster, common_default_variables=json.dumps({**VARIABLES, "EXTRA": "x"}))
    del as_json["common_default_variables-key"], as_json["common_default_variables-value"]
    assert admin_client.post(url, as_json).status_code == 302  # the JSON text is still read
    assert store.show("POOL", "train")["common_default_variables"] == {**VARIABLES, "EXTRA": "x"}


def test_the_page_shows_one_row_per_entry_and_a_blank_one(admin_client, cluster):
    page = admin_client.get(reverse("admin:pools_pool_change", args=[cluster.pk])).content.decode()
    assert page.count('name="common_default_variables-key"') == len(VARIABLES) + 1
    assert 'name="common_default_variables-key" value="USER_MEMORY"' in page
    assert 'name="common_default_variables-value" value="1Gi"' in page
    assert 'name="common_default_variables-value" value="&quot;1&quot;"' in page  # the string "1", quoted
    assert '<option value="RESCHEDULE" selected>RESCHEDULE</option>' in page
    assert "portal/keyvalue.js" in page and "portal/ordered.js" in page


def test_bad_rows_are_refused_each_naming_its_key(admin_client, cluster):
    url = reverse("admin:pools_pool_change", args=[cluster.pk])
    data = pool_post(
        cluster,
        **{
            "common_default_variables-key": ["USER_CPU", "bad-name", "2x", "", "USER_CPU"],
            "common_default_variables-value": ["1", "a", "b", "orphan", "2"],
        },
    )
    response = admin_client.post(url, data)
    assert response.status_code == 200
    errors = errors_of(response)["common_default_variables"]
    assert "Row 4: the value 'orphan' has no name" in errors[0]
    assert "Key 'USER_CPU' is given twice (rows 1 and 5)" in errors[1]
    response = admin_client.post(
        url,
        pool_post(
            cluster,
            **{"common_default_variables-key": ["bad-name", "2x"], "common_default_variables-value": ["a", "b"]},
        ),
    )
    errors = errors_of(response)["common_default_variables"]
    assert errors[0].startswith("bad-name: variable names are letters") and errors[1].startswith("2x: ")
    assert 'class="kv-invalid"' in response.content.decode()
    response = admin_client.post(
        url, pool_post(cluster, **{"default_exit_actions-key": ["RETRY"], "default_exit_actions-value": ["1"]})
    )
    assert errors_of(response)["default_exit_actions"][0].startswith("RETRY: unknown exit action")
    response = admin_client.post(
        url, pool_post(cluster, **{"default_exit_actions-key": ["FAIL"], "default_exit_actions-value": ["1-x"]})
    )
    assert errors_of(response)["default_exit_actions"][0].startswith("FAIL: ")
    assert revisions() == 1 and store.show("POOL", "train")["common_default_variables"] == VARIABLES


# ------------------------------------------------------------------------------------------ ordered pickers


def test_ordered_lists_keep_the_order_posted(admin_client, cluster):
    url = reverse("admin:pools_pool_change", args=[cluster.pk])
    for order in (["tolerate", "h100"], ["h100", "tolerate"]):
        data = pool_post(cluster, common_pod_template=order, common_resource_validations=order and ["second", "first"])
        assert admin_client.post(url, data).status_code == 302
        shown = store.show("POOL", "train")
        assert shown["common_pod_template"] == order and shown["common_resource_validations"] == ["second", "first"]
    page = admin_client.get(url).content.decode()
    assert page.index('type="hidden" name="common_pod_template" value="h100"') < page.index(
        'type="hidden" name="common_pod_template" value="tolerate"'
    )
    assert '<option value="h100" disabled>' in page and '<option value="a100">' in page  # chosen once only
    platform = cluster.platforms.get(name="h100")
    platform_url = reverse("admin:pools_platform_change", args=[platform.pk])
    data = platform_post(platform, override_pod_template=["tolerate", "h100"], resource_validations=["second", "first"])
    assert admin_client.post(platform_url, data).status_code == 302
    shown = store.show("POOL", "train")["platforms"]["h100"]
    assert shown["override_pod_template"] == ["tolerate", "h100"] and shown["resource_validations"] == [
        "second",
        "first",
    ]


def test_unknown_or_repeated_names_are_refused(admin_client, cluster):
    url = reverse("admin:pools_pool_change", args=[cluster.pk])
    response = admin_client.post(url, pool_post(cluster, common_pod_template=["h100", "zzz", "h100"]))
    assert errors_of(response)["common_pod_template"] == ["Unknown pod template 'zzz'.", "'h100' is chosen twice."]
    assert revisions() == 1


# ------------------------------------------------------------------------------------------ default platform


def test_default_platform_is_a_choice_among_the_pools_platforms(admin_client, cluster):
    url = reverse("admin:pools_pool_change", args=[cluster.pk])
    page = admin_client.get(url).content.decode()
    select = page[
        page.index('name="default_platform"') : page.index("</select>", page.index('name="default_platform"'))
    ]
    assert '<option value="any" selected>any</option>' in select and '<option value="h100">h100</option>' in select
    response = admin_client.post(url, pool_post(cluster, default_platform="l40s"))
    assert "is not a platform of this pool (platforms: any, h100)" in errors_of(response)["default_platform"][0]
    assert '<option value="l40s" selected>l40s</option>' in response.content.decode()  # kept as posted
    assert admin_client.post(url, pool_post(cluster, default_platform="h100")).status_code == 302
    assert store.show("POOL", "train")["default_platform"] == "h100"


def test_a_new_pools_default_platform_may_be_one_added_on_the_same_page(admin_client, cluster):
    data = {
        **pool_post(Pool(name="fresh", backend_id=cluster.backend_id)),
        "default_platform": "new",
        "platforms-TOTAL_FORMS": "1",
        "platforms-INITIAL_FORMS": "0",
        "platforms-0-name": "new",
        "platforms-0-description": "",
        "platforms-0-default_variables-key": [""],
        "platforms-0-default_variables-value": [""],
        "platforms-0-allowed_mounts": "[]",
    }
    response = admin_client.post(reverse("admin:pools_pool_add"), data)
    assert response.status_code == 302, errors_of(response)
    assert store.show("POOL", "fresh")["default_platform"] == "new"


# ------------------------------------------------------------------------------------------ node match


def match(client, url: str, data: dict) -> dict:
    response = client.post(f"{url}?format=json", data)
    assert response.status_code == 200, response.content
    return {row["platform"]: row for row in response.json()["platforms"]}


def test_node_match_counts_and_groups_the_reasons(admin_client, cluster):
    url = reverse("admin:pools_pool_node_match", args=[cluster.pk])
    rows = match(admin_client, url, pool_post(cluster))
    assert rows["any"]["matching"] == 6 and rows["any"]["total"] == 7  # only the taint keeps one out
    assert rows["any"]["reasons"] == [
        {"reason": "untolerated taint dedicated=ml:NoSchedule", "nodes": 1, "examples": ["h100-tainted"]}
    ]
    h100 = rows["h100"]  # the platform's own saved template, after the pool's
    assert (h100["matching"], h100["total"]) == (3, 7)
    assert {r["reason"]: r["nodes"] for r in h100["reasons"]} == {
        f"node(s) didn't match nodeSelector: {GPU}=H100 (node has A100)": 2,
        f"node(s) didn't match nodeSelector: {GPU}=H100 (node has no {GPU} label)": 1,
        "untolerated taint dedicated=ml:NoSchedule": 1,
    }
    assert h100["reasons"][0]["examples"] == ["a100-0", "a100-1"]
    rows = match(admin_client, url, pool_post(cluster, common_pod_template=["tolerate"]))  # picked, not saved
    assert rows["any"]["matching"] == 7 and rows["h100"]["matching"] == 4
    rows = match(admin_client, url, pool_post(cluster, common_pod_template=["a100"]))
    assert rows["any"]["matching"] == 2 and rows["h100"]["matching"] == 3  # the platform's template merges last
    html = admin_client.post(url, pool_post(cluster, common_pod_template=["a100"])).content.decode()
    assert "2 of 7 nodes match" in html and "(e.g. a100-0, a100-1)" in html
    html = admin_client.post(url, pool_post(cluster, common_pod_template=["nowhere"])).content.decode()
    assert "no node of 7 matches" in html


def test_node_match_lists_a_few_reasons_and_counts_the_rest(admin_client, cluster):
    for index in range(12):
        NodeFactory(backend=cluster.backend, name=f"l40s-{index}", labels={GPU: f"L40S-{index}"})
    url = reverse("admin:pools_pool_node_match", args=[cluster.pk])
    h100 = match(admin_client, url, pool_post(cluster))["h100"]
    assert (h100["matching"], h100["total"]) == (3, 19)
    assert len(h100["reasons"]) == 8 and h100["more_reasons"] == 15 - 8  # 12 L40S kinds, A100, none, taint
    assert h100["reasons"][0]["nodes"] == 2 and all(len(r["examples"]) <= 3 for r in h100["reasons"])
    html = admin_client.post(url, pool_post(cluster)).content.decode().split("<b>h100</b>")[1]
    assert "… and 7 other reasons" in html  # the commonest first, then in order: L40S-0 … L40S-4 are shown
    assert "(node has L40S-4)" in html and "(node has L40S-5)" not in html and "untolerated taint" not in html


def test_node_match_on_the_add_pages_and_the_platform_page(admin_client, cluster):
    add = reverse("admin:pools_pool_node_match")
    data = {"backend": cluster.backend_id, "common_pod_template": ["h100"], "platforms-TOTAL_FORMS": "0"}
    rows = match(admin_client, add, data)
    assert rows[""]["matching"] == 3  # no platform yet: the pool's own templates
    assert "Choose a backend" in admin_client.post(add, {}).content.decode()
    platform = cluster.platforms.get(name="any")
    url = reverse("admin:pools_platform_node_match", args=[platform.pk])
    assert match(admin_client, url, platform_post(platform, override_pod_template=["a100"]))["any"]["matching"] == 2
    rows = match(admin_client, url, platform_post(platform, override_pod_template=["nowhere"]))
    assert rows["any"]["matching"] == 0 and rows["any"]["reasons"][0]["nodes"] == 7
    new = reverse("admin:pools_platform_node_match")
    rows = match(admin_client, new, {"pool": cluster.pk, "name": "x", "override_pod_template": ["tolerate"]})
    assert rows["x"]["matching"] == 7
    rows = match(admin_client, new, {"pool": cluster.pk, "name": "x", "override_pod_template": ["gone"]})
    assert rows["x"]["error"] == "unknown pod template 'gone'"
    page = admin_client.get(reverse("admin:pools_platform_change", args=[platform.pk])).content.decode()
    assert f'data-node-match="{url}"' in page and "6 of 7 nodes match" in page


def test_node_match_needs_a_post_and_the_right_to_edit(admin_client, cluster):
    url = reverse("admin:pools_pool_node_match", args=[cluster.pk])
    assert admin_client.get(url).status_code == 405
    assert Client().post(url, pool_post(cluster)).status_code == 302  # signed out: to the login page
    viewer = UserFactory(username="viewer", is_staff=True)
    browser = Client()
    browser.force_login(viewer)
    assert browser.post(url, pool_post(cluster)).status_code == 302  # staff but no admin role: sent away


def test_node_match_query_count_does_not_grow_with_nodes_templates_or_platforms(admin_client, cluster):
    url = reverse("admin:pools_pool_node_match", args=[cluster.pk])
    templates = ["h100", "tolerate"]

    def grow():
        for index in range(20):
            NodeFactory(backend=cluster.backend, name=f"more-{index}", labels={GPU: "H100", "rack": str(index)})
        for index in range(4):
            store.apply("POD_TEMPLATE", f"extra{index}", {"spec": {"nodeSelector": {f"k{index}": "v"}}}, CLI)
            templates.append(f"extra{index}")
        body = store.show("POOL", "train")
        body["platforms"].update({f"p{index}": {"override_pod_template": ["a100"]} for index in range(4)})
        store.apply("POOL", "train", body, CLI)

    def ask():
        pool = Pool.objects.get(pk=cluster.pk)
        return admin_client.post(f"{url}?format=json", pool_post(pool, common_pod_template=list(templates)))

    assert_constant_queries(ask, grow=grow, at_most=12)
    assert ask().json()["platforms"][0]["total"] == 27


# ------------------------------------------------------------------------------------------ no node matches


def test_a_platform_save_that_matches_no_node_asks_first_and_then_warns_on_the_pool(admin_client, cluster):
    platform = cluster.platforms.get(name="h100")
    url = reverse("admin:pools_platform_change", args=[platform.pk])
    response = admin_client.post(url, platform_post(platform, override_pod_template=["nowhere"]))
    assert response.status_code == 200
    error = errors_of(response)["save_anyway"][0]
    assert error.startswith("platform h100 matches no node of the pool's backend") and "Save anyway" in error
    assert 'name="save_anyway"' in response.content.decode()  # the box is shown now
    assert revisions() == 1 and NodeMembership.objects.filter(platform=platform).count() == 3  # rolled back
    response = admin_client.post(url, platform_post(platform, override_pod_template=["nowhere"], save_anyway="on"))
    assert response.status_code == 302
    assert revisions() == 2 and not NodeMembership.objects.filter(platform=platform).exists()
    change = admin_client.get(reverse("admin:pools_pool_change", args=[cluster.pk])).content.decode()
    assert "platform h100 matches no node" in change
    listing = admin_client.get(reverse("admin:pools_pool_changelist")).content.decode()
    assert "platform h100 matches no node" in listing
    # already matching no node: another edit does not ask again
    response = admin_client.post(url, platform_post(platform, override_pod_template=["nowhere"], description="x"))
    assert response.status_code == 302
    # matching again: the warning goes, computed from membership
    assert admin_client.post(url, platform_post(platform)).status_code == 302
    assert "matches no node" not in admin_client.get(reverse("admin:pools_pool_changelist")).content.decode()


def test_a_new_pool_whose_platform_matches_no_node_asks_first(admin_client, cluster):
    data = {
        **pool_post(Pool(name="nowhere", backend_id=cluster.backend_id)),
        "default_platform": "",
        "common_pod_template": ["nowhere"],
        "platforms-TOTAL_FORMS": "1",
        "platforms-INITIAL_FORMS": "0",
        "platforms-0-name": "only",
        "platforms-0-default_variables-key": [""],
        "platforms-0-default_variables-value": [""],
        "platforms-0-allowed_mounts": "[]",
    }
    response = admin_client.post(reverse("admin:pools_pool_add"), data)
    assert response.status_code == 200
    assert errors_of(response)["save_anyway"][0].startswith("platform only matches no node")
    assert not Pool.objects.filter(name="nowhere").exists()
    assert admin_client.post(reverse("admin:pools_pool_add"), {**data, "save_anyway": "on"}).status_code == 302
    assert Pool.objects.filter(name="nowhere").exists()


def test_a_pool_on_a_backend_without_nodes_saves_without_asking(admin_client, db):
    BackendFactory(name="empty")
    store.apply("POD_TEMPLATE", "nowhere", {"spec": {"nodeSelector": {"rack": "none"}}}, CLI)
    store.apply("POOL", "later", {"backend": "empty", "platforms": {"a": {}}}, CLI)
    pool = Pool.objects.get(name="later")
    response = admin_client.post(
        reverse("admin:pools_pool_change", args=[pool.pk]),
        pool_post(pool, common_pod_template=["nowhere"], default_platform=""),
    )
    assert response.status_code == 302, errors_of(response)
    page = admin_client.get(reverse("admin:pools_pool_change", args=[pool.pk])).content.decode()
    assert "The backend has no nodes yet" in page and "matches no node" not in page
