"""The config store's doors delete a machine pool as the admin and `machinepool delete` do: the REST `DELETE
/api/configs/machine_pool/NAME`, `config delete MACHINE_POOL NAME` and a rollback of the whole type take the
platform and pod template made for it along, with the same revisions, and are refused (409 `in_use`, one
line and exit 1) while unfinished workflows use that platform. A PUT of the whole type keeps what it does not
name, platforms included."""

from __future__ import annotations

import pytest
from django.core.management import base

from clusters.models import MachinePool
from configs import store
from configs.models import Change, Revision
from pools.models import PodTemplate
from pools.services.machine_pool_platforms import make_platform
from tests.clirun import run_as_cli
from tests.factories import TaskFactory, WorkflowFactory
from tests.machinepools.conftest import CLI, gpu_spot, gpu_spot_went_with_its_platform, last, platforms
from workflows.models import Workflow, WorkflowStatus

URL = "/api/configs/machine_pool/{}"
REFUSAL = (
    "cannot be deleted while unfinished workflows use the platform made from it: rosa/gpu-spot (1 workflow: "
    "train-1). Its nodes and that platform would go with it: cancel them or let them finish, then delete it"
)


@pytest.fixture
def cli(capsys, monkeypatch):
    monkeypatch.setattr(base.connections, "close_all", lambda: None)  # keep the test's transaction
    return lambda *args: run_as_cli(capsys, "pools", "config", *args)


def untouched() -> None:
    """Nothing of gpu-spot went: the machine pool, its platform and template, and no deleted revision."""
    assert MachinePool.objects.filter(name="gpu-spot").exists() and "gpu-spot" in platforms()
    assert PodTemplate.objects.filter(name="machinepool-gpu-spot").exists()
    assert not last("MACHINE_POOL", "gpu-spot").deleted and not last("POD_TEMPLATE", "machinepool-gpu-spot").deleted


def test_the_rest_delete_takes_the_platform_and_template_along_with_their_revisions(made, admin_api, admin_user):
    answer = admin_api.delete(URL.format("gpu-spot"), {"description": "retired", "tags": ["gpu"]}, format="json")
    assert answer.status_code == 200, answer.json()
    assert answer.json() == {
        "config_type": "MACHINE_POOL",
        "name": "gpu-spot",
        "revision": 2,
        "deleted": True,
        "with": ["platform rosa/gpu-spot (POOL rosa revision 4)", "pod template machinepool-gpu-spot (revision 2)"],
    }
    pool, template, machine_pool = gpu_spot_went_with_its_platform()
    assert (pool.revision, template.revision, machine_pool.revision) == (4, 2, 2) and not pool.deleted
    written = (pool, template, machine_pool)
    assert {r.description for r in written} == {"machine pool gpu-spot deleted: retired"}
    assert {tuple(r.tags) for r in written} == {("gpu",)}
    assert {(r.author, r.author_name) for r in written} == {(admin_user, f"{admin_user.username} (api)")}
    # a machine pool with nothing made for it answers as any config object does
    admin_api.put(URL.format("bare"), {"configs": gpu_spot()}, format="json")
    bare = admin_api.delete(URL.format("bare"))
    assert bare.json() == {"config_type": "MACHINE_POOL", "name": "bare", "revision": 2, "deleted": True}


def test_the_rest_delete_is_refused_while_unfinished_workflows_use_the_platform(busy, admin_api):
    answer = admin_api.delete(URL.format("gpu-spot"))
    assert answer.status_code == 409
    body = answer.json()
    assert {k: body[k] for k in ("code", "field", "value", "reason")} == {
        "code": "in_use",
        "field": "name",
        "value": "gpu-spot",
        "reason": REFUSAL,
    }
    assert "old-1" not in body["reason"] and "plain-1" not in body["reason"]
    untouched()
    assert admin_api.delete(URL.format("ghost")).json()["code"] == "not_found"


