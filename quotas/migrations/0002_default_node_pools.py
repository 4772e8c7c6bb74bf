"""Every existing backend gets its Default node pool (`<backend>-default`), holding all of its nodes, with a
NODE_POOL revision (so history and rollback see it as if the store had written it), and every existing
department and project gets the zero quota in it. New backends and teams get theirs from quotas.receivers."""

from django.db import migrations

RESOURCES = ("gpu", "cpu", "memory")


def snapshot(backend_name: str) -> dict:
    # the NODE_POOL document of a Default node pool with no quota (quotas.config_types)
    return {
        "backend": backend_name,
        "selector": {},
        "over_quota": True,
        "description": "",
        "departments": {},
        "projects": {},
    }


def create_defaults(apps, schema_editor):
    Backend = apps.get_model("clusters", "Backend")
    Node = apps.get_model("clusters", "Node")
    NodePool = apps.get_model("quotas", "NodePool")
    NodePoolMember = apps.get_model("quotas", "NodePoolMember")
    Quota = apps.get_model("quotas", "Quota")
    Department = apps.get_model("teams", "Department")
    Project = apps.get_model("teams", "Project")
    Change = apps.get_model("configs", "Change")
    Revision = apps.get_model("configs", "Revision")
    backends = list(Backend.objects.order_by("name"))
    if not backends:
        return
    latest = Change.objects.filter(config_type="NODE_POOL").order_by("-revision").first()
    change = Change.objects.create(
        config_type="NODE_POOL",
        revision=(latest.revision if latest else 0) + 1,
        name="",
        username="system",
        source="system",
        description="the Default node pools of the existing backends",
    )
    departments = list(Department.objects.values_list("pk", flat=True))
    projects = list(Project.objects.values_list("pk", flat=True))
    for backend in backends:
        pool = NodePool.objects.create(name=f"{backend.name}-default", backend=backend, selector_kind="default")
        Revision.objects.create(
            change=change,
            config_type="NODE_POOL",
            name=pool.name,
            revision=1,
            snapshot=snapshot(backend.name),
            author_name="system (system)",
            description=f"the Default node pool of backend {backend.name}",
        )
        NodePoolMember.objects.bulk_create(
            [NodePoolMember(node_pool=pool, node_id=pk) for pk in Node.objects.filter(backend=backend).values_list("pk", flat=True)],
            batch_size=1000,
        )
        rows = [Quota(node_pool=pool, department_id=pk, resource=r) for pk in departments for r in RESOURCES]
        rows += [Quota(node_pool=pool, project_id=pk, resource=r) for pk in projects for r in RESOURCES]
        Quota.objects.bulk_create(rows, batch_size=1000)


class Migration(migrations.Migration):
    dependencies = [
        ("quotas", "0001_initial"),
        ("configs", "0003_node_pool_config_type"),
        ("clusters", "0001_initial"),
        ("teams", "0001_initial"),
    ]

    operations = [migrations.RunPython(create_defaults, migrations.RunPython.noop)]
