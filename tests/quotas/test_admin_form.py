"""Node pools are first-class in the admin (issue #35, point 3): add and change with selector rows, over-quota,
time-based fair share, errors at the field with nothing written, one revision per save with the admin's change
description, and the preview of the nodes a selector takes (which node pool each comes from)."""

from __future__ import annotations

from django.urls import reverse

from configs import store
from configs.models import Revision
from quotas.models import NodePool, NodePoolMember
from quotas.services import selector_preview
from tests.queries import queries_of
from tests.quotas.conftest import H100_PRODUCT

ADD = "admin:quotas_nodepool_add"
GPU_KEY = "nvidia.com/gpu.product"


def _form(**values) -> dict:
    """The add form as a browser posts it: a label node pool of backend `sim` (its pk given as `backend`)."""
    return {
        "name": "",
        "description": "",
        "selector_kind": "label",
        "label_key": "",
        "label_value": "",
        "platform": "",
        "over_quota": "on",
        "admission_seconds": "",
        "min_runtime_seconds": "",
        "fair_share_window_days": "",
        "fair_share_half_life_hours": "",
        "fair_share_k": "",
        "change_description": "",
        **values,
    }


def _revisions(name: str) -> int:
    return Revision.objects.filter(config_type="NODE_POOL", name=name).count()


def test_the_add_form_has_the_selector_rows_and_the_preview(synced, admin_client):
    page = admin_client.get(reverse(ADD)).content.decode()
    for field in ("selector_kind", "label_key", "label_value", "platform", "over_quota", "time_based",
                  "fair_share_window_days", "change_description"):  # fmt: skip
        assert f'name="{field}"' in page, field
    assert "train / a100 (backend sim)" in page and 'name="_preview_nodes"' in page


def test_add_a_label_node_pool_with_a_change_description(synced, admin_client):
    answer = admin_client.post(
        reverse(ADD),
        _form(name="h100", backend=synced.pk, label_key=GPU_KEY, label_value=H100_PRODUCT, over_quota="",
              time_based="on", fair_share_half_life_hours="24", change_description="H100s get their own quotas"),
    )  # fmt: skip
    assert answer.status_code == 302, answer.content.decode()[:3000]
    doc = store.show("NODE_POOL", "h100")
    assert doc["selector"] == {"label": {"key": GPU_KEY, "value": H100_PRODUCT}} and doc["over_quota"] is False
    assert doc["time_based_fair_share"] == {"window_days": 7, "half_life_hours": 24, "k": 1.0}
    revision = Revision.objects.get(config_type="NODE_POOL", name="h100")
    assert revision.description == "H100s get their own quotas" and revision.change.source == "admin"
    assert NodePoolMember.objects.filter(node_pool__name="h100").count() == 4


def test_a_change_is_one_revision_and_keeps_the_quotas(carved, admin_client):
    store.apply("NODE_POOL", "h100", {**store.show("NODE_POOL", "h100"),
                                      "departments": {"research": {"gpu": {"deserved": 8}}}}, _cli())  # fmt: skip
    node_pool = NodePool.objects.get(name="h100")
    before = _revisions("h100")
    url = reverse("admin:quotas_nodepool_change", args=[node_pool.pk])
    page = admin_client.get(url).content.decode()
    assert 'id="np-taken"' in page and "h100-node-0" in page  # the saved selector's nodes
    answer = admin_client.post(
        url,
        _form(backend=carved.pk, label_key=GPU_KEY, label_value=H100_PRODUCT, admission_seconds="30",
              change_description="faster passes"),
    )  # fmt: skip
    assert answer.status_code == 302, answer.content.decode()[:3000]
    assert _revisions("h100") == before + 1
    doc = store.show("NODE_POOL", "h100")
    assert doc["admission_seconds"] == 30 and doc["departments"] == {"research": {"gpu": {"deserved": 8, "limit": None,
                                                                                            "weight": 1}}}  # fmt: skip
    assert Revision.objects.filter(config_type="NODE_POOL", name="h100").latest("revision").description == (
        "faster passes"
    )


