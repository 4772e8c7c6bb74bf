"""My workflows (issue 35, point 7): filters by status and pool, a search of the workflow id, keyset pages
(the same queries on the first page and a deep one, with more rows), the queue position said once, and bad
input answered 400 with the field named."""

from __future__ import annotations

import re

from pools.models import Pool
from selfservice.services.workflows import PAGE_SIZE
from tests.factories import WorkflowFactory
from tests.queries import assert_constant_queries
from tests.selfservice.conftest import OTHER, TRAINING
from workflows.models import Workflow

ROW = re.compile(r'href="/workflows/([^/"]+)/"')


def ids(page) -> list[str]:
    return ROW.findall(page.content.decode().split('id="workflow-rows"')[1])


def mine(world, n: int, **fields) -> list[Workflow]:
    pool = Pool.objects.get(name=fields.pop("pool", TRAINING))
    return [WorkflowFactory(pool=pool, submitted_by=world.researcher, **fields) for _ in range(n)]


def test_filters_by_status_and_pool_and_searches_the_id(demo_world):
    mine(demo_world, 2, status="COMPLETED")
    failed = mine(demo_world, 1, status="FAILED", workflow_id="train-resnet-7")[0]
    other = mine(demo_world, 1, status="COMPLETED", pool=OTHER)[0]
    WorkflowFactory(pool=failed.pool, status="FAILED")  # someone else's: never listed
    client = demo_world.client(demo_world.researcher)
    assert len(ids(client.get("/workflows/"))) == 4
    assert ids(client.get("/workflows/?status=FAILED")) == ["train-resnet-7"]
    assert ids(client.get(f"/workflows/?pool={OTHER}")) == [other.workflow_id]
    assert ids(client.get("/workflows/?q=RESNET")) == ["train-resnet-7"]
    assert ids(client.get("/workflows/?status=COMPLETED&q=nothing-like-this")) == []
    page = client.get("/workflows/?status=COMPLETED&q=nothing-like-this").content.decode()
    assert "No workflow matches these filters." in page
    assert f"<option selected>{OTHER}</option>" in client.get(f"/workflows/?pool={OTHER}").content.decode()


def test_pages_are_keyset_and_cost_the_same_queries_however_deep(demo_world):
    made = mine(demo_world, PAGE_SIZE + 5)
    client = demo_world.client(demo_world.researcher)
    first = client.get("/workflows/")
    newest = [w.workflow_id for w in sorted(made, key=lambda w: (w.created_at, w.pk), reverse=True)]
    assert ids(first) == newest[:PAGE_SIZE]
    after = re.search(r'rel="next" href="\?after=([0-9.]+)"', first.content.decode()).group(1)
    second = client.get(f"/workflows/?after={after}")
    assert ids(second) == newest[PAGE_SIZE:]
    assert 'rel="next"' not in second.content.decode()  # the last page

    def deep_page():
        assert client.get(f"/workflows/?after={after}&status=QUEUED").status_code == 200

    assert_constant_queries(deep_page, lambda: mine(demo_world, 30, status="QUEUED"))
    assert_constant_queries(lambda: client.get("/workflows/"), lambda: mine(demo_world, 30))


def test_the_next_page_keeps_the_filters(demo_world):
    mine(demo_world, PAGE_SIZE + 1, status="FAILED")
    page = demo_world.client(demo_world.researcher).get("/workflows/?status=FAILED&q=hello").content.decode()
    assert re.search(r'href="\?status=FAILED&amp;q=hello&amp;after=[0-9.]+"', page)


def test_bad_filters_are_refused_naming_the_field(demo_world):
    client = demo_world.client(demo_world.researcher)
    for query, said in (
        ("status=SLEEPING", "status: Select a valid choice."),
        ("after=yesterday", "after is not a page cursor"),
        ("after=1.2.3", "after is not a page cursor"),
        (f"after={'9' * 20}.1", "after is out of range"),
        (f"q={'x' * 81}", "q: Ensure this value has at most 80 characters"),
    ):
        page = client.get(f"/workflows/?{query}")
        assert page.status_code == 400, query
        assert said in page.content.decode(), query


def test_a_queued_workflow_says_its_position_once(demo_world):
    reason = {"text": "vision: 8 of 8 guaranteed A100 GPUs in use; position 2 in the queue", "position": 2}
    mine(demo_world, 1, status="QUEUED", queue_reason=reason)
    page = demo_world.client(demo_world.researcher).get("/workflows/").content.decode()
    assert "#2 in queue: vision: 8 of 8 guaranteed A100 GPUs in use</div>" in page
    assert "position 2" not in page
