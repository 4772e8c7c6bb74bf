"""Scale-out proof on one machine (docs/operations.md, "Scale-out proof").

The production shape on loopback: gunicorn with 2 workers, 2 Celery workers (prefork), 1 beat, both
watchers, PostgreSQL (the test database), Redis (TEST_BROKER_URL) and the simulated cluster. 500 workflows
(`make scale-test`; `make test` runs a round of 150)
(every tenth with two tasks) are submitted over HTTP by 16 clients; a third of the way through, while it holds
a message, one Celery worker is SIGKILLed and a new one started. Every workflow must end COMPLETED with
exactly one pod created per task: none lost (no workflow left unfinished, no task without a pod), none
duplicated (no pod created twice).

The simulated cluster runs in this process so that a store listener counts every pod creation, including pods
deleted afterwards; everything else is a process of its own. Waits poll against deadlines.
"""

from __future__ import annotations

import os
import threading
import time

import pytest
from django.conf import settings
from django.db import connection

from kubesim import EmulatorServer
from soak import counting, load
from soak.portal import POOL, database_url, spec, tasks_of
from soak.portal import configure_scale as configure
from soak.stack import Stack, environment
from tests.devstack import wait_until
from workflows.models import FINISHED_WORKFLOW, Task, TaskEvent, Workflow

pytestmark = [pytest.mark.scale, pytest.mark.django_db(transaction=True)]

WORKFLOWS = int(os.environ.get("SCALE_WORKFLOWS") or 150)  # `make scale-test`: 500; `make test`: a short round
CLIENTS = 16
INSTANCE = "scale-proof"
KILL_AFTER = WORKFLOWS // 3  # submissions answered before the SIGKILL
SETTLE_SECONDS = 300  # deadline for every workflow to finish after the last submission


@pytest.fixture
def broker_url():
    import redis

    url = os.environ.get("TEST_BROKER_URL")
    if not url:
        pytest.fail("TEST_BROKER_URL is not set: run it with `make scale-test`, which points it at Redis")
    client = redis.Redis.from_url(url)
    client.flushdb()  # messages an interrupted run left behind would create pods of rows that are gone
    yield url
    client.flushdb()


@pytest.fixture
def kubesim():
    counter = counting.PodCreations(INSTANCE)
    # the demo fleet; pods start and succeed within half a second, so 550 of them finish within the run
    kubelet = {"start_delay": 0.1, "run_seconds": 0.3}
    with EmulatorServer(host="127.0.0.1", port=0, fleet="demo", kubelet=kubelet) as server:
        server.emulator.add_listener(counter)
        yield server, counter
        assert not server.emulator.internal_errors, list(server.emulator.internal_errors)


@pytest.fixture
def stack(tmp_path, transactional_db, broker_url, kubesim):
    if connection.vendor != "postgresql":
        pytest.fail("the scale-out proof needs PostgreSQL: set DATABASE_URL (make scale-test does)")
    server, _ = kubesim
    token = configure(server.url)
    env = environment(database_url(connection.settings_dict), broker_url, settings.SECRET_KEY, INSTANCE)
    running = Stack(env, tmp_path, token=token)
    running.start_all(["worker1", "worker2"])
    try:
        wait_until(lambda: _web_answers(running.web_port) or running.exited(), timeout=90, what="gunicorn answers")
        for worker in ("worker1", "worker2"):  # consuming before the load starts: the kill must find work
            wait_until(lambda w=worker: " ready." in running.log(w) or running.exited(), timeout=90, what=worker)
        assert not running.exited(), _failed(running)
        yield running
    finally:
        running.stop()


