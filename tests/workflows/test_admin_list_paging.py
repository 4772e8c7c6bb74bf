"""The admin's workflow list at a million rows (portal.admin_paging, docs/scale.md): no count of every row, no
OFFSET fetch of the rows a deep page skips, no date hierarchy scan; the same rows, in the same order, as Django's
own paging; constant queries whatever the page and the table's size."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.paginator import Paginator
from django.utils import timezone

from portal import admin_paging
from tests.factories import PoolFactory, ProjectFactory, UserFactory, WorkflowFactory
from tests.queries import assert_constant_queries, queries_of
from workflows.models import Workflow

pytestmark = pytest.mark.django_db
URL = "/admin/workflows/workflow/"


@pytest.fixture
def workflows():
    pool, user = PoolFactory(name="big"), UserFactory(username="ann")
    now = timezone.now()

    def add(count: int) -> None:
        made = [WorkflowFactory(pool=pool, submitted_by=user, status="COMPLETED") for _ in range(count)]
        for n, workflow in enumerate(made):  # a few share a time: the id breaks the tie
            Workflow.objects.filter(pk=workflow.pk).update(
                created_at=now - timedelta(minutes=n // 3 + Workflow.objects.count())
            )

    add(30)
    return add


def _ids(response) -> list[int]:
    return [row.pk for row in response.context["cl"].result_list]


def test_deep_pages_are_django_s_pages_and_the_count_is_estimated_above_the_bound(workflows, admin_client, monkeypatch):
    monkeypatch.setattr(admin_paging, "EXACT_BELOW", 10)  # the planner's estimate from 10 rows up
    monkeypatch.setattr(admin_paging, "DEEP_FROM_PAGE", 1)  # every page past the first by its ids first
    from workflows.admin import WorkflowAdmin

    monkeypatch.setattr(WorkflowAdmin, "list_per_page", 4)
    expected = Paginator(Workflow.objects.order_by("-created_at", "-id"), 4)
    for page in (1, 2, 5, 8):
        response = admin_client.get(URL, {"p": page})
        assert response.status_code == 200
        assert _ids(response) == [w.pk for w in expected.page(page).object_list], page
    sql = " ".join(queries_of(lambda: admin_client.get(URL, {"p": 5})))
    assert "EXPLAIN" in sql and "COUNT(" not in sql.upper()  # no count of every row
    assert "DATE_TRUNC('year'" not in sql  # no date hierarchy scan
    assert admin_client.get(URL, {"p": 5}).context["cl"].paginator.estimated  # a full page: the end is not seen
    last = response.context["cl"].paginator  # page 8 held 2 rows: the list ended there, 7 × 4 + 2
    assert (last.estimated, last.count) == (False, 30)


def test_below_the_bound_the_count_is_exact(workflows, admin_client):
    response = admin_client.get(URL)
    assert response.context["cl"].result_count == 30
    assert not response.context["cl"].paginator.estimated


@pytest.mark.parametrize("page", [1, 3])
def test_a_page_takes_constant_queries_whatever_the_table_s_size(workflows, admin_client, monkeypatch, page):
    monkeypatch.setattr(admin_paging, "DEEP_FROM_PAGE", 1)
    from workflows.admin import WorkflowAdmin

    monkeypatch.setattr(WorkflowAdmin, "list_per_page", 5)
    assert_constant_queries(
        lambda: admin_client.get(URL, {"p": page, "status__exact": "COMPLETED"}), lambda: workflows(40)
    )


def test_an_estimate_is_said_to_be_one_and_the_list_s_end_makes_the_count_exact(workflows, admin_client, monkeypatch):
    from django.db import connection

    from workflows.admin import WorkflowAdmin

    monkeypatch.setattr(admin_paging, "EXACT_BELOW", 10)
    monkeypatch.setattr(WorkflowAdmin, "list_per_page", 4)
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {Workflow._meta.db_table}")  # the planner knows of 30 rows
    Workflow.objects.filter(pk__in=list(Workflow.objects.values_list("pk", flat=True)[:10])).delete()  # 20 left

    first = admin_client.get(URL)
    assert first.context["cl"].paginator.estimated and first.context["cl"].paginator.count == 30
    assert "about 30" in " ".join(first.content.decode().split())

    past_the_end = admin_client.get(URL, {"p": 6})  # the estimate's page 6 of 8; the real list has 5
    assert past_the_end.status_code == 200 and _ids(past_the_end) == []
    paginator = past_the_end.context["cl"].paginator
    assert (paginator.estimated, paginator.count, paginator.num_pages) == (False, 20, 5)
    shown = " ".join(past_the_end.content.decode().split())
    assert "20 workflows" in shown and "about" not in shown.split('data-result-count="20"')[1][:60]
    assert "?p=5" in shown and "?p=8" not in shown  # the links lead back to the real last page


def test_pools_and_projects_are_filtered_by_a_search_not_a_link_each(workflows, admin_client):
    """A fleet's 100 pools and 500 projects: the page names none of those it does not show, whatever their
    number; the filters' search (the admin's autocomplete) finds them, and a chosen one filters the list."""
    other = PoolFactory(name="elsewhere-pool")
    project = ProjectFactory(name="needle-project")
    mine = WorkflowFactory(pool=other, submitted_by=UserFactory(username="bo"), project=project)
    unused = [PoolFactory(name=f"unused-pool-{n}") for n in range(3)] + [
        ProjectFactory(name=f"unused-project-{n}") for n in range(3)
    ]
    page = admin_client.get(URL).content.decode()
    assert not any(thing.name in page for thing in unused)
    assert 'data-field-name="pool"' in page and 'data-field-name="project"' in page
    for field, term, found in (("pool", "elsewhere", other), ("project", "needle", project)):
        answer = admin_client.get(
            "/admin/autocomplete/",
            {"term": term, "app_label": "workflows", "model_name": "workflow", "field_name": field},
        )
        assert answer.status_code == 200
        assert answer.json()["results"] == [{"id": str(found.pk), "text": found.name}]
    for parameter, value in (("pool__id__exact", other.pk), ("project__id__exact", project.pk)):
        chosen = admin_client.get(URL, {parameter: value})
        assert _ids(chosen) == [mine.pk]
        assert f'<option value="{value}" selected' in chosen.content.decode()  # the choice stays shown
