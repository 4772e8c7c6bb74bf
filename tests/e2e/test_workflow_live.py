"""A running workflow's page in a browser, backed by a simulated cluster of the test's own: the container log
appears and follows (new lines appended, none twice), the elapsed time ticks, and the page fits 1440 and 390
px with the log scrolling inside its pane. Screenshots: var/screenshots/workflow-live-<width>.png."""

from __future__ import annotations

import re

import pytest

from clusters.models import Backend, Node
from kubesim import EmulatorServer
from quotas.services.node_pools import NODE_POOL_LABEL
from tests.e2e.looks import DESKTOP, PHONE, collect_failures, shoot
from tests.e2e.test_submit_preview import sign_in
from tests.integration.conftest import demo_pools, reference_config  # noqa: F401  (fixtures)
from tests.polling import wait_until
from tests.selfservice.conftest import TRAINING, demo_world  # noqa: F401  (fixture)
from tests.selfservice.test_pages import SPEC
from workflows import reconcile
from workflows.models import TaskStatus, Workflow

LINES = "#log-lines .log-line"


def running_workflow(world, cluster) -> Workflow:
    """Submitted through the page to a cluster whose kubelet runs it for an hour; the portal has seen it run."""
    Backend.objects.update(api_url=cluster.url)
    # the cluster stands in for the one the portal synced: its nodes carry the node-pool labels the portal put on
    # them (docs/quotas.md#confinement), which confine the pod
    for name, labels in Node.objects.filter(backend__pools__name=TRAINING).values_list("name", "labels"):
        if NODE_POOL_LABEL in labels:
            cluster.emulator.patch("nodes", name, {"metadata": {"labels": {NODE_POOL_LABEL: labels[NODE_POOL_LABEL]}}})
    submitted = world.client(world.researcher).post(f"/pools/{TRAINING}/submit/", {"spec": SPEC, "priority": "NORMAL"})
    assert submitted.status_code == 302
    workflow = Workflow.objects.get()
    backend_id = workflow.pool.backend_id

    def running() -> bool:
        reconcile.reconcile_backend(backend_id)
        return workflow.tasks.get().status == TaskStatus.RUNNING

    wait_until(running, timeout=20, interval=0.2, what="the task running in the simulated cluster")
    return workflow


def step_numbers(page) -> list[int]:
    texts = page.eval_on_selector_all(LINES, "rows => rows.map(row => row.textContent)")
    return [int(match.group(1)) for text in texts if (match := re.search(r": running, (\d+) s$", text))]


@pytest.mark.django_db(transaction=True)
def test_a_running_workflow_follows_its_log_and_ticks(page, live_server, demo_world):  # noqa: F811
    base = live_server.url
    with EmulatorServer(
        host="127.0.0.1", port=0, fleet="demo", kubelet={"start_delay": 0, "run_seconds": 3600}
    ) as cluster:
        workflow = running_workflow(demo_world, cluster)
        url = f"{base}/workflows/{workflow.workflow_id}/"
        failures = collect_failures(page)
        page.set_viewport_size({"width": DESKTOP, "height": 900})
        sign_in(page, base, "researcher", next_path=f"/workflows/{workflow.workflow_id}/")

        page.wait_for_selector(LINES)
        assert "[simulated] python train.py: not run here" in page.locator(LINES).first.text_content()
        shown = page.locator(LINES).count()
        page.wait_for_function(
            "n => document.querySelectorAll('#log-lines .log-line').length > n", arg=shown, timeout=15000
        )  # followed: the next second's line was appended
        steps = step_numbers(page)
        assert steps and steps == list(range(steps[0], steps[0] + len(steps)))  # in order, none twice or missed

        clock = page.locator("#workflow-elapsed").text_content()
        page.wait_for_function("t => document.getElementById('workflow-elapsed').textContent !== t", arg=clock)
        assert re.fullmatch(r"\d+s|\d+m \d\ds", page.locator("#workflow-elapsed").text_content())
        assert page.locator("#log-state").text_content() == "following"

        overflow = shoot(page, url, "workflow-live", ready=LINES)
        pane = page.evaluate(
            "() => { const p = document.getElementById('log-lines'); "
            "return {inner: p.scrollWidth, shown: p.clientWidth, page: document.documentElement.clientWidth}; }"
        )
        assert overflow == {DESKTOP: 0, PHONE: 0}
        assert pane["shown"] < pane["page"]  # at 390 px the log scrolls inside its pane, not the page

        # cancelled from the page: it says by whom and when, and the log pane why there is no more log
        page.once("dialog", lambda dialog: dialog.accept())
        page.click("#cancel-workflow")
        page.wait_for_selector("#ending-train time[title]")  # the page's script has put it in the local time
        ending = " ".join(page.locator("#ending-train").text_content().split())
        when = page.locator("#ending-train time").text_content()  # in the browser's locale, by the page's script
        assert ending == f"Cancelled by researcher at {when}" and not when.endswith("UTC")
        page.wait_for_selector("#log-notice[data-state=gone]")
        cancelled = shoot(page, url, "workflow-cancelled", ready="#log-notice[data-state=gone]")
    assert cancelled == {DESKTOP: 0, PHONE: 0}
    assert failures == []
