"""Backend and Node moved from `pools` to `clusters` (issue #10) without losing a row or a reference.

A PostgreSQL database is taken back to the last migration before the move, filled as `make dev`'s demo
would be (backends, one with a secret, nodes, a pool and platforms on a backend, memberships, a workflow
in the pool), then migrated forward: every row keeps its id and values, every foreign key its target,
and the database still enforces the foreign keys (now pointing at the renamed tables).
"""

from __future__ import annotations

import pytest
from django.db import IntegrityError, connection, transaction
from django.db.migrations.executor import MigrationExecutor
from tests.migrations.migrating import leaves, migrate

BEFORE = ("pools", "0003_encrypted_backend_secrets")
MOVED_APPS = ("pools", "clusters")
BUILT_ON_CLUSTERS = ("quotas", "usage")  # their migrations depend on clusters': unapplied with them, then applied again

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def before_the_move():
    latest = leaves()
    before = [node for node in latest if node[0] not in (*MOVED_APPS, *BUILT_ON_CLUSTERS)] + [BEFORE]
    try:
        yield migrate(before), latest
    finally:
        migrate(latest)  # whatever happened: the next test finds the current schema


def _fill(apps) -> dict:
    Backend, Node = apps.get_model("pools", "Backend"), apps.get_model("pools", "Node")
    Pool, Platform = apps.get_model("pools", "Pool"), apps.get_model("pools", "Platform")
    NodeMembership = apps.get_model("pools", "NodeMembership")
    User, Workflow = apps.get_model("auth", "User"), apps.get_model("workflows", "Workflow")
    sim = Backend.objects.create(name="sim", connection="url", api_url="http://127.0.0.1:8001", token="s3cret",
                                 sync_status="ok", online=True, server_version="v1.30")
    idle = Backend.objects.create(name="idle")
    nodes = [Node.objects.create(backend=sim, name=f"gpu-{i}", labels={"gpu": "a100"}, gpu_allocatable=8,
                                 cpu_allocatable=64000, gpu_used=i) for i in range(3)]
    Node.objects.create(backend=idle, name="cpu-0", cpu_allocatable=8000)
    pool = Pool.objects.create(name="batch", backend=sim)
    a100, spare = Platform.objects.create(pool=pool, name="a100"), Platform.objects.create(pool=pool, name="spare")
    for node in nodes:
        NodeMembership.objects.create(node=node, platform=a100, pool=pool)
    NodeMembership.objects.create(node=nodes[0], platform=spare, pool=pool)
    user = User.objects.create(username="alice")
    workflow = Workflow.objects.create(workflow_id="wf-1", name="train", pool=pool, submitted_by=user)
    content_type = apps.get_model("contenttypes", "ContentType").objects.get(app_label="pools", model="backend")
    return {"content_type": content_type.pk, "sim": sim.pk, "idle": idle.pk, "nodes": {n.name: n.pk for n in nodes}, "pool": pool.pk,
            "a100": a100.pk, "spare": spare.pk, "workflow": workflow.pk}


def test_backends_nodes_and_memberships_survive_the_move(before_the_move):
    old_apps, latest = before_the_move
    ids = _fill(old_apps)

    apps = migrate(latest)

    Backend, Node = apps.get_model("clusters", "Backend"), apps.get_model("clusters", "Node")
    Pool, Platform = apps.get_model("pools", "Pool"), apps.get_model("pools", "Platform")
    sim = Backend.objects.get(pk=ids["sim"])
    assert (sim.name, sim.api_url, sim.token, sim.sync_status, sim.server_version) == (
        "sim", "http://127.0.0.1:8001", "s3cret", "ok", "v1.30")  # the secret still decrypts
    assert Backend.objects.get(pk=ids["idle"]).name == "idle"
    assert dict(Node.objects.filter(backend=sim).values_list("name", "pk")) == ids["nodes"]
    assert Node.objects.get(name="gpu-2").gpu_used == 2 and Node.objects.get(name="gpu-0").labels == {"gpu": "a100"}
    assert list(Node.objects.filter(backend_id=ids["idle"]).values_list("name", flat=True)) == ["cpu-0"]
    pool = Pool.objects.get(pk=ids["pool"])
    assert pool.backend_id == ids["sim"] and pool.backend.name == "sim"
    assert sorted(Platform.objects.get(pk=ids["a100"]).nodes.values_list("name", flat=True)) == ["gpu-0", "gpu-1",
                                                                                                  "gpu-2"]
    assert list(Node.objects.get(name="gpu-0").platforms.order_by("name").values_list("name", flat=True)) == [
        "a100", "spare"]
    assert apps.get_model("workflows", "Workflow").objects.get(pk=ids["workflow"]).pool_id == ids["pool"]
    # Admin log entries and permissions keep their content type: the same row, relabelled.
    content_type = apps.get_model("contenttypes", "ContentType").objects.get(pk=ids["content_type"])
    assert (content_type.app_label, content_type.model) == ("clusters", "backend")
    # New rows continue the old id sequences.
    assert Backend.objects.create(name="later").pk > ids["idle"]
    assert Node.objects.create(backend=sim, name="gpu-9").pk > max(ids["nodes"].values())


def test_the_database_enforces_the_foreign_keys_to_the_renamed_tables(before_the_move):
    old_apps, latest = before_the_move
    _fill(old_apps)

    migrate(latest)

    with connection.cursor() as cursor:
        targets = {(table, column): constraint["foreign_key"]
                   for table in ("pools_pool", "pools_nodemembership", "clusters_node")
                   for constraint in connection.introspection.get_constraints(cursor, table).values()
                   if constraint["foreign_key"] for column in constraint["columns"]}
    assert targets[("pools_pool", "backend_id")] == ("clusters_backend", "id")
    assert targets[("pools_nodemembership", "node_id")] == ("clusters_node", "id")
    assert targets[("clusters_node", "backend_id")] == ("clusters_backend", "id")
    with pytest.raises(IntegrityError), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("UPDATE pools_pool SET backend_id = %s", [10**9])
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
