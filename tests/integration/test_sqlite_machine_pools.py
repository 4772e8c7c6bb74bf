"""Machine pools on the embedded default's database: the pages that count a machine pool's nodes by their
`node.kubernetes.io/machinepool` label answer on SQLite as on PostgreSQL (a JSON key compared the wrong way is
"malformed JSON" on SQLite only, a 500 the PostgreSQL suite never sees); so do the catalog and the admin home,
whose capacity is summed in SQL (no PostgreSQL-only aggregate).

A real `manage.py` process on a temporary SQLite file, seeded with the demo (its ROSA backend's two machine
pools), one node of `additional` in the inventory, the admin's pages read through Django's test client.
"""

from __future__ import annotations

import os

from tests.devstack import manage

READ_PAGES = """
from django.contrib.auth import get_user_model
from django.test import Client
from clusters.models import Backend, MachinePool, Node
from pools.models import Pool
from pools.services.machine_pool_capacity import growth
from pools.services.machine_pool_shapes import would_be_nodes

backend = Backend.objects.get(name="rosa-cluster-01")
labels = {"node.kubernetes.io/machinepool": "additional", "workload-type": "batch"}
Node.objects.create(backend=backend, name="additional-abcde", labels=labels, ready=True)
client = Client()
client.force_login(get_user_model().objects.get(username="admin"))
pool = MachinePool.objects.get(name="additional")
for url in ("/admin/clusters/machinepool/", f"/admin/clusters/machinepool/{pool.pk}/change/", "/admin/pools/pool/"):
    response = client.get(url)
    print(url, response.status_code, "1 (1 ready)" in response.content.decode())
spot = Pool.objects.get(name="robotics-spot")
print("capacity", bool(growth([spot.pk], {backend.pk})), [n.spec.name for n in would_be_nodes({backend.pk})])
from pools.models import NodeMembership
from pools.services.spot_capacity import spot_capacity
t4 = spot.platforms.get(name="t4-spot")
spot_node = Node.objects.create(backend=backend, name="t4-xyz12", labels={"node.kubernetes.io/capacity-type": "spot"})
NodeMembership.objects.create(node=spot_node, platform=t4, pool=spot)
NodeMembership.objects.create(node=Node.objects.get(name="additional-abcde"), platform=t4, pool=spot)
page = client.get(f"/admin/pools/poolcapacity/{spot.pk}/change/")
print("spot", spot_capacity(spot.platforms.select_related("pool")).get(t4.pk), page.status_code)
from pools.services import capacity_summary
live = client.get("/").status_code  # the catalog sums its capacity in portable SQL: SQLite has no array_agg
summarized = capacity_summary.refresh() == Pool.objects.count()
catalog = client.get("/").content.decode()
print("catalog", live, summarized, "Free and total GPUs as of" in catalog, client.get("/admin/").status_code)
"""


def test_the_machine_pool_pages_answer_on_sqlite(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_URL", "CELERY_", "TEST_"))}
    env.update(DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}", PORTAL_VAR_DIR=str(tmp_path), DEBUG="true")
    for step in (("migrate", "--noinput", "-v0"), ("seed_demo",), ("shell", "-c", READ_PAGES)):
        done = manage(env, *step)
        assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()[-6:]
    assert lines[0].startswith("/admin/clusters/machinepool/ 200 ")  # the node counts are on the pool's page
    assert lines[1].endswith(" 200 True") and lines[2] == "/admin/pools/pool/ 200 False"
    assert lines[3] == "capacity True ['ml-training']"  # additional has its node; ml-training is at zero
    # which platforms run on spot, read by node labels as SQLite compares JSON keys
    assert lines[4] == "spot spot node t4-xyz12; machine pool ml-training (no node yet) 200"
    assert lines[5] == "catalog 200 True True 200"  # the catalog and the dashboard, summed live and summarized
