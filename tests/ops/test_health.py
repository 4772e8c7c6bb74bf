"""/healthz and /readyz against real components: PostgreSQL, Redis (TEST_BROKER_URL), the kubesim emulator
over HTTP, and a closed port for a cluster or broker that does not answer."""

from __future__ import annotations

import json
import os

import pytest

from clusters.models import Backend
from configs import store
from portal.celery import app
from tests.ops.conftest import closed_port
from tests.security.test_production_settings import run
from tests.workflows.conftest import CLI


def readyz(client, **headers):
    response = client.get("/readyz", **headers)
    return response.status_code, response.json()


def test_healthz_answers_without_the_database(client):
    response = client.get("/healthz")  # no `db` fixture: a query would fail the test
    assert response.status_code == 200 and response.json() == {"status": "ok"}
    assert response["Cache-Control"] == "no-store"


@pytest.mark.django_db
def test_ready_without_a_backend_or_a_broker_says_so(client):
    status, body = readyz(client)
    assert status == 200 and body["status"] == "ok"
    assert body["checks"] == {
        "database": {"status": "ok", "reason": "postgresql answers"},
        "broker": {"status": "ok", "reason": "embedded (no broker): tasks run in-process"},
        "cluster": {"status": "ok", "reason": "no backend configured"},
    }


def test_ready_with_a_reachable_cluster(client, backend):
    status, body = readyz(client)
    assert status == 200
    assert body["checks"]["cluster"]["status"] == "ok"
    assert body["checks"]["cluster"]["reason"].startswith("backend sim answers (Kubernetes v1.")


@pytest.mark.django_db
def test_an_unreachable_cluster_fails_readiness_and_the_answer_is_cached(client, settings):
    url = f"http://127.0.0.1:{closed_port()}"
    store.apply("BACKEND", "gone", {"namespace": "jobs", "api_url": url}, CLI)
    status, body = readyz(client)
    assert status == 503 and body["status"] == "error"
    assert body["checks"]["cluster"] == {
        "status": "error",
        "reason": "no backend reachable (gone: timeout or network error)",
    }
    assert body["checks"]["database"]["status"] == "ok"
    assert url not in str(body)  # addresses stay out of an unauthenticated answer

    Backend.objects.filter(name="gone").delete()  # within the cache period the answer stands
    assert readyz(client)[0] == 503
    settings.READINESS_CLUSTER_CACHE_SECONDS = 0
    status, body = readyz(client)
    assert status == 200 and body["checks"]["cluster"]["reason"] == "no backend configured"


@pytest.mark.django_db
def test_a_cluster_check_that_is_not_required_is_reported_only(client, settings):
    settings.READINESS_REQUIRES_CLUSTER = False
    store.apply("BACKEND", "gone", {"namespace": "jobs", "api_url": f"http://127.0.0.1:{closed_port()}"}, CLI)
    status, body = readyz(client)
    assert status == 200 and body["status"] == "ok" and body["checks"]["cluster"]["status"] == "error"


def test_a_database_that_does_not_answer_fails_readiness(tmp_path):
    """A process whose database is a closed port: /readyz says so (and the cluster check, which needs the
    database to list backends, says why too); /healthz stays 200."""
    script = (
        "import django, json; django.setup(); from django.test import Client; c = Client(); "
        "r = c.get('/readyz'); print(r.status_code, json.dumps(r.json()['checks'])); "
        "print(c.get('/healthz').status_code)"
    )
    url = f"postgres://postgres:db-pass@127.0.0.1:{closed_port()}/portal"
    process = run(["-c", script], tmp_path, DEBUG="true", DATABASE_URL=url)
    assert process.returncode == 0, process.stderr
    first, second = process.stdout.strip().splitlines()[-2:]
    status, checks = first.split(" ", 1)
    checks = json.loads(checks)
    assert status == "503" and second == "200"
    assert checks["database"]["status"] == "error" and checks["database"]["reason"].startswith("OperationalError")
    assert checks["cluster"]["status"] == "error" and checks["broker"]["status"] == "ok"
    assert "db-pass" not in first


@pytest.mark.django_db
def test_one_reachable_backend_is_enough(client, backend):
    store.apply("BACKEND", "gone", {"namespace": "jobs", "api_url": f"http://127.0.0.1:{closed_port()}"}, CLI)
    Backend.objects.filter(name="gone").update(online=True)  # tried first; it fails, sim answers
    status, body = readyz(client)
    assert status == 200 and body["checks"]["cluster"]["reason"].startswith("backend sim answers")


@pytest.fixture
def broker(monkeypatch):
    """Celery as a deployment runs it: a broker, tasks not eager."""

    def use(url: str) -> None:
        monkeypatch.setitem(app.conf, "task_always_eager", False)
        monkeypatch.setitem(app.conf, "broker_url", url)
        app._pool = None

    yield use
    monkeypatch.undo()
    app._pool = None


@pytest.mark.django_db
def test_the_redis_broker_is_checked(client, broker):
    broker(os.environ["TEST_BROKER_URL"])
    status, body = readyz(client)
    assert status == 200 and body["checks"]["broker"] == {"status": "ok", "reason": "broker answers"}


@pytest.mark.django_db
def test_an_unreachable_broker_fails_readiness_without_its_password(client, broker):
    broker(f"redis://:s3cret-pass@127.0.0.1:{closed_port()}/0")
    status, body = readyz(client)
    assert status == 503 and body["checks"]["broker"]["status"] == "error"
    assert "Connection refused" in body["checks"]["broker"]["reason"]
    assert "s3cret-pass" not in str(body)


@pytest.mark.django_db
def test_probes_pass_host_checks_and_the_https_redirect(client, settings):
    """Kubelet calls the pod's IP over plain HTTP: no ALLOWED_HOSTS refusal, no redirect to HTTPS."""
    settings.SECURE_SSL_REDIRECT = True
    settings.ALLOWED_HOSTS = ["portal.example.com"]
    for path in ("/healthz", "/readyz"):
        assert client.get(path, HTTP_HOST="10.42.0.7:8000").status_code == 200
    assert client.get("/login/", HTTP_HOST="10.42.0.7:8000").status_code == 400  # the rest is still guarded


@pytest.mark.django_db
def test_only_get_and_head(client):
    assert client.post("/healthz").status_code == 405
    assert client.head("/readyz").status_code == 200
