"""Every overlay in deploy/overlays renders, every object is valid Kubernetes, and the invariants hold."""

from __future__ import annotations

import copy

import pytest

from tests.deploy import checks
from tests.deploy.manifests import DEPLOY, of_kind, pod_spec, render, running, schema_problems

OVERLAYS = sorted(path.name for path in (DEPLOY / "overlays").iterdir() if (path / "kustomization.yaml").exists())
CHECKS = [
    checks.probe_problems,
    checks.watcher_probe_problems,
    checks.resource_problems,
    checks.secret_problems,
    checks.config_problems,
    checks.migration_problems,
    checks.selection_problems,
    checks.storage_problems,
    checks.security_problems,
]


def test_the_overlays_are_dev_and_production():
    assert OVERLAYS == ["dev", "production"]


@pytest.fixture(params=OVERLAYS)
def objects(request):
    return copy.deepcopy(render(DEPLOY / "overlays" / request.param))


def test_every_object_matches_the_kubernetes_schema(objects):
    assert len(objects) >= 15
    assert schema_problems(objects) == []


@pytest.mark.parametrize("check", CHECKS, ids=lambda check: check.__name__)
def test_invariant(objects, check):
    assert check(objects) == []


def test_exactly_one_beat(objects):
    assert checks.singleton_problems(objects, r"^celery -A portal beat", "beat") == []


@pytest.mark.parametrize(
    ("pattern", "what"),
    [
        (r"^python manage\.py watch_cluster$", "inventory watcher"),
        (r"^python manage\.py watch_workflows$", "workflow watcher"),
    ],
)
def test_two_replicas_or_more_of_each_watcher_rolling(objects, pattern, what):
    assert checks.sharded_problems(objects, pattern, what) == []


def test_web_rolls_out_without_downtime(objects):
    (web,) = running(objects, r"^gunicorn portal\.wsgi")
    assert web["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"] == 0


def test_network_policy_admits_the_ingress_controller_and_reaches_the_services(objects):
    policies = {obj["metadata"]["name"]: obj for obj in of_kind(objects, "NetworkPolicy")}
    web = policies["pool-portal-web"]["spec"]
    assert web["podSelector"]["matchLabels"]["app.kubernetes.io/component"] == "web"
    sources = [peer["namespaceSelector"]["matchLabels"] for rule in web["ingress"] for peer in rule["from"]]
    assert {"kubernetes.io/metadata.name": "ingress-nginx"} in sources
    every = policies["pool-portal"]["spec"]
    assert every["ingress"] == [] and set(every["policyTypes"]) == {"Ingress", "Egress"}
    ports = {port["port"] for rule in every["egress"] for port in rule["ports"]}
    assert ports >= {53, 5432, 6379, 443, 6443}  # DNS, PostgreSQL, Redis, IdP and API servers


def test_ingress_routes_to_the_web_service(objects):
    (ingress,) = of_kind(objects, "Ingress")
    services = {obj["metadata"]["name"] for obj in of_kind(objects, "Service")}
    paths = [path for rule in ingress["spec"]["rules"] for path in rule["http"]["paths"]]
    backends = [path["backend"]["service"]["name"] for path in paths]
    assert backends and set(backends) <= services


# The checks themselves: each catches the regression it is there for.


def production():
    return list(copy.deepcopy(render(DEPLOY / "overlays" / "production")))


def deployment(objects, pattern):
    (found,) = running(objects, pattern)
    return found


def test_checks_catch_a_second_beat_and_a_lone_or_recreated_watcher():
    objects = production()
    deployment(objects, r"beat")["spec"]["replicas"] = 2
    deployment(objects, r"beat")["spec"]["strategy"] = {"type": "RollingUpdate"}
    deployment(objects, r"watch_cluster")["spec"]["replicas"] = 1
    deployment(objects, r"watch_workflows")["spec"]["strategy"] = {"type": "Recreate"}
    assert checks.singleton_problems(objects, r"beat", "beat") == [
        "beat: replicas 2, expected 1",
        "beat: strategy {'type': 'RollingUpdate'}, expected Recreate",
    ]
    assert checks.sharded_problems(objects, r"watch_cluster", "w") == ["w: replicas 1, expected 2 or more"]
    assert checks.sharded_problems(objects, r"watch_workflows", "w") == [
        "w: strategy {'type': 'Recreate'}, expected RollingUpdate with maxUnavailable 0"
    ]


def test_checks_catch_a_missing_probe_limit_and_a_literal_secret():
    objects = production()
    worker = deployment(objects, r"portal worker")["spec"]["template"]["spec"]["containers"][0]
    del worker["readinessProbe"], worker["resources"]["limits"]
    worker["env"] = [{"name": "SECRET_KEY", "value": "hunter2"}]
    assert checks.probe_problems(objects) == ["Deployment pool-portal-worker portal: no readinessProbe"]
    assert checks.resource_problems(objects) == ["Deployment pool-portal-worker portal: no limits for cpu, memory"]
    assert checks.secret_problems(objects) == ["Deployment pool-portal-worker portal: SECRET_KEY has a literal value"]


