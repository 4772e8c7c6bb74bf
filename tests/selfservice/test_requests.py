"""Access and pool requests: asking on /requests/, deciding in the admin console, and what approval does."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from access import policy
from access.models import AuditEvent, Role
from access.services import roles
from pools.models import Pool
from portal.errors import Conflict, PermissionDenied
from selfservice.models import AccessRequest, PoolRequest, RequestStatus
from selfservice.services import requests as service
from tests.factories import RoleFactory
from tests.selfservice.conftest import OTHER, TRAINING, person

pytestmark = pytest.mark.django_db


def may_submit(user, pool: str) -> bool:
    user = get_user_model().objects.get(pk=user.pk)
    return policy.decide(user, "workflow:Create", f"pool/{pool}").allowed


def ask_access(world, pool: str = TRAINING, user=None):
    client = world.client(user or world.nobody)
    response = client.post("/requests/", {"kind": "access", "pool": pool, "justification": "grasping experiments"})
    assert response.status_code == 302, response.content.decode()[-2000:]
    return AccessRequest.objects.get(pool__name=pool, requester=user or world.nobody, status=RequestStatus.PENDING)


# --- asking ------------------------------------------------------------------------------------------------


def test_requests_page_offers_only_pools_one_may_not_use(demo_world):
    html = demo_world.client(demo_world.researcher).get(f"/requests/?pool={OTHER}").content.decode()
    assert f'<option value="{OTHER}" selected>' in html
    assert f'<option value="{TRAINING}"' not in html
    assert "NVIDIA-H100-80GB-HBM3 (8 GPUs per node)" in html and "CPU only" in html


def test_asking_for_access_creates_a_pending_request_shown_to_the_requester(demo_world):
    request = ask_access(demo_world)
    assert request.status == RequestStatus.PENDING and request.justification == "grasping experiments"
    html = demo_world.client(demo_world.nobody).get("/requests/").content.decode()
    assert f'id="access-request-{request.pk}"' in html and "Waiting for an administrator" in html
    catalog = demo_world.client(demo_world.nobody).get("/").content.decode()
    card = catalog[catalog.index(f'id="pool-{TRAINING}"') :]
    assert "access requested" in card[:3000]
    assert AuditEvent.objects.filter(action="request.create", target=f"access-request/{request.pk}").exists()


def test_asking_twice_or_for_a_usable_pool_is_refused_on_the_form(demo_world):
    ask_access(demo_world)
    client = demo_world.client(demo_world.nobody)
    again = client.post("/requests/", {"kind": "access", "pool": TRAINING, "justification": "again"})
    assert again.status_code == 400 and b"you already asked for access" in again.content
    with pytest.raises(Conflict, match="you may already submit"):
        service.request_access(demo_world.researcher, TRAINING, "why not")
    empty = client.post("/requests/", {"kind": "access", "pool": OTHER, "justification": ""})
    assert empty.status_code == 400 and b"This field is required" in empty.content


def test_a_requester_may_withdraw_a_pending_request(demo_world):
    request = ask_access(demo_world)
    demo_world.client(demo_world.nobody).post(f"/requests/access/{request.pk}/withdraw/")
    request.refresh_from_db()
    assert request.status == RequestStatus.WITHDRAWN
    other = ask_access(demo_world)  # a new one may be made after withdrawing
    assert other.pk != request.pk


# --- deciding access ---------------------------------------------------------------------------------------


def test_approving_access_grants_the_pools_team_role_and_the_user_can_submit(demo_world):
    request = ask_access(demo_world)
    assert not may_submit(demo_world.nobody, TRAINING)
    outcome = service.approve_access(request.pk, demo_world.admin, "welcome aboard")
    assert outcome.role == "osmo-robotics" and not outcome.role_created and not outcome.warnings
    assert roles.user_role_names(demo_world.nobody) == ["osmo-robotics"]
    assert may_submit(demo_world.nobody, TRAINING)
    client = demo_world.client(demo_world.nobody)
    assert client.get(f"/pools/{TRAINING}/submit/").status_code == 200
    html = client.get("/requests/").content.decode()
    assert "Approved by boss" in html and "welcome aboard" in html and "role <code>osmo-robotics</code>" in html
    assert AuditEvent.objects.filter(
        action="request.approve", target=f"access-request/{request.pk}", actor_name="boss"
    ).exists()
    assert AuditEvent.objects.filter(action="role.grant", target="user/nobody", detail__role="osmo-robotics").exists()


def test_approving_access_without_a_role_generates_osmo_pool(demo_world):
    request = ask_access(demo_world, OTHER)
    outcome = service.approve_access(request.pk, demo_world.admin, "")
    assert outcome.role == f"osmo-{OTHER}" and outcome.role_created
    role = Role.objects.get(name=f"osmo-{OTHER}")
    assert role.policies == [{"effect": "Allow", "actions": ["workflow:*"], "resources": [f"pool/{OTHER}"]}]
    assert may_submit(demo_world.nobody, OTHER) and not may_submit(demo_world.nobody, TRAINING)
    assert AuditEvent.objects.filter(action="config.update", target=f"ROLE osmo-{OTHER}").exists()


def test_the_most_specific_role_is_chosen_never_admin_or_all_pools(demo_world):
    RoleFactory(name="everything", policies=[{"effect": "Allow", "actions": ["workflow:*"], "resources": ["pool/*"]}])
    RoleFactory(
        name="robotics-training-only",
        policies=[{"effect": "Allow", "actions": ["workflow:Create"], "resources": [f"pool/{TRAINING}"]}],
    )
    RoleFactory(
        name="denied",
        policies=[
            {"effect": "Allow", "actions": ["workflow:*"], "resources": [f"pool/{TRAINING}"]},
            {"effect": "Deny", "actions": ["workflow:Create"], "resources": ["pool/robotics*"]},
        ],
    )
    assert service.best_role(TRAINING).name == "robotics-training-only"
    assert service.best_role("robotics-simulation").name == "osmo-robotics"
    assert service.best_role(OTHER) is None


def test_denying_needs_a_comment_and_the_requester_sees_it(demo_world):
    request = ask_access(demo_world)
    with pytest.raises(Exception, match="say why"):
        service.deny("access", request.pk, demo_world.admin, "")
    service.deny("access", request.pk, demo_world.admin, "use robotics-inference for this")
    request.refresh_from_db()
    assert request.status == RequestStatus.DENIED and not may_submit(demo_world.nobody, TRAINING)
    html = demo_world.client(demo_world.nobody).get("/requests/").content.decode()
    assert "Denied by boss" in html and "use robotics-inference for this" in html
    with pytest.raises(Conflict, match="already decided"):
        service.approve_access(request.pk, demo_world.admin)
    assert AuditEvent.objects.filter(action="request.deny", target=f"access-request/{request.pk}").exists()


def test_only_deciders_may_decide(demo_world):
    request = ask_access(demo_world)
    with pytest.raises(PermissionDenied, match="may not decide access requests"):
        service.approve_access(request.pk, demo_world.researcher)
    RoleFactory(
        name="request-readers", policies=[{"effect": "Allow", "actions": ["config:*"], "resources": ["config/request"]}]
    )
    half = person("half", "request-readers")
    with pytest.raises(PermissionDenied, match="config:Update on config/role"):
        service.approve_access(request.pk, half)
    request.refresh_from_db()
    assert request.is_pending


# --- pool requests ---------------------------------------------------------------------------------------


def test_hardware_kinds_come_from_single_product_platforms(demo_world):
    choices = {choice.key: choice for choice in service.hardware_choices()}
    assert choices["NVIDIA-H100-80GB-HBM3"].template == "robotics-training/h100-platform"
    assert choices["NVIDIA-H100-80GB-HBM3"].short == "h100"
    assert choices["cpu"].label.startswith("CPU only")
    assert "Tesla-T4" in choices and "NVIDIA-L40S" in choices


def test_approving_a_pool_request_creates_the_pool_and_its_role(demo_world):
    client = demo_world.client(demo_world.nobody)
    response = client.post(
        "/requests/",
        {
            "kind": "pool",
            "team": "vision",
            "hardware": "NVIDIA-H100-80GB-HBM3",
            "gpus": "16",
            "purpose": "train detectors",
        },
    )
    assert response.status_code == 302
    request = PoolRequest.objects.get()
    assert request.pool_name == "vision-h100" and request.template == "robotics-training/h100-platform"
    outcome = service.approve_pool(request.pk, demo_world.admin, "enjoy")
    assert outcome.pool == "vision-h100" and outcome.role == "osmo-vision" and outcome.role_created
    pool = Pool.objects.get(name="vision-h100")
    assert list(pool.platforms.values_list("name", flat=True)) == ["h100-platform"]
    assert pool.default_platform == "h100-platform" and pool.backend.name == "gpu-cluster-01"
    assert (pool.gpu_guarantee, pool.gpu_maximum) == (16, 16)
    assert "Team vision: train detectors" in pool.description
    assert may_submit(demo_world.nobody, "vision-h100")
    catalog = client.get("/").content.decode()
    assert 'id="pool-vision-h100" data-usable="yes"' in catalog
    html = client.get("/requests/").content.decode()
    assert "Open vision-h100" in html and "enjoy" in html
    assert AuditEvent.objects.filter(action="config.update", target="POOL vision-h100").exists()


def test_pool_request_approval_with_another_name_and_a_taken_name(demo_world):
    request = service.request_pool(demo_world.nobody, "robotics", "NVIDIA-L40S", 4, "sim")
    with pytest.raises(Conflict, match="exists already"):
        service.approve_pool(request.pk, demo_world.admin, pool_name=TRAINING)
    outcome = service.approve_pool(request.pk, demo_world.admin, pool_name="robotics-l40s-b")
    assert outcome.role == "osmo-robotics" and not outcome.role_created  # the team's role already covers it


def test_pool_request_validation(demo_world):
    with pytest.raises(Exception, match="hardware kinds"):
        service.request_pool(demo_world.nobody, "vision", "NVIDIA-B300", 8, "x")
    with pytest.raises(Exception, match="CPU-only"):
        service.request_pool(demo_world.nobody, "vision", "cpu", 8, "x")
    response = demo_world.client(demo_world.nobody).post(
        "/requests/", {"kind": "pool", "team": "Vision Team", "hardware": "cpu", "gpus": "0", "purpose": "x"}
    )
    assert response.status_code == 400 and b"lowercase letters" in response.content


# --- the admin console -----------------------------------------------------------------------------------


def test_admin_queue_and_decision_form_approve(demo_world):
    request = ask_access(demo_world)
    admin = demo_world.client(demo_world.admin)
    changelist = admin.get(reverse("admin:selfservice_accessrequest_changelist"))
    assert changelist.status_code == 200 and b"nobody" in changelist.content
    change = admin.get(reverse("admin:selfservice_accessrequest_change", args=[request.pk]))
    assert change.status_code == 200 and b"Decide" in change.content
    url = reverse("admin:selfservice_accessrequest_decide", args=[request.pk])
    assert b"grasping experiments" in admin.get(url).content
    refused = admin.post(url, {"decision": "deny", "comment": ""})
    assert refused.status_code == 200 and b"Say why" in refused.content
    response = admin.post(url, {"decision": "approve", "comment": "ok for Q3"})
    assert response.status_code == 302
    request.refresh_from_db()
    assert request.status == RequestStatus.APPROVED and request.comment == "ok for Q3"
    assert request.decided_by == demo_world.admin and request.granted_role == "osmo-robotics"
    assert may_submit(demo_world.nobody, TRAINING)


def test_admin_bulk_actions_ask_one_comment(demo_world):
    first, second = ask_access(demo_world), ask_access(demo_world, OTHER)
    admin = demo_world.client(demo_world.admin)
    url = reverse("admin:selfservice_accessrequest_changelist")
    ask = admin.post(url, {"action": "deny_selected", "_selected_action": [first.pk, second.pk]})
    assert ask.status_code == 200 and b"Deny 2 request(s)" in ask.content
    done = admin.post(
        url,
        {
            "action": "deny_selected",
            "_selected_action": [first.pk, second.pk],
            "confirm": "yes",
            "comment": "quota exhausted",
        },
    )
    assert done.status_code == 302
    assert set(AccessRequest.objects.values_list("status", "comment")) == {(RequestStatus.DENIED, "quota exhausted")}


def test_admin_pool_request_decision_creates_the_pool(demo_world):
    request = service.request_pool(demo_world.researcher, "vision", "NVIDIA-A100-SXM4-80GB", 8, "finetune")
    admin = demo_world.client(demo_world.admin)
    url = reverse("admin:selfservice_poolrequest_decide", args=[request.pk])
    assert b'value="vision-a100"' in admin.get(url).content
    response = admin.post(url, {"decision": "approve", "comment": "", "pool_name": "vision-a100"})
    assert response.status_code == 302, response.content.decode()[-3000:]
    assert Pool.objects.filter(name="vision-a100").exists() and may_submit(demo_world.researcher, "vision-a100")


def test_a_pool_admin_may_not_see_the_queues(demo_world):
    RoleFactory(
        name="pool-admins", policies=[{"effect": "Allow", "actions": ["config:*"], "resources": ["config/pool"]}]
    )
    client = demo_world.client(person("poolie", "pool-admins"))
    assert client.get(reverse("admin:selfservice_accessrequest_changelist")).status_code == 403
    assert client.get(reverse("admin:selfservice_poolrequest_changelist")).status_code == 403


@pytest.mark.parametrize("kind", ["access", "pool"])
def test_requests_of_a_known_kind_lead_to_its_form(demo_world, kind):
    response = demo_world.client(demo_world.nobody).get(f"/requests/{kind}/")
    assert response.status_code == 302 and response["Location"] == f"/requests/#{kind}"


def test_requests_of_an_unknown_kind_is_a_404_naming_it(demo_world):
    response = demo_world.client(demo_world.nobody).get("/requests/gpus/")
    html = response.content.decode()
    assert response.status_code == 404
    assert "there is no &#x27;gpus&#x27; request; requests are access or pool requests" in html


def test_withdrawing_a_request_of_an_unknown_kind_says_why(demo_world):
    client = demo_world.client(demo_world.nobody)
    response = client.post("/requests/gpus/1/withdraw/", follow=True)
    assert response.status_code == 200 and "requests are access or pool requests" in response.content.decode()


def test_posting_a_request_of_an_unknown_kind_says_why(demo_world):
    response = demo_world.client(demo_world.nobody).post("/requests/", {"kind": "gpus", "pool": TRAINING})
    html = response.content.decode()
    assert response.status_code == 400
    assert "kind: there is no &#x27;gpus&#x27; request; requests are access or pool requests" in html
