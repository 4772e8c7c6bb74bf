"""Whose quotas a principal sees (docs/access.md, "Quota visibility"; issue #31 point 6).

The rule, one for every door that shows team quotas to a signed-in person (the quota REST API, the
self-service pages; the `quota` CLI is an operator's tool on the server and sees everything):
- everyone who may read quotas at all (`pool:List`) sees each node pool's totals: capacity, nodes, the
  departments' deserved sum, managed and over-committed;
- a researcher sees the numbers and names of the teams the teams API shows them
  (`teams.services.projects_visible_to` / `departments_visible_to`): their own projects, those projects'
  departments, and what they administer;
- other teams' names and figures only to those with a right to read quotas: `config:Read` on
  `config/node_pool` (admins hold it), or everybody when an admin sets QUOTA_TEAMS_VISIBLE=true.
So the quota API never names a team the teams API answers 404 for. A preempted workflow's reason names the
workflow and project it was reclaimed for: `preemption_as_seen` keeps those for viewers who may see it.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings

from access import actions, policy
from configs.models import ConfigType
from teams.services import departments_visible_to, projects_visible_to

QUOTA_RESOURCE = actions.config(ConfigType.NODE_POOL)


@dataclass(frozen=True)
class QuotaView:
    """What one principal may see of the teams: everything, or the named projects and departments."""

    everything: bool
    projects: frozenset[str] = frozenset()
    departments: frozenset[str] = frozenset()

    def shows_project(self, name: str) -> bool:
        return self.everything or name in self.projects

    def shows_department(self, name: str) -> bool:
        return self.everything or name in self.departments


EVERYTHING = QuotaView(everything=True)


def sees_every_team(who) -> bool:
    """Other teams' quotas: a right to read node pool configs, or the setting that shows them to all."""
    if who is None or getattr(settings, "QUOTA_TEAMS_VISIBLE", False):
        return True
    return policy.decide(who, actions.CONFIG_READ, QUOTA_RESOURCE).allowed


def quota_view(who) -> QuotaView:
    """`who`'s view of the teams (None: the operator, who sees everything). Two queries at most."""
    if sees_every_team(who):
        return EVERYTHING
    return QuotaView(
        everything=False,
        projects=frozenset(projects_visible_to(who).values_list("name", flat=True)),
        departments=frozenset(departments_visible_to(who).values_list("name", flat=True)),
    )


def request_quota_view(request) -> QuotaView:
    """`quota_view` of the request's principal, worked out once per request (pages ask per row)."""
    view = getattr(request, "_quota_view", None)
    if view is None:
        view = request._quota_view = quota_view(request)
    return view


OTHER_PROJECT = "reclaimed for a workflow of another project that is within its guaranteed quota"


def preemption_as_seen(preemption: dict | None, view: QuotaView) -> dict | None:
    """A workflow's `preemption` without the preemptor's workflow and project when `view` hides that project."""
    if not preemption:
        return None
    project = preemption.get("preemptor_project") or ""
    if not project or view.shows_project(project):
        return preemption
    hidden = {"preemptor", "preemptor_project", "by", "text", "reason"}
    return {**{key: value for key, value in preemption.items() if key not in hidden}, "text": OTHER_PROJECT}
