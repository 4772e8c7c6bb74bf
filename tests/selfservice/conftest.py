"""Fixtures for the self-service pages: the demo pools on the demo fleet, and people holding roles.

`demo_world`: the seed documents' five pools (tests.integration.conftest) with every backend's node
inventory written from kubesim's demo fleet (29 nodes per backend, no pods), so capacity, membership
and the preview's node verdicts are real. People:

    researcher  osmo-user + osmo-robotics (robotics-* pools)
    nobody      no role at all
    admin       osmo-admin
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from access.services import roles
from clusters.inventory import PodIndex, write_nodes
from clusters.kube.node_pod_lists import node_record, pod_record
from clusters.models import Backend
from configs.revisions import Actor
from kubesim.fleet import demo_fleet
from tests.integration.conftest import demo_pools, reference_config  # noqa: F401  (fixtures used below)
from tests.quotas.confinement import label_rows_as_the_portal_does

ACTOR = Actor(name="tester", source="cli")
PASSWORD = "pw-for-tests-1"
TRAINING = "robotics-training"
OTHER = "team-development"  # a pool no role but osmo-admin allows


@dataclass
class World:
    researcher: object
    nobody: object
    admin: object

    def client(self, who) -> Client:
        client = Client()
        client.force_login(who)
        return client


def load_fleet(busy: dict[str, int] | None = None) -> None:
    """Every backend gets the demo fleet; `busy` = {node: GPUs} taken by running portal workload pods."""
    records = [node_record(node) for node in demo_fleet()]
    pods = [pod_record(workload_pod(f"busy-{node}", node, gpus)) for node, gpus in (busy or {}).items()]
    for backend_id in Backend.objects.values_list("pk", flat=True):
        write_nodes(backend_id, records, PodIndex.build(pods), complete=True)
        label_rows_as_the_portal_does(backend_id)  # the node-pool label pods select (docs/quotas.md)


def workload_pod(name: str, node: str, gpus: int) -> dict:
    requests = {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": str(gpus)}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "osmo-workflows", "labels": {"pool-portal/workflow": "w-1"}},
        "spec": {
            "nodeName": node,
            "containers": [{"name": "main", "image": "x", "resources": {"requests": requests, "limits": requests}}],
        },
        "status": {"phase": "Running"},
    }


def person(username: str, *role_names: str):
    user = get_user_model().objects.create_user(username, f"{username}@example.com", PASSWORD)
    if role_names:
        roles.update_user_roles(user, add=list(role_names), actor=ACTOR)
    return user


def make_world() -> World:
    roles.ensure_builtin_roles()  # a transactional test's flush removed the migration's roles
    roles.set_pool_role("osmo-robotics", ACTOR)
    load_fleet()
    return World(
        researcher=person("researcher", "osmo-user", "osmo-robotics"),
        nobody=person("nobody"),
        admin=person("boss", "osmo-admin"),
    )


@pytest.fixture
def demo_world(demo_pools) -> World:  # noqa: F811
    return make_world()


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
