"""portal.broker: the Redis transport keeps one client per channel and still moves messages (real Redis)."""

from __future__ import annotations

import os

import pytest
from kombu import Connection

from portal.broker import Transport
from portal.celery import app
from tests.polling import PATIENCE


@pytest.fixture
def broker_url() -> str:
    url = os.environ.get("TEST_BROKER_URL")
    if not url:
        pytest.fail("TEST_BROKER_URL is not set: run the suite with `make test`, which points it at Redis")
    return url


def test_redis_urls_use_the_portal_transport(broker_url):
    assert app.conf.broker_transport is None  # chosen by the URL's scheme, not by a setting
    with Connection(broker_url) as connection:
        assert isinstance(connection.transport, Transport)


def test_one_client_per_channel_and_messages_still_flow(broker_url):
    with Connection(broker_url) as connection:
        queue = connection.SimpleQueue("pool-portal-broker-test")
        try:
            channel = queue.channel
            first = channel._create_client()
            for number in range(3):
                queue.put({"n": number})
            assert channel._create_client() is first
            received = []
            for _ in range(3):
                message = queue.get(timeout=PATIENCE)
                received.append(message.payload["n"])
                message.ack()
            assert received == [0, 1, 2]
            channel._pool = None  # a new pool (as after a reconnect) gets a new client
            assert channel._create_client() is not first
        finally:
            queue.clear()
            queue.close()


def test_a_lost_message_returns_after_the_longest_task_and_retry_wait_not_after_an_hour(settings):
    from portal.celery import app

    visibility = app.conf.broker_transport_options["visibility_timeout"]
    longest_wait = max(settings.CELERY_TASK_TIME_LIMIT, settings.WORKFLOW_CREATE_BACKOFF_MAX, 300)
    assert longest_wait < visibility <= longest_wait + 60 < 3600


def test_every_worker_looks_for_lost_messages_every_minute(settings):
    """kombu's own default scans only on every tenth 10-second tick: a lost message could wait 100 s more."""
    from portal.celery import app

    options = app.conf.broker_transport_options
    assert options["unacked_restore_interval"] * options["unacked_restore_throttle"] == 60


def test_a_channel_whose_connection_is_gone_fails_as_a_lost_connection_and_keeps_its_messages(broker_url):
    """A worker's broker went away while it held prefetched messages: Celery closes the dead connection, then still
    acknowledges a message that finished and closes the channel. Both must fail as a lost connection, which Celery
    handles, never with the AttributeError the worker stopped on, and lose nothing: the messages stay in Redis'
    unacked hash for the visibility-timeout restore (found by the soak's Redis restart)."""
    import redis as redis_py

    client = redis_py.Redis.from_url(broker_url)
    client.delete("pool-portal-broker-gone", "unacked", "unacked_index")
    connection = Connection(broker_url)
    lost_connection = connection.connection_errors
    channel = connection.channel()
    queue = connection.SimpleQueue("pool-portal-broker-gone", channel=channel)
    try:
        queue.put({"n": 1})
        queue.put({"n": 2})
        first = queue.get(timeout=PATIENCE)  # received, not acknowledged
        queue.get(timeout=PATIENCE)
        assert client.hlen("unacked") == 2
        channel._disconnect_pools()  # what kombu's teardown does before the channel's close: the connection is gone
        connection._do_close_transport()
        with pytest.raises(lost_connection):
            first.ack()
        channel.close()
        assert client.hlen("unacked") == 2  # still there: a worker restores them after the visibility timeout
    finally:
        client.delete("pool-portal-broker-gone", "unacked", "unacked_index")