def test_bad_input_is_shown_at_its_field_and_nothing_is_written(synced, admin_client):
    cases = [
        ({"label_key": ""}, "label_key", "is required"),
        ({"label_key": GPU_KEY, "label_value": "x" * 64}, "label_value", "at most 63"),
        ({"label_key": GPU_KEY, "time_based": "on", "fair_share_window_days": "91"}, "fair_share_window_days", "90"),
        ({"label_key": GPU_KEY, "time_based": "on", "fair_share_k": "1.234"}, "fair_share_k", "two decimals"),
        ({"label_key": GPU_KEY, "admission_seconds": "0"}, "admission_seconds", "1"),
        ({"selector_kind": "platform", "platform": ""}, "platform", "required"),
        ({"selector_kind": "platform", "platform": "nope/none"}, "platform", "nope/none"),
        ({"label_key": "pool-portal/node-pool"}, "label_key", "the portal's own"),
        ({"selector_kind": "default"}, "selector_kind", "only the Default node pool"),
        ({"label_key": GPU_KEY, "change_description": "x" * 501}, "change_description", "at most 500"),
    ]
    for values, field, words in cases:
        answer = admin_client.post(reverse(ADD), _form(name="bad", backend=synced.pk, **values))
        assert answer.status_code == 200, (values, answer.status_code)
        errors = answer.context["adminform"].form.errors
        assert field in errors and words in " ".join(errors[field]), (values, errors)
    assert not NodePool.objects.filter(name="bad").exists() and _revisions("bad") == 0


def test_a_selector_another_node_pool_holds_is_refused_at_the_field(carved, admin_client):
    answer = admin_client.post(reverse(ADD), _form(name="twin", backend=carved.pk, label_key=GPU_KEY,
                                                   label_value=H100_PRODUCT))  # fmt: skip
    assert answer.status_code == 200
    errors = answer.context["adminform"].form.errors
    assert "node pool h100 already selects these nodes" in " ".join(errors["selector_kind"])
    assert not NodePool.objects.filter(name="twin").exists() and _revisions("twin") == 0


def test_preview_shows_the_nodes_and_where_they_come_from_and_saves_nothing(carved, admin_client):
    answer = admin_client.post(
        reverse(ADD),
        _form(name="trainers", backend=carved.pk, selector_kind="platform", platform="train/a100",
              _preview_nodes="1"),
    )  # fmt: skip
    text = answer.content.decode()
    assert answer.status_code == 200 and "nothing was saved" in text
    assert 'id="np-kept"' in text and "a100-node-0" in text  # node pool a100 claims them first (by name)
    errors = answer.context["adminform"].form.errors  # and the save would refuse it: said at the field now
    assert list(errors) == ["selector_kind"] and "node pool a100 already selects" in " ".join(errors["selector_kind"])
    assert not NodePool.objects.filter(name="trainers").exists() and _revisions("trainers") == 0
    arm = admin_client.post(
        reverse(ADD), _form(name="arm", backend=carved.pk, label_key="kubernetes.io/arch", label_value="arm64",
                            _preview_nodes="1"),
    )  # fmt: skip
    text = arm.content.decode()
    assert arm.status_code == 200 and 'id="np-taken"' in text and "nothing was saved" in text
    assert not arm.context["errors"] and "Please correct" not in text  # a preview that works is no error
    assert not NodePool.objects.filter(name="arm").exists() and _revisions("arm") == 0
    moved = admin_client.post(
        reverse(ADD), _form(name="racks", backend=carved.pk, label_key="kubernetes.io/arch", label_value="amd64",
                            _preview_nodes="1"),
    )  # fmt: skip
    shown = moved.context["adminform"].form.fields["nodes_preview"].widget.preview
    assert {node.now_in for node in shown.taken} == {"sim-default"} and shown.held  # h100's are held: refused
    errors = moved.context["adminform"].form.errors  # as the save would refuse it, at the field
    assert list(errors) == ["selector_kind"] and "already holds" in " ".join(errors["selector_kind"])
    mine = admin_client.post(reverse(ADD), _form(name="mine", backend=carved.pk, label_key="pool-portal/node-pool",
                                                 label_value="x", _preview_nodes="1"))  # fmt: skip
    refused = " ".join(mine.context["adminform"].form.errors["label_key"])
    assert "labels under pool-portal/ are the portal's own" in refused
    assert not NodePool.objects.filter(name__in=["racks", "mine"]).exists()


def test_the_preview_takes_constant_queries(carved):
    run = lambda: selector_preview.preview(carved.pk, "sim", "x", {"kind": "label", "key": GPU_KEY, "value": "y"})  # noqa: E731
    assert len(queries_of(run)) <= 4


def test_the_list_heads_each_column_once(carved, admin_client):
    page = admin_client.get(reverse("admin:quotas_nodepool_changelist")).content.decode()
    assert "Guarantees" in page and "Add node pool" in page
    assert page.count(">Quotas<") == 0


def _cli():
    from tests.quotas.conftest import CLI

    return CLI
