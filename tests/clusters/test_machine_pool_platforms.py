"""From machine pool to platform: the template and platform made from a machine pool, kept in step with its
taints; scale from zero in node rules, preview and placement (docs/machine-pool-platforms.md)."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command

from clusters.models import MachinePool
from configs import store
from configs.errors import ConfigError, ConfigNotFound
from configs.models import Revision
from pools.models import NodeMembership, Platform, PodTemplate, Pool
from pools.services.machine_pool_platforms import AlreadyServed, make_platform
from pools.services.node_match import unmatched_platforms
from pools.services.preview import PreviewRequest, preview
from tests.clusters.conftest import CLI
from tests.clusters.machine_pools import GPU_TAINTS
from tests.factories import MachinePoolFactory
from tests.quotas.confinement import label_rows_as_the_portal_does


def members(platform: str) -> list[str]:
    return sorted(NodeMembership.objects.filter(platform__name=platform).values_list("node__name", flat=True))


def history(name: str) -> list[int]:
    return list(
        Revision.objects.filter(config_type="POD_TEMPLATE", name=name)
        .order_by("revision")
        .values_list("revision", flat=True)
    )


def test_platform_from_machine_pool_selects_its_nodes_and_tolerates_its_taints(machine_pools):
    out = StringIO()
    call_command("machinepool", "platform", "additional", "--format", "json", stdout=out)
    made = json.loads(out.getvalue())
    assert made == {
        "machine_pool": "additional",
        "pool": "rosa",
        "platform": "additional",
        "template": "machinepool-additional",
        "template_revision": 1,
        "pool_revision": 2,
        "created": True,
    }
    assert PodTemplate.objects.get(name="machinepool-additional").body == {
        "spec": {
            "nodeSelector": {"node.kubernetes.io/machinepool": "additional"},
            "tolerations": [{"key": "workload-type", "operator": "Equal", "value": "batch", "effect": "NoSchedule"}],
        }
    }
    platform = store.show("POOL", "rosa")["platforms"]["additional"]
    assert platform["override_pod_template"] == ["machinepool-additional"]
    assert members("additional") == ["additional-node-0", "additional-node-1"]  # exactly the machine pool's nodes


def test_making_it_again_changes_nothing(machine_pools):
    make_platform("additional", CLI, pool="rosa")
    again = make_platform("additional", CLI, pool="rosa", platform="additional")
    assert not again.created
    assert history("machinepool-additional") == [1]


def test_a_pool_whose_platform_serves_the_machine_pool_gets_no_second_one(machine_pools):
    make_platform("additional", CLI, platform="batch")  # as the demo's robotics-spot/batch
    with pytest.raises(AlreadyServed) as refused:
        make_platform("additional", CLI)
    assert str(refused.value) == (
        "platform: platform rosa/batch already serves machine pool additional (pod template machinepool-additional): "
        "use it, or bring it up to date with --platform batch (value: 'additional')"
    )
    assert refused.value.status == 409 and refused.value.code == "already_served"
    with pytest.raises(AlreadyServed):
        make_platform("additional", CLI, platform="batch-2")
    platforms = store.show("POOL", "rosa")["platforms"]
    assert "additional" not in platforms and "batch-2" not in platforms
    assert not make_platform("additional", CLI, platform="batch").created  # naming it brings it up to date
    assert history("machinepool-additional") == [1]


def test_a_taint_change_is_a_new_template_revision_and_a_status_save_is_not(machine_pools):
    make_platform("gpu-zero", CLI)
    pool = MachinePool.objects.get(name="gpu-zero")
    pool.nodes_now, pool.state = 0, MachinePool.State.READY
    pool.save(update_fields=["nodes_now", "state"])
    pool.labels = {"node-type": "gpu", "team": "vision"}
    pool.save()
    assert history("machinepool-gpu-zero") == [1]  # neither moves a pod: the template is unchanged
    pool.taints = [*GPU_TAINTS, {"key": "dedicated", "value": "ml", "effect": "NoExecute"}]
    pool.save()
    assert history("machinepool-gpu-zero") == [1, 2]
    tolerations = PodTemplate.objects.get(name="machinepool-gpu-zero").body["spec"]["tolerations"]
    assert tolerations[-1] == {"key": "dedicated", "operator": "Equal", "value": "ml", "effect": "NoExecute"}
    described = Revision.objects.get(config_type="POD_TEMPLATE", name="machinepool-gpu-zero", revision=2).description
    assert "dedicated=ml:NoExecute" in described
    # the platform was recompiled with the new toleration: its pods still land on the machine pool's nodes
    placed = preview(PreviewRequest(pool="rosa", platform="gpu-zero", resources={"gpu": 1}))["placement"]
    assert placed["fits"] == ["gpu-zero (would-be g4dn.xlarge)"]


def test_bad_names_are_refused_with_the_known_ones(machine_pools, backend):
    with pytest.raises(ConfigNotFound) as missing:
        make_platform("nope", CLI)
    assert missing.value.field == "machine_pool"
    assert "additional, gpu-zero, ml-training" in missing.value.reason
    store.apply("BACKEND", "other", {"namespace": "x", "api_url": "http://127.0.0.1:1"}, CLI)
    store.apply("POOL", "elsewhere", {"backend": "other"}, CLI)
    with pytest.raises(ConfigError) as wrong:
        make_platform("additional", CLI, pool="elsewhere")
    assert wrong.value.field == "pool"
    assert "runs on backend other, not on sim" in wrong.value.reason
    store.apply("POOL", "second", {"backend": "sim"}, CLI)
    with pytest.raises(ConfigError) as ambiguous:
        make_platform("additional", CLI)
    assert "several pools (pools: rosa, second)" in ambiguous.value.reason


def test_the_cli_says_what_it_made_and_fails_in_one_line(machine_pools):
    out = StringIO()
    call_command("machinepool", "platform", "gpu-zero", "--platform", "t4-spot", stdout=out)
    assert out.getvalue().strip() == (
        "platform rosa/t4-spot created from machine pool gpu-zero (pod template machinepool-gpu-zero, revision 1)"
    )
    again = StringIO()  # nothing to change: no revision to name
    call_command("machinepool", "platform", "gpu-zero", "--platform", "t4-spot", stdout=again)
    assert again.getvalue().strip() == (
        "platform rosa/t4-spot already in step with machine pool gpu-zero (pod template machinepool-gpu-zero)"
    )


def test_scale_from_zero_preview_uses_the_instance_shape_and_says_so(machine_pools):
    make_platform("gpu-zero", CLI)
    assert members("gpu-zero") == []  # no node yet
    result = preview(PreviewRequest(pool="rosa", platform="gpu-zero", resources={"gpu": 1, "cpu": 2}))
    note = "no node now; machine pool gpu-zero can add a g4dn.xlarge, 1 × T4; up to 3"
    assert result["scale_from_zero"] == [note]
    assert note in result["warnings"]
    assert result["ok"], result["validation"]
    assert result["placement"]["fits"] == ["gpu-zero (would-be g4dn.xlarge)"]
    assert result["placement"]["would_be"] == {
        "gpu-zero (would-be g4dn.xlarge)": "no node now; machine pool gpu-zero can add a g4dn.xlarge, 1 × T4; up to 3"
    }
    too_many = preview(PreviewRequest(pool="rosa", platform="gpu-zero", resources={"gpu": 2, "cpu": 2}))
    assert not too_many["ok"]
    assert "Value 2 too high for GPU" in json.dumps(too_many["validation"])
    too_much_memory = preview(PreviewRequest(pool="rosa", platform="gpu-zero", resources={"memory": "17Gi"}))
    assert "too high for memory" in json.dumps(too_much_memory["validation"])


def test_a_machine_pool_with_nodes_offers_no_would_be_node(machine_pools):
    make_platform("additional", CLI)
    label_rows_as_the_portal_does(Pool.objects.get(name="rosa").backend_id)  # confined pods select them
    result = preview(PreviewRequest(pool="rosa", platform="additional", resources={"cpu": 1}))
    assert "scale_from_zero" not in result
    assert "would_be" not in result["placement"]
    assert result["placement"]["fits"] == ["additional-node-0", "additional-node-1"]


def test_the_admin_action_makes_the_platform_and_says_so(machine_pools, admin_user, rf):
    from django.contrib import admin
    from django.contrib.messages import get_messages
    from django.contrib.messages.storage.fallback import FallbackStorage
    from django.contrib.sessions.backends.db import SessionStore
    from django.utils.html import strip_tags

    from pools.admin.machine_pool_actions import make_platform_action

    model_admin = admin.site._registry[MachinePool]
    assert list(model_admin.actions).count(make_platform_action) == 1
    request = rf.post("/")
    request.user, request.session = admin_user, SessionStore()
    request._messages = FallbackStorage(request)
    store.apply("POOL", "second", {"backend": "sim"}, CLI)
    make_platform_action(model_admin, request, MachinePool.objects.filter(name__in=["additional"]))
    [said] = [str(m) for m in get_messages(request)]
    assert said.startswith("additional: pool: choose the pool with --pool: backend sim has several pools")
    store.delete("POOL", "second", CLI)
    request._messages = FallbackStorage(request)
    make_platform_action(model_admin, request, MachinePool.objects.filter(name__in=["additional", "gpu-zero"]))
    said = [str(m) for m in get_messages(request)]
    assert [strip_tags(message) for message in said] == [
        "Platform rosa/additional created from machine pool additional (pod template machinepool-additional, "
        "revision 1).",
        "Platform rosa/gpu-zero created from machine pool gpu-zero (pod template machinepool-gpu-zero, revision 1).",
    ]
    made = Platform.objects.get(pool__name="rosa", name="additional")  # the message links to the platform made
    assert f'<a class="underline" href="/admin/pools/platform/{made.pk}/change/">rosa/additional</a>' in said[0]
    assert Revision.objects.get(config_type="POD_TEMPLATE", name="machinepool-additional").author == admin_user


def test_the_admin_action_refuses_a_second_platform_and_links_the_one_serving(machine_pools, admin_user, rf):
    from django.contrib import admin
    from django.contrib.messages import constants, get_messages
    from django.contrib.messages.storage.fallback import FallbackStorage
    from django.contrib.sessions.backends.db import SessionStore
    from django.utils.html import strip_tags

    from pools.admin.machine_pool_actions import make_platform_action

    make_platform("additional", CLI, platform="batch")
    request = rf.post("/")
    request.user, request.session = admin_user, SessionStore()
    request._messages = FallbackStorage(request)
    make_platform_action(admin.site._registry[MachinePool], request, MachinePool.objects.filter(name="additional"))
    [said] = list(get_messages(request))
    assert said.level == constants.WARNING
    assert strip_tags(str(said)) == (
        "additional: platform rosa/batch already serves machine pool additional (pod template "
        "machinepool-additional); no second platform made."
    )
    batch = Platform.objects.get(pool__name="rosa", name="batch")
    assert f'<a class="underline" href="/admin/pools/platform/{batch.pk}/change/">rosa/batch</a>' in str(said)
    assert not Platform.objects.filter(pool__name="rosa", name="additional").exists()


def test_a_dry_run_submission_validates_against_the_would_be_node_and_places_on_it(machine_pools, admin_user):
    from workflows.errors import WorkflowInvalid
    from workflows.services import SubmitRequest, submit

    make_platform("gpu-zero", CLI, platform="t4-spot")
    resources = {"cpu": 2, "memory": "8Gi", "storage": "10Gi", "gpu": 1, "platform": "t4-spot"}
    task = {"name": "train", "image": "my-ml-image", "command": ["train"], "resource": "default"}
    document = {"version": 2, "workflow": {"name": "t4", "resources": {"default": resources}, "tasks": [task]}}
    result = submit(SubmitRequest(pool="rosa", spec=document, who=admin_user, dry_run=True))
    [row] = result.tasks
    assert row["ok"], row["validation"]
    assert row["placement"]["fits"] == ["gpu-zero (would-be g4dn.xlarge)"]
    resources["gpu"] = 2
    with pytest.raises(WorkflowInvalid) as refused:
        submit(SubmitRequest(pool="rosa", spec=document, who=admin_user, dry_run=True))
    assert "(gpu-zero (would-be g4dn.xlarge): Value 2 too high for GPU)" in refused.value.reason


def test_the_platform_page_explains_the_would_be_nodes(machine_pools, admin_client):
    from django.urls import reverse

    from pools.models import Platform

    make_platform("additional", CLI)
    platform = Platform.objects.get(name="additional")
    page = admin_client.get(reverse("admin:pools_platform_change", args=[platform.pk])).content.decode()
    assert "Would-be nodes (machine pools with no node yet):" in page
    assert "gpu-zero (would-be g4dn.xlarge)" in page
    assert "untolerated taint nvidia.com/gpu=true:NoSchedule" in page


def test_only_autoscaled_machine_pools_with_room_and_no_node_offer_a_would_be_node(machine_pools, backend):
    from pools.services.machine_pool_shapes import would_be_nodes

    MachinePoolFactory(backend=backend, name="fixed", autoscaling=False, replicas=2)
    MachinePoolFactory(backend=backend, name="capped", max_replicas=0)
    MachinePoolFactory(backend=backend, name="cpu-zero", instance_type="m5.xlarge", taints=[], labels={})
    found = {node.spec.name: node for node in would_be_nodes({backend.pk})}
    assert sorted(found) == ["cpu-zero", "gpu-zero"]  # additional and ml-training have nodes
    assert found["cpu-zero"].describe() == (
        "no node now; machine pool cpu-zero can add a m5.xlarge, 4 vCPU, 16 GiB; up to 3"
    )
    capacity = found["cpu-zero"].capacity()
    assert capacity.variables() == {
        "K8_CPU": 4,
        "K8_GPU": 0,
        "K8_MEMORY": 16 * 2**30,
        "K8_STORAGE": 300 * 2**30,
        "K8_GPU_PRODUCT": "",
        "K8_GPU_CUDA_DRIVER": "",
    }


def test_the_pod_preview_says_a_machine_pool_would_add_the_node(machine_pools, admin_client):
    """Scale from zero on the preview page (the admin's and the submit page's shared partial): no node takes
    the pod now, the would-be node would, and the page says what the machine pool adds."""
    import html as html_lib

    from django.urls import reverse

    from pools.models import Pool

    make_platform("gpu-zero", CLI)
    pool = Pool.objects.get(name="rosa")
    url = reverse("admin:pools_pool_preview", args=[pool.pk])
    response = admin_client.get(url, {"platform": "gpu-zero", "task": "train", "gpu": "1", "memory": "8Gi"})
    page = html_lib.unescape(response.content.decode())
    assert 'data-verdict="scales"' in page
    assert "Would start once a machine pool adds a node" in page
    assert "No member node has room for it right now." in page
    assert (
        '<span class="chip wait mono">gpu-zero (would-be g4dn.xlarge)</span> <span class="muted small">No node now; '
        "machine pool gpu-zero can add a g4dn.xlarge, 1 × T4; up to 3.</span>"
    ) in page


def test_a_platform_a_machine_pool_would_add_a_node_to_is_not_warned_of(machine_pools):
    """Scale from zero: the pool list and the save check do not say "matches no node" of a platform whose
    machine pool adds its node when a task needs it, and do once that machine pool cannot grow."""
    make_platform("gpu-zero", CLI)
    rosa = Pool.objects.get(name="rosa")
    assert members("gpu-zero") == []
    assert unmatched_platforms([rosa.pk]) == {}
    fixed = {**store.show("MACHINE_POOL", "gpu-zero"), "autoscaling": None, "replicas": 0}
    store.apply("MACHINE_POOL", "gpu-zero", fixed, CLI)  # no node, and it adds none
    assert unmatched_platforms([rosa.pk]) == {rosa.pk: ["gpu-zero"]}


def test_the_machine_pool_page_makes_the_platform_after_asking(machine_pools, admin_client):
    machine_pool = MachinePool.objects.get(name="additional")
    url = f"/admin/clusters/machinepool/{machine_pool.pk}/make-platform/"
    assert url in admin_client.get(f"/admin/clusters/machinepool/{machine_pool.pk}/change/").content.decode()
    asked = admin_client.get(url).content.decode()
    assert "Make a platform from machine pool additional?" in asked
    assert not Revision.objects.filter(config_type="POD_TEMPLATE", name="machinepool-additional").exists()
    done = admin_client.post(url, follow=True).content.decode()
    made = Platform.objects.get(pool__name="rosa", name="additional")
    assert f'href="/admin/pools/platform/{made.pk}/change/">rosa/additional</a> created from machine pool' in done