def test_the_rest_delete_of_a_pools_default_platform_is_a_conflict_not_a_pool_error(made, admin_api):
    store.apply("POOL", "rosa", {**store.show("POOL", "rosa"), "default_platform": "gpu-spot"}, CLI)
    answer = admin_api.delete(URL.format("gpu-spot"))
    assert answer.status_code == 409
    assert {k: answer.json()[k] for k in ("code", "field", "value", "reason")} == {
        "code": "in_use",
        "field": "name",
        "value": "gpu-spot",
        "reason": "cannot be deleted while its platform rosa/gpu-spot is pool rosa's default_platform: choose "
        "another default for the pool first",
    }
    untouched()


def test_config_delete_prints_what_went_along_or_refuses_in_one_line(busy, cli):
    code, out, err = cli("delete", "MACHINE_POOL", "gpu-spot")
    assert (code, out) == (1, "") and err == f"error: name: {REFUSAL} (value: 'gpu-spot')\n"
    untouched()
    code, out, err = cli("delete", "machine_pool", "gpu-two", "--description", "retired", "--tags", "gpu")
    assert (code, err) == (0, "")
    assert out == (
        "MACHINE_POOL gpu-two deleted (revision 2), with platform rosa/gpu-two (POOL rosa revision 4) and "
        "pod template machinepool-gpu-two (revision 2)\n"
    )
    assert platforms() == ["gpu-spot", "plain"]
    written = (last("POOL", "rosa"), last("POD_TEMPLATE", "machinepool-gpu-two"), last("MACHINE_POOL", "gpu-two"))
    assert {(r.description, tuple(r.tags), r.author_name) for r in written} == {
        ("machine pool gpu-two deleted: retired", ("gpu",), "system (cli)")
    }
    code, _, err = cli("delete", "MACHINE_POOL", "ghost")
    assert code == 1 and err == "error: name: no machine pool by this name (value: 'ghost')\n"


def test_config_rollback_to_a_deletion_takes_the_platform_along(made, cli):
    """gpu-two deleted (revision 2), made again (revision 3, its platform made anew): rolling it back to
    revision 2 deletes it again, with its platform and template."""
    cli("delete", "MACHINE_POOL", "gpu-two")
    store.apply("MACHINE_POOL", "gpu-two", gpu_spot(), CLI)
    make_platform("gpu-two", CLI)
    assert platforms() == ["gpu-spot", "gpu-two", "plain"]
    code, out, err = cli("rollback", "MACHINE_POOL", "gpu-two", "2")
    assert (code, out, err) == (0, "MACHINE_POOL gpu-two rolled back to r2 (revision 4)\n", "")
    assert platforms() == ["gpu-spot", "plain"] and not PodTemplate.objects.filter(name="machinepool-gpu-two")
    assert last("POOL", "rosa").description == "machine pool gpu-two deleted: Roll back MACHINE_POOL gpu-two to r2"


def test_a_kept_template_is_said_by_the_config_doors(made, cli):
    """`plain` lists the machine pool's template with its own: the template stays, and the line says so."""
    body = store.show("POOL", "rosa")
    body["platforms"]["plain"]["override_pod_template"] = ["own", "machinepool-gpu-spot"]
    store.apply("POOL", "rosa", body, CLI)
    code, out, err = cli("delete", "MACHINE_POOL", "gpu-spot")
    assert (code, err) == (0, "")
    assert out == (
        "MACHINE_POOL gpu-spot deleted (revision 2), with platform rosa/gpu-spot (POOL rosa revision 5); "
        "kept pod template machinepool-gpu-spot: used by platform rosa/plain too\n"
    )
    assert platforms() == ["gpu-two", "plain"]
    assert PodTemplate.objects.filter(name="machinepool-gpu-spot").exists()


