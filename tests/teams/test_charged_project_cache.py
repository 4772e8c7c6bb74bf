"""The per-process cache of which project a submission is charged to (teams.services.charged_project, under
the access epoch): a cached answer costs no project query, and a project created, linked to a role its
submitter holds, or deleted is seen at the next submission, in this process and in another.

These tests run outside a wrapping transaction: inside one the caches are off.
"""

from __future__ import annotations

import pytest

from access.services import roles
from teams.errors import ProjectChoiceRequired
from teams.models import Project
from teams.services import charged_project
from tests.access.test_access_cache import manage
from tests.factories import ProjectFactory, RoleFactory, UserFactory
from tests.queries import captured_queries
from tests.teams.conftest import CLI

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def alice(research):
    """A member of project vision who also holds role osmo-extra, which no project uses yet."""
    user = UserFactory(username="alice")
    ProjectFactory(name="vision", department=research)
    RoleFactory(name="osmo-extra")
    roles.update_user_roles(user, add=["osmo-vision", "osmo-extra"], actor=CLI)
    return user


def test_a_cached_answer_reads_no_project(alice):
    assert charged_project(alice).name == charged_project(alice, "vision").name == "vision"
    with captured_queries() as queries:
        assert charged_project(alice).name == "vision"
        assert charged_project(alice, "vision").name == "vision"
    assert not [q for q in queries if "teams_project" in q]


def test_a_project_created_in_another_process_is_seen_at_the_next_submission(alice):
    assert charged_project(alice).name == "vision"
    manage("team", "create", "project", "extra", "--department", "research")  # linked to osmo-extra
    with pytest.raises(ProjectChoiceRequired):
        charged_project(alice)
    assert charged_project(alice, "extra").name == "extra"


def test_a_project_created_or_deleted_in_this_process_is_seen_at_the_next_submission(alice, research):
    assert charged_project(alice).name == "vision"
    extra = ProjectFactory(name="extra", department=research, role=RoleFactory(name="osmo-extra"))
    with pytest.raises(ProjectChoiceRequired):
        charged_project(alice)
    assert charged_project(alice, "extra").name == "extra"
    Project.objects.filter(pk=extra.pk).delete()
    assert charged_project(alice).name == "vision"
