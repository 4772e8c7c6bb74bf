"""Admin console for configuration: pages render, saves go through services, query counts stay flat."""

from __future__ import annotations

import html as html_lib
import json
import re

import pytest
from django.urls import reverse

from configs import store
from configs.models import Revision
from pools.models import Platform, PodTemplate, Pool
from tests.integration.conftest import CLI
from tests.queries import assert_constant_queries

CHANGELISTS = [
    "pools_pool",
    "pools_platform",
    "pools_podtemplate",
    "pools_resourcevalidation",
    "clusters_backend",
    "configs_revision",
]


@pytest.mark.parametrize("model", CHANGELISTS)
def test_changelists_and_add_pages_render(admin_client, demo_pools, model):
    assert admin_client.get(reverse(f"admin:{model}_changelist")).status_code == 200
    if model != "configs_revision":
        assert admin_client.get(reverse(f"admin:{model}_add")).status_code == 200


def test_change_pages_render(admin_client, demo_pools):
    pool = Pool.objects.get(name="robotics-training")
    page = admin_client.get(reverse("admin:pools_pool_change", args=[pool.pk]))
    assert page.status_code == 200
    assert b"h100-platform" in page.content and b"Revisions of robotics-training" in page.content
    platform = pool.platforms.get(name="a100-platform")
    assert admin_client.get(reverse("admin:pools_platform_change", args=[platform.pk])).status_code == 200
    revision = Revision.objects.filter(config_type="POOL").first()
    page = admin_client.get(reverse("admin:configs_revision_change", args=[revision.pk]))
    assert page.status_code == 200 and b"First revision." in page.content


@pytest.mark.parametrize("model", ["pools_pool", "pools_podtemplate", "configs_revision", "pools_platform"])
def test_changelist_query_count_does_not_grow_with_rows(admin_client, demo_pools, model):
    url = reverse(f"admin:{model}_changelist")
    admin_client.get(url)

    def add_rows():
        for index in range(12):
            store.apply("POD_TEMPLATE", f"t{index}", {"spec": {}}, CLI)
            store.apply(
                "POOL",
                f"bulk-{index}",
                {"backend": "default", "common_pod_template": [f"t{index}"], "platforms": {"a": {}, "b": {}}},
                CLI,
            )

    assert_constant_queries(lambda: admin_client.get(url), grow=add_rows)


def _template_post(name: str, body: str) -> dict:
    return {"name": name, "body": body}


def test_pod_template_editor_accepts_yaml_and_records_a_revision(admin_client, db):
    response = admin_client.post(
        reverse("admin:pools_podtemplate_add"),
        _template_post("gpu", "spec:\n  tolerations:\n    - {key: nvidia.com/gpu, operator: Exists}\n"),
    )
    assert response.status_code == 302, response.content
    assert PodTemplate.objects.get(name="gpu").body["spec"]["tolerations"][0]["key"] == "nvidia.com/gpu"
    revision = Revision.objects.get(config_type="POD_TEMPLATE", name="gpu")
    assert revision.author_name == "root-admin (admin)"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("spec: [\n  a: b\n", "invalid YAML"),
        ('{"spec": {"x": 1}', "invalid JSON"),
        ("specs: {}", "allowed top-level fields"),
    ],
)
def test_pod_template_editor_shows_errors_on_the_field(admin_client, db, body, message):
    response = admin_client.post(reverse("admin:pools_podtemplate_add"), _template_post("bad", body))
    assert response.status_code == 200
    assert message in response.context["adminform"].form.errors["body"][0]
    assert not PodTemplate.objects.filter(name="bad").exists()


VARIABLES = {"USER_CPU": 1, "USER_GPU": 0, "USER_MEMORY": "1Gi", "USER_STORAGE": "1Gi"}


