"""Deleting a machine pool removes the platform and pod template made for it (admin delete page and bulk
action): the confirmation page lists them, history records each removal, a template another platform uses is
kept and said, and a machine pool whose platform unfinished workflows use is refused, naming them; the CLI's
`machinepool delete` does the same."""

from __future__ import annotations

import html
import re

import pytest
from django.core.management import base
from django.urls import reverse

from clusters.models import MachinePool
from configs import store
from configs.errors import ConfigInUse
from pools.models import PodTemplate
from pools.services.machine_pool_removal import delete_machine_pool
from tests.clirun import run_as_cli
from tests.factories import TaskFactory, WorkflowFactory
from tests.machinepools.conftest import CLI, gpu_spot, gpu_spot_went_with_its_platform, last, platforms
from workflows.models import WorkflowStatus

CHANGELIST = "admin:clusters_machinepool_changelist"


def text(response) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", response.content.decode()).split())


def test_the_delete_page_lists_the_platform_and_template_and_deleting_removes_them(made, admin_client, admin_user):
    pk = MachinePool.objects.get(name="gpu-spot").pk
    url = reverse("admin:clusters_machinepool_delete", args=[pk])
    page = text(admin_client.get(url))
    assert "Platform rosa/gpu-spot (made from machine pool gpu-spot)" in page
    assert "Pod template machinepool-gpu-spot (made from machine pool gpu-spot)" in page
    assert "gpu-two" not in page  # the other machine pool's are not touched
    done = admin_client.post(url, {"post": "yes"}, follow=True)
    assert done.status_code == 200
    assert (
        "Machine pool gpu-spot deleted (revision 2), with platform rosa/gpu-spot (POOL rosa revision 4) and "
        "pod template machinepool-gpu-spot (revision 2)." in text(done)
    )
    # history, like any config change: the pool's revision, the template's and the machine pool's deletions
    pool, template, machine_pool = gpu_spot_went_with_its_platform()
    assert {r.description for r in (pool, template, machine_pool)} == {"machine pool gpu-spot deleted"}
    assert {r.author for r in (pool, template, machine_pool)} == {admin_user}


def test_bulk_delete_lists_and_removes_each_machine_pools_platform(made, admin_client):
    ids = list(MachinePool.objects.values_list("pk", flat=True))
    action = {"action": "delete_selected", "_selected_action": ids}
    page = text(admin_client.post(reverse(CHANGELIST), action))
    for name in ("gpu-spot", "gpu-two"):
        assert f"Platform rosa/{name} (made from machine pool {name})" in page
        assert f"Pod template machinepool-{name} (made from machine pool {name})" in page
    assert "Platforms: 2" in page and "Pod templates: 2" in page
    done = admin_client.post(reverse(CHANGELIST), {**action, "post": "yes"}, follow=True)
    assert "Machine pool gpu-two deleted" in text(done)
    assert not MachinePool.objects.exists()
    assert platforms() == ["plain"]
    assert sorted(PodTemplate.objects.values_list("name", flat=True)) == ["own"]


def test_unfinished_workflows_on_the_platform_refuse_the_delete_and_are_named(busy, made, admin_client):
    pk = MachinePool.objects.get(name="gpu-spot").pk
    refused = admin_client.get(reverse("admin:clusters_machinepool_delete", args=[pk]), follow=True)
    words = text(refused)
    assert (
        "Machine pool gpu-spot cannot be deleted while unfinished workflows use the platform made from it: "
        "rosa/gpu-spot (1 workflow: train-1). Its nodes and that platform would go with it: cancel them or let "
        "them finish, then delete it."
    ) in words
    assert "old-1" not in words and "plain-1" not in words
    admin_client.post(reverse("admin:clusters_machinepool_delete", args=[pk]), {"post": "yes"})
    bulk = {"action": "delete_selected", "_selected_action": [pk], "post": "yes"}
    page = text(admin_client.post(reverse(CHANGELIST), bulk))
    assert "protected related objects" in page
    assert "Workflow: train-1 (unfinished, on platform rosa/gpu-spot made from machine pool gpu-spot)" in page
    assert MachinePool.objects.filter(name="gpu-spot").exists() and "gpu-spot" in platforms()
    with pytest.raises(ConfigInUse, match="train-1"):  # every door: the service refuses too
        delete_machine_pool("gpu-spot", CLI)
    assert last("MACHINE_POOL", "gpu-spot").deleted is False


