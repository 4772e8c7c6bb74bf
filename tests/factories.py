"""factory-boy factories for every model the tests build."""

from __future__ import annotations

import hashlib
from datetime import timedelta

import factory
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.utils import timezone

from access.models import APIToken, Role
from clusters.models import Backend, MachinePool, Node
from pools.models import (
    Platform,
    PlatformTemplate,
    PlatformValidation,
    PodTemplate,
    Pool,
    PoolTemplate,
    PoolValidation,
    ResourceValidation,
)
from quotas.models import NodePool, Quota
from teams.models import Department, Project, role_name
from workflows.models import Task, Workflow, WorkflowPart


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)

    username = factory.Sequence(lambda n: f"user{n}")
    email = factory.LazyAttribute(lambda u: f"{u.username}@example.com")
    password = factory.django.Password("password")


class BackendFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Backend
        django_get_or_create = ("name",)

    name = factory.Sequence(lambda n: f"cluster-{n:03d}")
    description = "test cluster"


class MachinePoolFactory(factory.django.DjangoModelFactory):
    """The seed's GPU spot pool shape by default: g4dn.xlarge, 0-3 nodes, GPU and spot taints."""

    class Meta:
        model = MachinePool
        django_get_or_create = ("name",)

    backend = factory.SubFactory(BackendFactory)
    name = factory.Sequence(lambda n: f"machines-{n:03d}")
    instance_type = "g4dn.xlarge"
    autoscaling = True
    min_replicas = 0
    max_replicas = 3
    spot = True
    labels = factory.LazyFunction(lambda: {"node-type": "gpu"})
    taints = factory.LazyFunction(
        lambda: [
            {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"},
            {"key": "spot", "value": "true", "effect": "PreferNoSchedule"},
        ]
    )


class WorkerMachinePoolFactory(MachinePoolFactory):
    """The seed's additional worker pool shape: m5.xlarge, 1-5 nodes, on-demand, no labels or taints."""

    name = factory.Sequence(lambda n: f"workers-{n:03d}")
    instance_type = "m5.xlarge"
    min_replicas = 1
    max_replicas = 5
    spot = False
    labels = factory.LazyFunction(dict)
    taints = factory.LazyFunction(list)


class PodTemplateFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = PodTemplate
        django_get_or_create = ("name",)

    name = factory.Sequence(lambda n: f"template_{n:03d}")
    body = factory.LazyFunction(lambda: {"spec": {"nodeSelector": {"kubernetes.io/arch": "amd64"}}})


class ResourceValidationFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = ResourceValidation
        django_get_or_create = ("name",)

    name = factory.Sequence(lambda n: f"validation_{n:03d}")
    rules = factory.LazyFunction(
        lambda: [
            {
                "operator": "GT",
                "left_operand": "{{USER_CPU}}",
                "right_operand": "0",
                "assert_message": "CPU must be greater than 0",
            }
        ]
    )


class PoolFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Pool
        django_get_or_create = ("name",)

    name = factory.Sequence(lambda n: f"pool-{n:03d}")
    description = "test pool"
    backend = factory.SubFactory(BackendFactory)
    common_default_variables = factory.LazyFunction(
        lambda: {"USER_CPU": 1, "USER_GPU": 0, "USER_MEMORY": "1Gi", "USER_STORAGE": "1Gi"}
    )


class PlatformFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Platform

    pool = factory.SubFactory(PoolFactory)
    name = factory.Sequence(lambda n: f"platform-{n:03d}")


class PoolTemplateFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = PoolTemplate

    pool = factory.SubFactory(PoolFactory)
    template = factory.SubFactory(PodTemplateFactory)
    position = factory.Sequence(int)


class PoolValidationFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = PoolValidation

    pool = factory.SubFactory(PoolFactory)
    validation = factory.SubFactory(ResourceValidationFactory)
    position = factory.Sequence(int)


class PlatformTemplateFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = PlatformTemplate

    platform = factory.SubFactory(PlatformFactory)
    template = factory.SubFactory(PodTemplateFactory)
    position = factory.Sequence(int)


class PlatformValidationFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = PlatformValidation

    platform = factory.SubFactory(PlatformFactory)
    validation = factory.SubFactory(ResourceValidationFactory)
    position = factory.Sequence(int)


class NodeFactory(factory.django.DjangoModelFactory):
    """A node of a backend's inventory, as a sync would store it. `NodeFactory(backend=b, gpu_allocatable=8)`;
    pool membership is `NodeMembership`'s (the sync derives it)."""

    class Meta:
        model = Node

    backend = factory.SubFactory(BackendFactory)
    name = factory.Sequence(lambda n: f"node-{n:03d}")
    ready = True


# --- workflows ---------------------------------------------------------------------------------------


class WorkflowFactory(factory.django.DjangoModelFactory):
    """A stored workflow (history only: no tasks, no pods). `WorkflowFactory(pool=pool)`. One charged to a
    node pool (`node_pool=…`, `requests=…`) has its one part there, as a submission stores it."""

    class Meta:
        model = Workflow
        skip_postgeneration_save = True

    workflow_id = factory.Sequence(lambda n: f"hello-{n + 1}")
    name = "hello"
    pool = factory.SubFactory(PoolFactory)
    submitted_by = factory.SubFactory(UserFactory)

    @factory.post_generation
    def part(workflow, create, extracted, **kwargs):
        if create and workflow.node_pool:
            admitted = workflow.admitted_at or (None if workflow.status == "QUEUED" else workflow.created_at)
            WorkflowPart.objects.create(
                workflow=workflow,
                node_pool=workflow.node_pool,
                requests=workflow.requests,
                admitted_at=admitted,
                preemptible=workflow.preemptible,
            )


class TaskFactory(factory.django.DjangoModelFactory):
    """A stored task (no pod in any cluster). `TaskFactory(workflow=workflow, status="RUNNING")`."""

    class Meta:
        model = Task

    workflow = factory.SubFactory(WorkflowFactory)
    name = factory.Sequence(lambda n: f"task-{n}")
    group_name = factory.LazyAttribute(lambda task: task.name)
    lead = True
    platform = "default"
    pod_name = factory.LazyAttribute(lambda task: f"{task.workflow.workflow_id}-{task.name}")
    namespace = "default"


# --- access ------------------------------------------------------------------------------------------


class RoleFactory(factory.django.DjangoModelFactory):
    """A role with its group. `RoleFactory(name="osmo-team", policies=[...])`; hold it with
    `user.groups.add(role.group)` or `access.services.roles.update_user_roles`."""

    class Meta:
        model = Role
        django_get_or_create = ("name",)

    name = factory.Sequence(lambda n: f"role-{n:03d}")
    group = factory.LazyAttribute(lambda role: Group.objects.get_or_create(name=role.name)[0])
    description = "test role"
    policies = factory.LazyFunction(lambda: [{"effect": "Allow", "actions": ["workflow:*"], "resources": ["pool/*"]}])


class TokenFactory(factory.django.DjangoModelFactory):
    """An API token; the created object carries its plain `secret` (only for tests)."""

    class Meta:
        model = APIToken
        skip_postgeneration_save = True

    user = factory.SubFactory(UserFactory)
    name = factory.Sequence(lambda n: f"token-{n:03d}")
    secret = factory.Sequence(lambda n: f"pp_test-secret-{n:06d}")
    expires_at = factory.LazyFunction(lambda: timezone.now() + timedelta(days=30))

    @classmethod
    def _create(cls, model_class, *args, secret, **kwargs):
        token = super()._create(
            model_class, *args, token_hash=hashlib.sha256(secret.encode()).hexdigest(), prefix=secret[:10], **kwargs
        )
        token.secret = secret
        return token

    @factory.post_generation
    def roles(self, create, extracted, **kwargs):
        if create and extracted:
            self.roles.set(extracted)


# --- teams -------------------------------------------------------------------------------------------


class DepartmentFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Department
        django_get_or_create = ("name",)

    name = factory.Sequence(lambda n: f"department-{n:03d}")
    description = "test department"


class ProjectFactory(factory.django.DjangoModelFactory):
    """A project with its role `osmo-<name>` (OSMO's generated pool role: workflow:* on pool/<name>*).
    Members: `user.groups.add(project.role.group)`."""

    class Meta:
        model = Project
        django_get_or_create = ("name",)

    name = factory.Sequence(lambda n: f"project-{n:03d}")
    department = factory.SubFactory(DepartmentFactory)
    description = "test project"
    role = factory.LazyAttribute(
        lambda project: RoleFactory(
            name=role_name(project.name),
            policies=[{"effect": "Allow", "actions": ["workflow:*"], "resources": [f"pool/{project.name}*"]}],
        )
    )


# --- quotas ------------------------------------------------------------------------------------------


class NodePoolFactory(factory.django.DjangoModelFactory):
    """A node pool row (a label selector by default), without the zero quota rows the NODE_POOL config type
    writes: `NodePoolFactory(backend=b, label_key="gpu", label_value="a100")`. Tests of the rules use
    `configs.store.apply("NODE_POOL", …)`; a backend's Default exists from its creation (quotas.receivers)."""

    class Meta:
        model = NodePool
        django_get_or_create = ("name",)

    name = factory.Sequence(lambda n: f"node-pool-{n:03d}")
    backend = factory.SubFactory(BackendFactory)
    selector_kind = "label"
    label_key = "example.com/node-pool"
    label_value = factory.LazyAttribute(lambda pool: pool.name)


class QuotaFactory(factory.django.DjangoModelFactory):
    """One quota row: `QuotaFactory(node_pool=p, project=vision, resource="gpu", deserved=8)`."""

    class Meta:
        model = Quota

    node_pool = factory.SubFactory(NodePoolFactory)
    resource = "gpu"
    deserved = 0

    @classmethod
    def _create(cls, model_class, *args, node_pool, resource, department=None, project=None, **values):
        # a team's zero row may already be there (quotas.receivers): set it
        row, _ = model_class.objects.update_or_create(
            node_pool=node_pool, resource=resource, department=department, project=project, defaults=values
        )
        return row