def test_checks_catch_a_watcher_probe_on_another_heartbeat_or_failing_without_a_database():
    objects = production()
    assert checks.watcher_probe_problems(objects) == []
    cluster = deployment(objects, r"watch_cluster$")["spec"]["template"]["spec"]["containers"][0]
    workflows = deployment(objects, r"watch_workflows$")["spec"]["template"]["spec"]["containers"][0]
    cluster["livenessProbe"]["exec"]["command"][3] = "watch_workflows"
    workflows["livenessProbe"]["exec"]["command"].remove("--ok-without-database")
    workflows["readinessProbe"]["exec"]["command"].append("--ok-without-database")
    cluster["readinessProbe"]["exec"]["command"].remove("--this-replica")
    del workflows["startupProbe"]
    assert checks.watcher_probe_problems(objects) == [
        "watch_cluster livenessProbe: runs ['python', 'manage.py', 'watcher_health', 'watch_workflows'], "
        "expected ['python', 'manage.py', 'watcher_health', 'watch_cluster']",
        "watch_cluster readinessProbe: --this-replica missing (it would fail on other replicas)",
        "watch_workflows startupProbe: runs [], expected ['python', 'manage.py', 'watcher_health', 'watch_workflows']",
        "watch_workflows livenessProbe: --ok-without-database missing",
        "watch_workflows readinessProbe: --ok-without-database set",
    ]


def test_checks_catch_a_secret_with_values_and_a_password_in_the_config():
    objects = production()
    objects.append({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "stringData": {"a": "b"}})
    (config,) = of_kind(objects, "ConfigMap")
    config["data"]["DATABSE_URL"] = "postgres://portal:pw@db/portal"  # misspelt, and with a password
    assert checks.secret_problems(objects) == [
        "Secret s carries values",
        f"ConfigMap {config['metadata']['name']}: DATABSE_URL belongs in the Secret",
    ]
    assert checks.config_problems(objects) == ["ConfigMap: DATABSE_URL is read by nothing"]


def test_checks_catch_a_dangling_budget_and_a_missing_migration():
    objects = production()
    (pdb,) = [obj for obj in of_kind(objects, "PodDisruptionBudget") if obj["metadata"]["name"] == "pool-portal-web"]
    pdb["spec"]["selector"]["matchLabels"]["app.kubernetes.io/component"] = "webb"
    objects = [obj for obj in objects if obj["kind"] != "Job"]
    assert checks.selection_problems(objects) == [
        "PodDisruptionBudget pool-portal-web selects [], expected one Deployment",
        "web: no PodDisruptionBudget",
    ]
    assert checks.migration_problems(objects) == ["0 migrate Jobs, expected one"]


def test_schema_check_refuses_an_unknown_field():
    objects = production()
    deployment(objects, r"beat")["spec"]["replica"] = 1
    (problem,) = schema_problems(objects)
    assert problem.startswith("Deployment pool-portal-beat:") and "replica" in problem


def test_checks_catch_a_probe_host_django_refuses_and_replicas_beside_an_autoscaler():
    objects = production()
    web = deployment(objects, r"^gunicorn")
    web["spec"]["replicas"] = 3
    web["spec"]["template"]["spec"]["containers"][0]["readinessProbe"]["httpGet"]["httpHeaders"] = []
    assert checks.probe_problems(objects) == ["web readinessProbe: Host [] is not in ALLOWED_HOSTS"]
    assert checks.selection_problems(objects) == [
        "HorizontalPodAutoscaler pool-portal-web: Deployment pool-portal-web sets replicas (an apply resets the HPA's)"
    ]


def test_checks_catch_a_pod_outside_the_restricted_standard():
    objects = production()
    job = next(obj for obj in objects if obj["kind"] == "Job")
    del job["spec"]["template"]["spec"]["securityContext"]["seccompProfile"]
    job["spec"]["template"]["spec"]["containers"][0]["securityContext"]["capabilities"] = {"add": ["NET_ADMIN"]}
    assert checks.security_problems(objects) == [
        "Job pool-portal-migrate: no RuntimeDefault seccomp profile",
        "Job pool-portal-migrate portal: capabilities not all dropped",
    ]


def test_checks_catch_an_archive_dir_on_no_volume_and_a_missing_claim(objects):
    worker = next(obj for obj in running(objects, r"^celery -A portal worker") if obj["kind"] == "Deployment")
    spec = pod_spec(worker)
    spec["volumes"] = [v for v in spec["volumes"] if v["name"] != "archive"]
    assert checks.storage_problems(objects) == [
        "Deployment pool-portal-worker: WORKFLOW_ARCHIVE_DIR /var/lib/pool-portal/archive is on no persistent volume"
    ]
    spec["volumes"].append({"name": "archive", "persistentVolumeClaim": {"claimName": "elsewhere"}})
    assert "names claim elsewhere, which is not there" in checks.storage_problems(objects)[0]
