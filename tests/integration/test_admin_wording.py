"""Admin wording for people, not code: "API tokens"; pool and role names as written in titles and breadcrumbs;
the revisions' "Deleted" column quiet on live rows; field errors that name the field and what it allows."""

from __future__ import annotations

import html as html_lib
import re

import pytest
from django.contrib import admin
from django.urls import reverse

from access.models import Role
from configs import store
from configs.admin import ChangeDescriptionMixin
from configs.models import Revision
from pools.models import Pool
from tests.integration.conftest import CLI
from tests.integration.test_admin_pools import _pool_post, small_pool  # noqa: F401  (fixture)

RED_CROSS = "close_small"  # Unfold's boolean icon for False


def header(page: str) -> str:
    """The page's breadcrumb header (Unfold's header_title) and its <title>."""
    title = re.search(r"<title>(.*?)</title>", page, re.S).group(1)
    crumbs = page[page.index("<h1") : page.index("</h1>")]
    return " ".join(re.sub(r"<[^>]+>", " ", title + " " + crumbs).split())


def errors_of(response) -> str:
    return html_lib.unescape(" ".join(re.sub(r"<[^>]+>", " ", response.content.decode()).split()))


def test_api_tokens_are_called_so(admin_client, db):
    home = admin_client.get(reverse("admin:index")).content.decode()
    assert "API tokens" in home and "Api tokens" not in home
    listing = admin_client.get(reverse("admin:access_apitoken_changelist")).content.decode()
    assert "API tokens" in header(listing) and "Api token" not in listing


@pytest.mark.parametrize("page", ["change", "history", "delete"])
def test_a_pool_name_is_shown_as_written(admin_client, reference_config, page):
    store.apply("POOL", "heterogeneous_pool", {"backend": "default", "platforms": {"base": {}}}, CLI)
    pool = Pool.objects.get(name="heterogeneous_pool")
    shown = admin_client.get(reverse(f"admin:pools_pool_{page}", args=[pool.pk])).content.decode()
    assert "heterogeneous_pool" in header(shown)
    assert "Heterogeneous_pool" not in shown
    assert header(shown).startswith(("heterogeneous_pool", "Change history: heterogeneous_pool", "Delete"))
    assert "Configuration" in header(shown) or "Pools" in header(shown)  # words are still capitalised


def test_a_role_name_is_shown_as_written(admin_client, db):
    role = Role.objects.get(name="osmo-admin")
    shown = admin_client.get(reverse("admin:access_role_change", args=[role.pk])).content.decode()
    assert "osmo-admin" in header(shown) and "Osmo-admin" not in shown


def test_the_deleted_column_is_quiet_on_live_rows_and_marks_deletions(admin_client, reference_config):
    store.apply("POOL", "gone", {"backend": "default"}, CLI)
    store.delete("POOL", "gone", CLI)
    listing = admin_client.get(reverse("admin:configs_revision_changelist") + "?name=gone").content.decode()
    rows = re.findall(r"<tr[^>]*>.*?</tr>", listing, re.S)
    live = [row for row in rows if ">1<" in row or "r1" in row]
    assert len(Revision.objects.filter(name="gone")) == 2
    assert listing.count('class="deleted-mark"') == 1 and listing.count('class="live-mark"') == 1
    assert RED_CROSS not in listing
    assert live or rows  # the list rendered its rows


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("gpu_guarantee", "two", "GPU guarantee must be a whole number, −1 for none"),
        ("gpu_guarantee", "-5", "GPU guarantee must be a whole number, −1 for none"),
        ("gpu_maximum", "1.5", "GPU maximum must be a whole number, −1 for unlimited"),
        ("gpu_weight", "-1", "GPU weight must be a whole number, 0 or more"),
        ("default_exec_timeout", "soon", "Default exec timeout is not a duration: use <integer><unit>"),
        ("common_default_variables", "{nope", "Common default variables must be a JSON object"),
    ],
)
def test_pool_field_errors_name_the_field_and_what_it_allows(admin_client, small_pool, field, value, message):  # noqa: F811
    url = reverse("admin:pools_pool_change", args=[small_pool.pk])
    response = admin_client.post(url, _pool_post(small_pool, **{field: value}))
    assert response.status_code == 200
    text = errors_of(response)
    assert message in text
    assert "Enter a whole number" not in text and "Enter a valid JSON" not in text


def test_pool_form_labels_write_abbreviations_as_people_do(admin_client, small_pool):  # noqa: F811
    text = errors_of(admin_client.get(reverse("admin:pools_pool_change", args=[small_pool.pk])))
    assert "GPU guarantee" in text and "Gpu guarantee" not in text


def test_backend_and_role_choices_list_the_allowed_values(admin_client, reference_config):
    backend = store.show("BACKEND", "default")
    url = reverse("admin:clusters_backend_add")
    response = admin_client.post(url, {"name": "b2", "namespace": "default", "quota_scheduler": "slurm"})
    assert "Quota scheduler must be one of portal, kai, kueue, not “slurm”" in errors_of(response), backend
    response = admin_client.post(
        reverse("admin:access_role_add"), {"name": "r2", "policies": "[]", "sync_mode": "sometimes"}
    )
    assert "Sync mode must be one of" in errors_of(response) and "not “sometimes”" in errors_of(response)


def test_backend_connection_and_pool_backend_refusals_name_the_field(admin_client, small_pool):  # noqa: F811
    response = admin_client.post(
        reverse("admin:clusters_backend_add"), {"name": "b3", "namespace": "default", "connection": "telepathy"}
    )
    assert "Connection must be one of kubeconfig, in-cluster, url, not “telepathy”" in errors_of(response)
    url = reverse("admin:pools_pool_change", args=[small_pool.pk])
    text = errors_of(admin_client.post(url, _pool_post(small_pool, backend="")))
    assert "Backend is required: a pool needs a backend (the name of the cluster it runs on)" in text
    text = errors_of(admin_client.post(url, _pool_post(small_pool, backend="999999")))
    assert "Backend must be one of those listed, not “999999”" in text


# the pages whose saves write a revision: each config type's (a platform's page writes its pool's)
CONFIG_ADMINS = [
    "access_role", "clusters_backend", "clusters_machinepool", "pools_platform", "pools_podtemplate", "pools_pool",
    "pools_resourcevalidation", "quotas_nodepool",
]  # fmt: skip


def test_the_config_pages_are_those_with_a_change_description():
    registered = sorted(
        f"{model._meta.app_label}_{model._meta.model_name}"
        for model, model_admin in admin.site._registry.items()
        if isinstance(model_admin, ChangeDescriptionMixin)
    )
    assert registered == CONFIG_ADMINS


@pytest.mark.parametrize("name", CONFIG_ADMINS)
def test_every_config_page_asks_for_a_change_description(admin_client, db, name):
    """The add form ends with the optional change description, whatever fieldsets the admin picks for the add
    page (before: the backend's, the machine pool's, the role's and the platform's add page left the field off,
    so a save there could not be described and its history row said "-")."""
    page = admin_client.get(reverse(f"admin:{name}_add")).content.decode()
    assert 'name="change_description"' in page and "This change" in page