def _pool_post(pool: Pool, **overrides) -> dict:
    data = {
        "name": pool.name,
        "description": pool.description,
        "backend": pool.backend_id,
        "default_platform": pool.default_platform,
        "common_default_variables": json.dumps(VARIABLES),
        "default_exec_timeout": "",
        "max_exec_timeout": "",
        "default_queue_timeout": "",
        "max_queue_timeout": "",
        "default_exit_actions": "{}",
        "download_type": "",
        "gpu_guarantee": "",
        "gpu_maximum": "",
        "gpu_weight": "",
        "topology_keys": "[]",
    }
    platforms = list(pool.platforms.all())
    data.update(
        {
            "common_pod_template": [ref.template.name for ref in pool.template_refs.order_by("position", "id")],
            "platforms-TOTAL_FORMS": str(len(platforms)),
            "platforms-INITIAL_FORMS": str(len(platforms)),
        }
    )
    for index, platform in enumerate(platforms):
        data.update(
            {
                f"platforms-{index}-id": platform.pk,
                f"platforms-{index}-pool": pool.pk,
                f"platforms-{index}-name": platform.name,
                f"platforms-{index}-description": platform.description,
                f"platforms-{index}-default_variables": "{}",
                f"platforms-{index}-allowed_mounts": "[]",
            }
        )
    data.update(overrides)
    return data


@pytest.fixture
def small_pool(reference_config):
    store.apply(
        "POOL",
        "small",
        {
            "backend": "default",
            "default_platform": "a",
            "common_default_variables": VARIABLES,
            "common_pod_template": ["default_user"],
            "platforms": {"a": {}, "b": {}},
        },
        CLI,
    )
    return Pool.objects.get(name="small")


def test_pool_save_with_inlines_records_one_revision(admin_client, small_pool):
    url = reverse("admin:pools_pool_change", args=[small_pool.pk])
    response = admin_client.post(
        url, _pool_post(small_pool, description="edited in admin", default_exec_timeout="2h", max_exec_timeout="4h")
    )
    assert response.status_code == 302, response.context["adminform"].form.errors if response.context else ""
    shown = store.show("POOL", "small")
    assert shown["description"] == "edited in admin" and shown["default_exec_timeout"] == "2h"
    latest = Revision.objects.filter(config_type="POOL", name="small").order_by("-revision").first()
    assert latest.revision == 2 and latest.author_name == "root-admin (admin)"


def test_pool_field_errors_show_on_the_field(admin_client, small_pool):
    url = reverse("admin:pools_pool_change", args=[small_pool.pk])
    response = admin_client.post(url, _pool_post(small_pool, default_exec_timeout="9h", max_exec_timeout="4h"))
    assert response.status_code == 200
    assert "max_exec_timeout (4h)" in response.context["adminform"].form.errors["default_exec_timeout"][0]
    response = admin_client.post(url, _pool_post(small_pool, default_exit_actions='{"RETRY": "1"}'))
    assert "unknown exit action" in response.context["adminform"].form.errors["default_exit_actions"][0]


def test_a_save_the_service_refuses_is_rolled_back_and_shown(admin_client, small_pool):
    """Renaming the default platform away leaves default_platform dangling: the whole save is undone."""
    url = reverse("admin:pools_pool_change", args=[small_pool.pk])
    data = _pool_post(small_pool)
    index = next(i for i in range(2) if data[f"platforms-{i}-name"] == "a")
    data[f"platforms-{index}-name"] = "renamed"
    data["description"] = "should not stick"
    response = admin_client.post(url, data)
    assert response.status_code == 200
    form = response.context["adminform"].form
    assert "is not a platform of this pool" in form.errors["default_platform"][0]
    assert set(Platform.objects.filter(pool=small_pool).values_list("name", flat=True)) == {"a", "b"}
    assert store.show("POOL", "small")["description"] == ""
    assert Revision.objects.filter(config_type="POOL", name="small").count() == 1


def test_deleting_a_referenced_template_in_the_admin_is_refused(admin_client, small_pool):
    template = PodTemplate.objects.get(name="default_user")
    response = admin_client.post(
        reverse("admin:pools_podtemplate_delete", args=[template.pk]), {"post": "yes"}, follow=True
    )
    assert PodTemplate.objects.filter(name="default_user").exists()
    assert "still referenced by pool small (common_pod_template)" in response.content.decode()


def test_rollback_from_the_revision_page(admin_client, small_pool):
    store.apply("POOL", "small", {**store.show("POOL", "small"), "description": "changed"}, CLI)
    first = Revision.objects.get(config_type="POOL", name="small", revision=1)
    page = admin_client.get(reverse("admin:configs_revision_change", args=[first.pk]) + "?compare=2")
    assert b"Comparing r1" in page.content and b"changed" in page.content
    response = admin_client.post(reverse("admin:configs_revision_roll_back_to_this", args=[first.pk]), follow=True)
    assert response.status_code == 200
    assert store.show("POOL", "small")["description"] == ""
    assert Revision.objects.filter(config_type="POOL", name="small").count() == 3


