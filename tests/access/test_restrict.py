"""`policy.restrict` on every kind of list (pools, workflows, revisions, requests), and `policy.require`:
one generic filter built from what each model declares, and one refusal path (decide, audit, raise)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import RequestFactory
from django.test.utils import CaptureQueriesContext

from access import actions, policy
from access.models import AuditEvent
from configs import store
from configs.models import Revision
from pools.models import Pool
from portal.errors import PermissionDenied
from portal.resources import PolicyResources, Scope
from selfservice.models import AccessRequest
from tests.access.conftest import ACTOR, allow, deny, holder, role
from tests.factories import PoolFactory, UserFactory, WorkflowFactory
from workflows.models import Workflow

pytestmark = pytest.mark.django_db


def names(queryset) -> list[str]:
    return sorted(str(row) for row in queryset)


def test_workflows_are_restricted_by_pool_and_owner():
    team_a, team_b = PoolFactory(name="team-a"), PoolFactory(name="team-b")
    role("a-readers", allow([actions.WORKFLOW_LIST], ["pool/team-a*"]))
    reader = holder("a-readers")
    WorkflowFactory(pool=team_a, workflow_id="in-a-1")
    WorkflowFactory(pool=team_b, workflow_id="in-b-1")
    WorkflowFactory(pool=team_b, workflow_id="mine-1", submitted_by=reader)
    assert names(policy.restrict(Workflow.objects.all(), reader, actions.WORKFLOW_LIST)) == ["in-a-1", "mine-1"]
    # an owner reads their own workflow whatever their roles; nobody else's in pool team-b
    assert policy.decide(reader, actions.WORKFLOW_READ, obj=Workflow.objects.get(workflow_id="mine-1"))
    assert not policy.decide(reader, actions.WORKFLOW_READ, obj=Workflow.objects.get(workflow_id="in-b-1"))


def test_a_deny_hides_rows_only_within_its_own_role():
    for name in ("team-a", "team-a-frozen", "team-b"):
        PoolFactory(name=name)
    role(
        "team-a",
        allow([actions.WORKFLOW_ALL], ["pool/team-a*"]),
        deny([actions.WORKFLOW_CREATE], ["pool/team-a-frozen"]),
    )
    user = holder("team-a")
    assert names(policy.restrict(Pool.objects.all(), user, actions.WORKFLOW_CREATE)) == ["team-a"]
    role("everything", allow([actions.WORKFLOW_CREATE], ["pool/*"]))
    both = holder("team-a", "everything")
    assert names(policy.restrict(Pool.objects.all(), both, actions.WORKFLOW_CREATE)) == [
        "team-a",
        "team-a-frozen",
        "team-b",
    ]


def test_revisions_are_restricted_by_config_type():
    store.apply("POD_TEMPLATE", "tiny", {"spec": {}}, ACTOR)
    store.apply(
        "RESOURCE_VALIDATION",
        "cpu",
        [{"left_operand": "1", "operator": "LE", "right_operand": "2", "assert_message": "never"}],
        ACTOR,
    )
    role("template-readers", allow([actions.CONFIG_READ], ["config/pod_template"]))
    reader = holder("template-readers")
    visible = policy.restrict(Revision.objects.all(), reader, (actions.CONFIG_READ, actions.CONFIG_UPDATE))
    assert {revision.config_type for revision in visible} == {"POD_TEMPLATE"}


def test_requests_are_visible_to_queue_readers_and_to_their_requester():
    pool = PoolFactory(name="team-a")
    requester, someone = UserFactory(), UserFactory()
    AccessRequest.objects.create(requester=requester, pool=pool, justification="mine")
    AccessRequest.objects.create(requester=someone, pool=pool, justification="theirs")
    role("queue", allow([actions.CONFIG_READ], ["config/request"]))
    rows = policy.restrict(AccessRequest.objects.all(), requester, actions.CONFIG_READ)
    assert [row.justification for row in rows] == ["mine"]
    assert policy.restrict(AccessRequest.objects.all(), holder("queue"), actions.CONFIG_READ).count() == 2
    assert not policy.restrict(AccessRequest.objects.all(), requester, actions.CONFIG_UPDATE).exists()


def test_restrict_is_one_query_and_none_without_a_rule():
    PoolFactory(name="team-a")
    user = holder()
    subject = policy.principal(user)
    subject.roles  # noqa: B018
    with CaptureQueriesContext(connection) as queries:
        assert list(policy.restrict(Pool.objects.all(), subject, actions.WORKFLOW_CREATE)) == []
    assert len(queries) == 0  # no rule matches: an empty queryset, no query


def test_a_model_without_declared_resources_is_refused_clearly():
    with pytest.raises(TypeError, match="declares no policy_resources"):
        policy.restrict(UserFactory._meta.model.objects.all(), holder(), actions.CONFIG_READ)
    declared = PolicyResources(Scope("pool", field="name"))
    with pytest.raises(LookupError, match="declares no 'config' resources"):
        declared.scope("config", Pool)
    with pytest.raises(ValueError, match="exactly one of field= and fixed="):
        Scope("pool")


def test_require_audits_a_refusal_and_raises():
    PoolFactory(name="team-b")
    request = RequestFactory().post("/pools/team-b/submit")
    request.user = holder("osmo-user", username="rita")
    with pytest.raises(PermissionDenied) as refused:
        policy.require(
            request,
            actions.WORKFLOW_CREATE,
            actions.pool("team-b"),
            refusal="may not submit workflows to pool team-b",
            field="pool",
            value="team-b",
        )
    assert str(refused.value.reason).startswith("rita may not submit workflows to pool team-b: no policy of roles")
    assert (refused.value.field, refused.value.value) == ("pool", "team-b")
    event = AuditEvent.objects.get(action="access.denied")
    assert (event.target, event.source) == ("workflow:Create on pool/team-b", "page")
    assert policy.require(request, actions.WORKFLOW_READ, actions.pool("team-b")).allowed  # osmo-user reads


def test_require_without_a_request_raises_without_auditing():
    with pytest.raises(PermissionDenied, match="may not config:Update on config/pool"):
        policy.require(holder(), actions.CONFIG_UPDATE, actions.config("pool"))
    assert not AuditEvent.objects.filter(action="access.denied").exists()


def test_the_requests_page_is_constant_queries(client):
    requester = holder("osmo-user")
    client.force_login(requester)
    pools = [PoolFactory(name=f"team-{index}") for index in range(8)]
    AccessRequest.objects.create(requester=requester, pool=pools[0], justification="first")
    client.get("/requests/")  # warm caches
    with CaptureQueriesContext(connection) as few:
        assert client.get("/requests/").status_code == 200
    for pool in pools[1:]:
        AccessRequest.objects.create(requester=requester, pool=pool, justification="more")
        AccessRequest.objects.create(requester=UserFactory(), pool=pool, justification="someone else's")
    with CaptureQueriesContext(connection) as many:
        page = client.get("/requests/")
    assert page.content.count(b"someone else") == 0
    assert len(many) == len(few)
