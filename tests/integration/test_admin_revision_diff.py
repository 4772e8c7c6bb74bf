"""The revision page's diff: coloured rows, unified or side by side, in the format the type is edited in."""

from __future__ import annotations

import html as html_lib
import re

import pytest
from django.urls import reverse

from configs import store
from configs.models import Revision
from portal.diffview import diff_view
from tests.integration.conftest import CLI


def _cells(html: str, css: str) -> list[str]:
    return [html_lib.unescape(text) for text in re.findall(rf'<td class="{css}"[^>]*>(.*?)</td>', html)]


def _rows(html: str, kind: str) -> int:
    return len(re.findall(rf'<tr class="row-{kind}">', html))


@pytest.fixture
def template_revisions(db):
    store.apply("POD_TEMPLATE", "gpu", {"spec": {"nodeSelector": {"gpu": "a100"}, "priorityClassName": "x"}}, CLI)
    store.apply("POD_TEMPLATE", "gpu", {"spec": {"nodeSelector": {"gpu": "h100"}}}, CLI)
    return Revision.objects.get(config_type="POD_TEMPLATE", name="gpu", revision=2)


def _page(admin_client, revision, query=""):
    response = admin_client.get(reverse("admin:configs_revision_change", args=[revision.pk]) + query)
    assert response.status_code == 200
    return response.content.decode()


def test_a_pod_template_diff_is_yaml_and_unified_by_default(admin_client, template_revisions):
    html = _page(admin_client, template_revisions)
    assert 'data-format="yaml"' in html and 'data-mode="unified"' in html and "YAML, as it is edited" in html
    assert _cells(html, "code") == [
        "spec:",
        "  nodeSelector:",
        "    gpu: a100",
        "  priorityClassName: x",
        "    gpu: h100",
    ]
    assert _rows(html, "del") == 2 and _rows(html, "add") == 1 and _rows(html, "same") == 2
    assert 'id="diff-mode-unified" aria-current="true"' in html


def test_side_by_side_faces_the_replaced_line(admin_client, template_revisions):
    html = _page(admin_client, template_revisions, "?compare=1&diff=split")
    assert 'data-mode="split"' in html and 'id="diff-mode-split" aria-current="true"' in html
    assert _cells(html, "code cell-del") == ["    gpu: a100", "  priorityClassName: x"]
    assert _cells(html, "code cell-add") == ["    gpu: h100"]
    assert _rows(html, "change") == 1 and _rows(html, "del") == 1
    # the comparison links keep the chosen layout
    assert "?compare=1&amp;diff=split" in html


def test_a_pool_diff_is_json(admin_client, reference_config):
    store.apply("POOL", "j", {"backend": "default", "description": "one"}, CLI)
    store.apply("POOL", "j", {"backend": "default", "description": "two"}, CLI)
    revision = Revision.objects.get(config_type="POOL", name="j", revision=2)
    html = _page(admin_client, revision)
    assert 'data-format="json"' in html
    assert _rows(html, "del") == 1 and '"description": "one",' in html_lib.unescape(html)
    assert _rows(html, "add") == 1 and '"description": "two",' in html_lib.unescape(html)


def test_an_unknown_layout_is_unified(admin_client, template_revisions):
    assert 'data-mode="unified"' in _page(admin_client, template_revisions, "?diff=sideways")


def test_long_unchanged_runs_collapse_into_a_gap_row():
    old = "\n".join(f"line {n}" for n in range(20))
    new = old.replace("line 10", "line ten")
    view = diff_view(old, new, "yaml", "split")
    kinds = [row.kind for row in view.rows]
    assert kinds == ["gap", "same", "same", "same", "change", "same", "same", "same", "gap"]
    assert view.rows[0].old == "⋯ 7 unchanged lines" and view.rows[-1].old == "⋯ 6 unchanged lines"
    assert (view.added, view.removed) == (1, 1)
    assert diff_view(old, old, "yaml").empty
