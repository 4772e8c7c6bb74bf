"""The admin's history of a machine pool's deletion: the deleted revision's page lists the platform and pod
template that went with it (linked to the revisions that removed them) and what a rollback does with each; the
rollback of the machine pool to a revision before its deletion says it puts them back, and does: the template
as it was, the platform added back to its pool (the pool's later changes kept), in the rollback's transaction.
What was made again since is left as it is, and the pages say so."""

from __future__ import annotations

import re

from django.urls import reverse

from clusters.models import MachinePool
from configs import store
from configs.models import Revision
from pools.models import PodTemplate
from pools.services.machine_pool_platforms import make_platform
from tests.machinepools.conftest import CLI, gpu_spot, gpu_spot_went_with_its_platform, last, platforms

ROLLBACK = "admin:configs_revision_roll_back_to_this"


def text(response) -> str:
    assert response.status_code == 200
    return " ".join(re.sub(r"<[^>]+>", " ", response.content.decode()).split())


def deleted_with_a_later_pool_change(made):
    """gpu-spot deleted (with its platform and template), then pool `rosa` given a description."""
    template = store.show("POD_TEMPLATE", "machinepool-gpu-spot")
    platform = store.show("POOL", "rosa")["platforms"]["gpu-spot"]
    store.delete("MACHINE_POOL", "gpu-spot", CLI)
    pool_revision, template_revision, deleted = gpu_spot_went_with_its_platform()
    store.patch("POOL", "rosa", {"description": "changed after the delete"}, CLI)
    return template, platform, pool_revision, template_revision, deleted


def test_the_deletion_page_lists_what_went_with_it_and_the_rollback_restores_it(made, admin_client):
    template, platform, pool_revision, template_revision, deleted = deleted_with_a_later_pool_change(made)
    page = admin_client.get(reverse("admin:configs_revision_change", args=[deleted.pk]))
    shown = text(page)
    assert "Deleted with it" in shown
    assert (
        f"pod template machinepool-gpu-spot (POD_TEMPLATE machinepool-gpu-spot r{template_revision.revision}): "
        f"on a rollback, restored as POD_TEMPLATE machinepool-gpu-spot r{template_revision.revision - 1} had it"
    ) in shown
    assert (
        f"platform rosa/gpu-spot (POOL rosa r{pool_revision.revision}): "
        f"on a rollback, restored as POOL rosa r{pool_revision.revision - 1} had it (the rest of the pool as it is now)"
    ) in shown
    html = page.content.decode()
    assert reverse("admin:configs_revision_change", args=[pool_revision.pk]) in html  # linked to their revisions
    assert reverse("admin:configs_revision_change", args=[template_revision.pk]) in html
    live = last("MACHINE_POOL", "gpu-spot").revision - 1
    first = Revision.objects.get(config_type="MACHINE_POOL", name="gpu-spot", revision=live)
    assert reverse(ROLLBACK, args=[first.pk]) in html and "makes it again and restores these" in shown

    confirm = text(admin_client.get(reverse(ROLLBACK, args=[first.pk])))
    assert f"will make it again (it was deleted at r{deleted.revision}) as a new revision" in confirm
    assert f"Its deletion at r{deleted.revision} took these along; the rollback puts them back:" in confirm
    assert f"platform rosa/gpu-spot (POOL rosa r{pool_revision.revision}): restored as POOL rosa r3 had it" in confirm

    done = text(admin_client.post(reverse(ROLLBACK, args=[first.pk]), follow=True))
    assert f"MACHINE_POOL gpu-spot rolled back to r{live} as revision {deleted.revision + 1}, with" in done
    assert "pod template machinepool-gpu-spot restored (revision" in done
    assert "platform rosa/gpu-spot restored (POOL rosa revision" in done
    assert MachinePool.objects.filter(name="gpu-spot").exists()
    assert platforms() == ["gpu-spot", "gpu-two", "plain"]
    assert store.show("POD_TEMPLATE", "machinepool-gpu-spot") == template
    rosa = store.show("POOL", "rosa")
    assert rosa["platforms"]["gpu-spot"] == platform and rosa["description"] == "changed after the delete"
    rolled = {(r.config_type, r.name): r.description for r in (last("POOL", "rosa"), last("MACHINE_POOL", "gpu-spot"))}
    assert set(rolled.values()) == {f"Roll back MACHINE_POOL gpu-spot to r{live}"}


def test_what_was_made_again_since_is_not_overwritten_from_history(made, admin_client):
    """The platform was added again after the delete, with other templates: the pages say the rollback leaves
    it, and it does; the template still comes back."""
    *_, deleted = deleted_with_a_later_pool_change(made)
    body = store.show("POOL", "rosa")
    body["platforms"]["gpu-spot"] = {"override_pod_template": ["own"]}
    store.apply("POOL", "rosa", body, CLI)
    page = text(admin_client.get(reverse("admin:configs_revision_change", args=[deleted.pk])))
    assert "platform rosa/gpu-spot (POOL rosa r4): on a rollback, left as it is: made again since" in page
    first = Revision.objects.get(config_type="MACHINE_POOL", name="gpu-spot", revision=deleted.revision - 1)
    done = text(admin_client.post(reverse(ROLLBACK, args=[first.pk]), follow=True))
    assert "platform rosa/gpu-spot left as it is: made again since" in done
    assert "pod template machinepool-gpu-spot restored (revision" in done
    assert store.show("POOL", "rosa")["platforms"]["gpu-spot"]["override_pod_template"] == ["own"]
    assert PodTemplate.objects.filter(name="machinepool-gpu-spot").exists()


def test_a_revision_that_is_not_a_deletion_lists_nothing_along(made, admin_client):
    live = last("MACHINE_POOL", "gpu-spot")
    page = text(admin_client.get(reverse("admin:configs_revision_change", args=[live.pk])))
    assert "Deleted with it" not in page
    confirm = text(admin_client.get(reverse(ROLLBACK, args=[live.pk])))
    assert "took these along" not in confirm and "write it back as a new revision" in confirm


def test_rolling_back_to_the_deletion_says_what_goes_again(made, admin_client):
    """gpu-two deleted, then made again with its platform: rolling back to the deletion deletes it again, and
    the page lists the platform and template that go with it, as the delete page does."""
    store.delete("MACHINE_POOL", "gpu-two", CLI)
    deleted = last("MACHINE_POOL", "gpu-two")
    store.apply("MACHINE_POOL", "gpu-two", gpu_spot(), CLI)
    make_platform("gpu-two", CLI)
    confirm = text(admin_client.get(reverse(ROLLBACK, args=[deleted.pk])))
    assert "will delete it again" in confirm
    assert (
        "Deleting gpu-two again takes these along: platform rosa/gpu-two (made from machine pool gpu-two) "
        "pod template machinepool-gpu-two (made from machine pool gpu-two)"
    ) in confirm