def _diff_lines(html: str, kind: str) -> list[str]:
    """The unified diff's lines of one kind (templates/admin/_diff.html), with their sign."""
    sign = {"del": "-", "add": "+"}[kind]
    rows = re.findall(rf'<tr class="row-{kind}">.*?<td class="code">(.*?)</td></tr>', html)
    return [sign + html_lib.unescape(text) for text in rows]


def test_rollback_on_get_shows_the_json_diff_it_would_apply_and_changes_nothing(admin_client, small_pool):
    store.apply("POOL", "small", {**store.show("POOL", "small"), "description": "changed"}, CLI)
    first = Revision.objects.get(config_type="POOL", name="small", revision=1)
    page = admin_client.get(reverse("admin:configs_revision_roll_back_to_this", args=[first.pk]))
    html = page.content.decode()
    assert page.status_code == 200 and "Roll POOL small back to r1?" in html
    assert 'data-format="json"' in html and '<form method="post"' in html and "csrfmiddlewaretoken" in html
    assert _diff_lines(html, "del") == ['-  "description": "changed",']
    assert _diff_lines(html, "add") == ['+  "description": "",']
    split = admin_client.get(reverse("admin:configs_revision_roll_back_to_this", args=[first.pk]) + "?diff=split")
    assert 'data-mode="split"' in split.content.decode()  # the same layouts as a revision page
    assert store.show("POOL", "small")["description"] == "changed"
    assert Revision.objects.filter(config_type="POOL", name="small").count() == 2


def test_rollback_of_a_pod_template_shows_a_yaml_diff(admin_client, db):
    store.apply("POD_TEMPLATE", "gpu", {"spec": {"nodeSelector": {"gpu": "a100"}}}, CLI)
    store.apply("POD_TEMPLATE", "gpu", {"spec": {"nodeSelector": {"gpu": "h100"}}}, CLI)
    first = Revision.objects.get(config_type="POD_TEMPLATE", name="gpu", revision=1)
    html = admin_client.get(reverse("admin:configs_revision_roll_back_to_this", args=[first.pk])).content.decode()
    assert 'data-format="yaml"' in html
    assert _diff_lines(html, "del") == ["-    gpu: h100"] and _diff_lines(html, "add") == ["+    gpu: a100"]


def test_rollback_post_needs_the_csrf_token(small_pool, admin_user):
    from django.test import Client

    store.apply("POOL", "small", {**store.show("POOL", "small"), "description": "changed"}, CLI)
    first = Revision.objects.get(config_type="POOL", name="small", revision=1)
    url = reverse("admin:configs_revision_roll_back_to_this", args=[first.pk])
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(admin_user)
    token = browser.get(url).context["csrf_token"]
    assert browser.post(url).status_code == 403
    assert store.show("POOL", "small")["description"] == "changed"
    assert browser.post(url, {"csrfmiddlewaretoken": str(token)}).status_code == 302
    assert store.show("POOL", "small")["description"] == ""


def test_rollback_of_an_unknown_revision_is_a_404(admin_client, db):
    assert admin_client.get(reverse("admin:configs_revision_roll_back_to_this", args=[999999])).status_code == 404


@pytest.mark.parametrize("model", ["pools_pool", "pools_platform", "pools_podtemplate"])
def test_changelist_renders_no_widget_template_per_row(admin_client, demo_pools, model):
    """A list page renders its checkboxes without a widget template per row: the rows' own
    (portal.admin_base.row_checkbox) and the "select all" one in the column headers, which unfold builds for
    every row (portal.unfold_headers builds them once per page)."""
    url = reverse(f"admin:{model}_changelist")

    def widget_templates() -> int:
        page = admin_client.get(url)
        assert page.status_code == 200
        return sum(template.name.startswith("django/forms/widgets/") for template in page.templates)

    widget_templates()  # the first page renders the row checkbox's template once (it is reused after)
    before = widget_templates()
    for index in range(12):
        store.apply("POD_TEMPLATE", f"t{index}", {"spec": {}}, CLI)
        store.apply("POOL", f"bulk-{index}", {"backend": "default", "platforms": {"a": {}, "b": {}}}, CLI)
    assert admin_client.get(url).content.count(b'name="_selected_action"') >= 12
    assert widget_templates() == before