def test_a_template_another_platform_uses_is_kept_and_said(made, admin_client):
    """`plain` also lists the machine pool's template (with its own): it is the admin's platform, not one
    made for the machine pool, so it and the template stay; the platform made for it goes."""
    body = store.show("POOL", "rosa")
    body["platforms"]["plain"]["override_pod_template"] = ["own", "machinepool-gpu-spot"]
    store.apply("POOL", "rosa", body, CLI)
    pk = MachinePool.objects.get(name="gpu-spot").pk
    url = reverse("admin:clusters_machinepool_delete", args=[pk])
    page = text(admin_client.get(url))
    assert "gpu-spot: kept pod template machinepool-gpu-spot: used by platform rosa/plain too." in page
    assert "Pod template machinepool-gpu-spot (made" not in page
    done = text(admin_client.post(url, {"post": "yes"}, follow=True))
    assert "; kept pod template machinepool-gpu-spot: used by platform rosa/plain too." in done
    assert platforms() == ["gpu-two", "plain"]
    assert PodTemplate.objects.filter(name="machinepool-gpu-spot").exists()


def test_a_machine_pool_without_a_platform_deletes_as_before(made):
    store.apply("MACHINE_POOL", "bare", gpu_spot(), CLI)
    deleted = delete_machine_pool("bare", CLI)
    assert deleted.said() == "machine pool bare deleted (revision 2)"
    assert platforms() == ["gpu-spot", "gpu-two", "plain"]
    assert last("MACHINE_POOL", "bare").deleted


@pytest.fixture
def cli(capsys, monkeypatch):
    monkeypatch.setattr(base.connections, "close_all", lambda: None)  # keep the test's transaction
    return lambda *args: run_as_cli(capsys, "pools", "machinepool", *args)


def test_the_cli_deletes_with_the_platform_or_refuses_in_one_line(made, cli):
    running = WorkflowFactory(pool=made, workflow_id="train-1", status=WorkflowStatus.QUEUED)
    TaskFactory(workflow=running, platform="gpu-two")
    code, out, err = cli("delete", "gpu-two")
    assert code == 1 and out == "" and "error: name: cannot be deleted while unfinished workflows" in err
    assert "rosa/gpu-two (1 workflow: train-1)" in err and len(err.splitlines()) == 1
    code, out, err = cli("delete", "gpu-spot")
    assert (code, err) == (0, "")
    assert out == (
        "machine pool gpu-spot deleted (revision 2), with platform rosa/gpu-spot (POOL rosa revision 4) and "
        "pod template machinepool-gpu-spot (revision 2)\n"
    )
    code, _, err = cli("delete", "ghost")
    assert code == 1 and err == "error: name: no machine pool by this name (value: 'ghost')\n"


def test_deleting_the_pools_default_platform_is_refused_and_nothing_goes(made, admin_client):
    """The pool names the machine pool's platform as its default: the delete is refused, saying so; the
    machine pool, its platform and template all stay."""
    store.apply("POOL", "rosa", {**store.show("POOL", "rosa"), "default_platform": "gpu-spot"}, CLI)
    pk = MachinePool.objects.get(name="gpu-spot").pk
    page = text(
        admin_client.post(reverse("admin:clusters_machinepool_delete", args=[pk]), {"post": "yes"}, follow=True)
    )
    assert (
        "Not deleted: name: cannot be deleted while its platform rosa/gpu-spot is pool rosa's default_platform: "
        "choose another default for the pool first (value: 'gpu-spot')"
    ) in html.unescape(page)
    assert MachinePool.objects.filter(name="gpu-spot").exists() and "gpu-spot" in platforms()
    assert PodTemplate.objects.filter(name="machinepool-gpu-spot").exists()
    assert not last("MACHINE_POOL", "gpu-spot").deleted