def test_rolling_the_type_back_deletes_a_machine_pool_with_its_platform_unless_in_use(made, admin_api):
    """MACHINE_POOL change 1 had gpu-spot only: rolling the type back to it deletes gpu-two, with what was made
    for it, once no unfinished workflow uses gpu-two's platform; until then the whole rollback is refused."""
    running = WorkflowFactory(pool=made, workflow_id="train-2", status=WorkflowStatus.QUEUED)
    TaskFactory(workflow=running, platform="gpu-two")
    changes, url = Change.objects.count(), "/api/configs/history/rollback"
    refused = admin_api.post(url, {"config_type": "machine_pool", "revision": 1}, format="json")
    assert refused.status_code == 409 and refused.json()["code"] == "in_use"
    assert refused.json()["value"] == "gpu-two" and "rosa/gpu-two (1 workflow: train-2)" in refused.json()["reason"]
    assert Change.objects.count() == changes and platforms() == ["gpu-spot", "gpu-two", "plain"]
    Workflow.objects.filter(pk=running.pk).update(status=WorkflowStatus.COMPLETED)
    answer = admin_api.post(url, {"config_type": "machine_pool", "revision": 1}, format="json")
    assert answer.status_code == 200, answer.json()
    assert answer.json()["deleted"] == ["gpu-two"]
    assert list(MachinePool.objects.values_list("name", flat=True)) == ["gpu-spot"]
    assert platforms() == ["gpu-spot", "plain"]
    assert not PodTemplate.objects.filter(name="machinepool-gpu-two").exists()
    gone = last("MACHINE_POOL", "gpu-two")
    assert gone.deleted and gone.change.revision == answer.json()["revision"]  # in the rollback's change
    assert gone.description == "machine pool gpu-two deleted: Roll back MACHINE_POOL to r1"
    assert (
        last("POOL", "rosa").description
        == last("POD_TEMPLATE", "machinepool-gpu-two").description
        == (gone.description)
    )


def test_a_put_of_the_whole_type_keeps_what_it_does_not_name(made, admin_api):
    """`PUT /api/configs/machine_pool` (and `config update MACHINE_POOL` without a NAME) writes the objects it
    names and keeps the others: a machine pool left out of the file stays, with its platform."""
    answer = admin_api.put("/api/configs/machine_pool", {"configs": {"gpu-two": gpu_spot()}}, format="json")
    assert answer.status_code == 200, answer.json()
    assert sorted(MachinePool.objects.values_list("name", flat=True)) == ["gpu-spot", "gpu-two"]
    assert platforms() == ["gpu-spot", "gpu-two", "plain"]
    assert not Revision.objects.filter(deleted=True).exists()


def test_a_rollback_that_makes_a_deleted_machine_pool_again_restores_its_platform(made, cli, admin_api):
    """`config rollback` and the REST rollback of a deleted machine pool to its live revision put back the
    platform and template its deletion took (tests/machinepools/test_rollback_of_a_delete.py: the admin)."""
    cli("delete", "MACHINE_POOL", "gpu-two")
    code, out, err = cli("rollback", "MACHINE_POOL", "gpu-two", "1")
    assert (code, err) == (0, "")
    assert out == (
        "MACHINE_POOL gpu-two rolled back to r1 (revision 3), with pod template machinepool-gpu-two restored "
        "(revision 3); platform rosa/gpu-two restored (POOL rosa revision 5)\n"
    )
    assert platforms() == ["gpu-spot", "gpu-two", "plain"]
    cli("delete", "MACHINE_POOL", "gpu-spot")
    answer = admin_api.post(
        "/api/configs/history/rollback",
        {"config_type": "MACHINE_POOL", "name": "gpu-spot", "revision": 1},
        format="json",
    )
    assert answer.status_code == 200, answer.json()
    assert answer.json()["restored"] == [
        "pod template machinepool-gpu-spot restored (revision 3)",
        "platform rosa/gpu-spot restored (POOL rosa revision 7)",
    ]
    assert platforms() == ["gpu-spot", "gpu-two", "plain"]
    before = last("MACHINE_POOL", "gpu-two").change.revision  # the whole type, rolled back past a deletion
    cli("delete", "MACHINE_POOL", "gpu-two")
    answer = admin_api.post("/api/configs/history/rollback", {"config_type": "MACHINE_POOL", "revision": before})
    assert answer.status_code == 200, answer.json()
    assert answer.json()["restored"] == [
        "pod template machinepool-gpu-two restored (revision 5)",
        "platform rosa/gpu-two restored (POOL rosa revision 9)",
    ]
    assert platforms() == ["gpu-spot", "gpu-two", "plain"]