def test_every_workflow_gets_one_pod_per_task_while_a_worker_is_killed(stack, kubesim):
    _, creations = kubesim
    started = time.perf_counter()
    sent = _submit_killing_a_worker(stack)
    assert not sent.failures, sent.failures[:5]
    assert len(sent.workflow_ids) == WORKFLOWS

    unfinished = Workflow.objects.exclude(status__in=FINISHED_WORKFLOW)
    wait_until(lambda: not unfinished.exists() or _died(stack), timeout=SETTLE_SECONDS, what="every workflow ends")
    assert not _died(stack), _failed(stack)
    total = time.perf_counter() - started

    pods = _assert_one_pod_per_task(sent.workflow_ids, creations.snapshot())
    held, redelivered = _assert_redelivered(stack)
    adopted = TaskEvent.objects.filter(kind="CREATED", message__contains="adopted").count()
    print(
        f"\nscale-out proof: {WORKFLOWS} workflows ({pods} tasks) in {total:.1f} s; "
        f"{WORKFLOWS / sent.seconds:.0f} submissions/s over {CLIENTS} clients; latency p50 "
        f"{1000 * sent.percentile(0.5):.0f} ms, p99 {1000 * sent.percentile(0.99):.0f} ms; "
        f"{held} message(s) held by the killed worker, all redelivered ({redelivered} redelivered in all); "
        f"{adopted} pod(s) adopted"
    )


def _submit_killing_a_worker(stack: Stack) -> load.Submissions:
    """Submit every workflow; from a third of them answered on, SIGKILL worker1 as soon as its log shows a
    message in hand (received, not finished), at two thirds whatever it shows, and start worker3."""
    lock, killed = threading.Lock(), threading.Event()

    def kill_one_worker(answered: int) -> None:
        if killed.is_set() or answered < KILL_AFTER:
            return
        if answered < 2 * KILL_AFTER and not counting.in_hand(stack.log("worker1")):
            return
        with lock:
            if not killed.is_set():
                stack.kill("worker1")  # SIGKILL: what it received stays unacknowledged in Redis
                stack.start_worker("worker3")
                killed.set()

    documents = [spec(index) for index in range(WORKFLOWS)]
    path = f"/api/pool/{POOL}/workflow"
    sent = load.submit_all(stack.web_port, stack.token, path, documents, CLIENTS, kill_one_worker)
    assert killed.is_set()
    return sent


def _assert_one_pod_per_task(workflow_ids: list[str], made: dict[str, int]) -> int:
    """None lost (every workflow stored and COMPLETED, every task's pod created), none duplicated (no pod
    created twice, none of no task, one CREATED event per task). Returns the number of tasks."""
    statuses = dict(Workflow.objects.values_list("workflow_id", "status"))
    assert set(statuses) == set(workflow_ids)
    assert set(statuses.values()) == {"COMPLETED"}, _not_completed(statuses)
    pods = set(Task.objects.values_list("pod_name", flat=True))
    assert len(pods) == Task.objects.count() == sum(map(tasks_of, range(WORKFLOWS)))
    assert not pods - set(made), f"tasks without a pod: {sorted(pods - set(made))[:5]}"
    assert not set(made) - pods, f"pods of no task: {sorted(set(made) - pods)[:5]}"
    assert [name for name, times in made.items() if times != 1] == []  # none created twice
    assert TaskEvent.objects.filter(kind="CREATED").count() == len(pods)
    return len(pods)


def _assert_redelivered(stack: Stack) -> tuple[int, int]:
    """The kill mattered: the worker held messages it never finished, each received again by another worker.
    Returns how many it held and how many messages were received more than once in all."""
    logs = {name: stack.log(name) for name in ("worker1", "worker2", "worker3")}
    held = counting.in_hand(logs["worker1"])
    again = set(counting.received(logs["worker2"]) + counting.received(logs["worker3"]))
    assert held, "the killed worker held no message: the kill proved nothing"
    assert held <= again, f"never delivered again: {held - again}"
    return len(held), counting.redelivered(*logs.values())


def _web_answers(port: int) -> bool:
    from tests.devstack import Api

    return Api(f"http://127.0.0.1:{port}").answers("/healthz")


def _died(stack: Stack) -> dict[str, int]:
    return {name: code for name, code in stack.exited().items() if name != "worker1"}


def _failed(stack: Stack) -> str:
    """Which processes exited (the killed worker included), with the end of each one's log."""
    return "; ".join(f"{name} exited ({code}): {stack.log(name)[-1500:]}" for name, code in stack.exited().items())


def _not_completed(statuses: dict[str, str]) -> list:
    return sorted((workflow, status) for workflow, status in statuses.items() if status != "COMPLETED")[:10]
