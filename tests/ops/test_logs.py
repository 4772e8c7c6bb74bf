"""Structured logs and request ids: the middleware, the JSON lines, and the id carried into Celery tasks,
in-process (eager, the embedded default) and through a real worker on Redis."""

from __future__ import annotations

import json
import logging
import sys

import pytest

from portal.logs import JsonFormatter, RequestIdFilter, request_id
from tests.security.test_production_settings import run
from tests.workflows.conftest import api, spec, wait_until

CREATE_LOGGER = "workflows.lifecycle.create"  # one line per workflow whose pods were created


class Records(logging.Handler):
    """Records of one logger as the console handler sees them (with the request id filter)."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.records: list[logging.LogRecord] = []
        self.addFilter(RequestIdFilter())

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def create_log():
    logger = logging.getLogger(CREATE_LOGGER)
    handler, level = Records(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)  # the test worker may have set the root logger higher
    yield handler
    logger.removeHandler(handler)
    logger.setLevel(level)


def test_a_sane_request_id_is_kept_and_returned(client):
    response = client.get("/healthz/", HTTP_X_REQUEST_ID="abc-123.x:y")  # not an ops path: the full stack
    assert response["X-Request-ID"] == "abc-123.x:y"


@pytest.mark.parametrize("sent", ["", "has space", "x" * 129, "new\nline", "ünïcode"])
def test_an_insane_request_id_is_replaced(client, sent):
    response = client.get("/healthz/", HTTP_X_REQUEST_ID=sent)
    assert response["X-Request-ID"] != sent and len(response["X-Request-ID"]) == 32


def test_json_lines_carry_the_request_id_and_the_exception():
    record = logging.LogRecord("portal.test", logging.ERROR, __file__, 1, "failed %s", ("here",), None)
    try:
        raise ValueError("boom")
    except ValueError:
        record.exc_info = sys.exc_info()
    token = request_id.set("req-7")
    try:
        RequestIdFilter().filter(record)
    finally:
        request_id.reset(token)
    line = JsonFormatter().format(record)
    assert "\n" not in line
    entry = json.loads(line)
    assert {k: entry[k] for k in ("level", "logger", "message", "request_id")} == {
        "level": "ERROR",
        "logger": "portal.test",
        "message": "failed here",
        "request_id": "req-7",
    }
    assert entry["time"].endswith("+00:00") and "ValueError: boom" in entry["exception"]


def test_log_format_json_is_chosen_by_the_environment(tmp_path):
    script = "import django; django.setup(); import logging; logging.getLogger('portal.x').warning('hello %d', 5)"
    process = run(["-c", script], tmp_path, DEBUG="true", LOG_FORMAT="json")
    assert process.returncode == 0, process.stderr
    entry = json.loads(process.stderr.strip().splitlines()[-1])
    assert entry["message"] == "hello 5" and entry["logger"] == "portal.x" and entry["request_id"] is None
    text = run(["-c", script], tmp_path, DEBUG="true")
    assert text.stderr.strip().splitlines()[-1] == "hello 5"  # the default: plain text for a terminal
    bad = run(["manage.py", "check"], tmp_path, DEBUG="true", LOG_FORMAT="xml")
    assert bad.returncode != 0 and "LOG_FORMAT='xml': expected text or json" in bad.stderr


@pytest.mark.django_db(transaction=True)  # on_commit runs at the commit, inside the request, as in production
def test_an_eager_task_logs_with_the_request_id(pool, alice, create_log):
    response = api(alice).post("/api/pool/batch/workflow", spec("eager"), format="json", HTTP_X_REQUEST_ID="req-eager")
    assert response.status_code == 200 and response["X-Request-ID"] == "req-eager"
    [record] = create_log.records
    assert record.request_id == "req-eager" and "1 pod(s) created" in record.getMessage()
    assert request_id.get() is None  # nothing leaks past the request


@pytest.mark.django_db(transaction=True)
def test_a_worker_task_logs_with_the_request_id_of_the_request_that_enqueued_it(redis_worker, pool, alice, create_log):
    response = api(alice).post("/api/pool/batch/workflow", spec("queued"), format="json", HTTP_X_REQUEST_ID="req-redis")
    assert response.status_code == 200
    record = wait_until(lambda: create_log.records and create_log.records[0], timeout=20, what="the worker's line")
    assert record.request_id == "req-redis"
    assert record.threadName != "MainThread"  # logged by the worker's thread, from the message header
