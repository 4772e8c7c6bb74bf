"""Charging past workflows to projects: each workflow without a project gets its submitter's project, when
the submitter belongs to exactly one (holds the role of exactly one project); ambiguous ones stay as they are.

Used by the data migration that introduced `Workflow.project` (with the historical models) and by
`manage.py workflow charge-projects`, for the projects created afterwards. Queries: two, plus one UPDATE
per submitter charged.
"""

from __future__ import annotations

from collections import defaultdict


def charge_unassigned(workflow_model, project_model, user_groups_model) -> int:
    """Set `project` on workflows that have none, from their submitter's projects. Returns how many."""
    project_of_group = dict(project_model.objects.values_list("role__group_id", "pk"))
    if not project_of_group:
        return 0
    projects_of_user: dict[int, set[int]] = defaultdict(set)
    for user_id, group_id in user_groups_model.objects.filter(group_id__in=list(project_of_group)).values_list(
        "user_id", "group_id"
    ):
        projects_of_user[user_id].add(project_of_group[group_id])
    charged = 0
    for user_id, projects in projects_of_user.items():
        if len(projects) == 1:
            charged += workflow_model.objects.filter(submitted_by_id=user_id, project__isnull=True).update(
                project_id=next(iter(projects))
            )
    return charged
