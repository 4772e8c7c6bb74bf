"""The what-if's two replays side by side (quotas.services.replay_pair): the proposed one in a forked child gives
the very report it gives in this process, job for job and row for row; the engine's refusal in the child reaches
the caller as the same error; no change means one replay standing for both."""

from __future__ import annotations

import dataclasses

import pytest

from pools.engine.errors import EngineError
from pools.engine.quota_model import Quota, QuotaTree, TeamQuota
from pools.engine.replay import ReplayJob, replay
from quotas.services.replay_pair import replay_pair
from tests.unit.test_replay import recorded_period


def raised(trees: dict[str, QuotaTree], project: str, to: int) -> dict[str, QuotaTree]:
    def change(team: TeamQuota) -> TeamQuota:
        return dataclasses.replace(team, quotas={**team.quotas, "gpu": Quota(to)}) if team.name == project else team

    return {pool: dataclasses.replace(tree, projects=tuple(map(change, tree.projects))) for pool, tree in trees.items()}


def same(one, other) -> None:
    assert one.admissions() == other.admissions() and list(one.jobs.values()) == list(other.jobs.values())
    assert one.figures() == other.figures() and (one.passes, one.seconds_run) == (other.passes, other.seconds_run)
    assert one.input is other.input or one.input == other.input


def test_the_forked_replay_gives_the_report_the_process_itself_gives():
    _, baseline = recorded_period()
    project = baseline.jobs[0].project
    proposed = dataclasses.replace(baseline, trees=raised(baseline.trees, project, 40))
    first, second = replay_pair(baseline, proposed)
    same(first, replay(baseline))
    same(second, replay(proposed))
    assert second.input is proposed
    assert first.admissions() != second.admissions()  # the raised quota changed something: two different runs


def test_the_engine_refusing_the_proposed_input_in_the_child_raises_its_error_here():
    _, baseline = recorded_period()
    bad = dataclasses.replace(baseline, jobs=(*baseline.jobs, ReplayJob("w-bad", "p", {"nowhere": 1}, 0, 60)))
    with pytest.raises(EngineError) as refused:
        replay_pair(baseline, bad)
    assert (refused.value.field, refused.value.value) == ("jobs.w-bad.parts", "nowhere")


def test_without_a_change_one_replay_stands_for_both():
    _, baseline = recorded_period()
    first, second = replay_pair(baseline, None)
    assert first is second
    same(first, replay(baseline))


def _stuck_child(given, sending) -> None:
    """A child that never answers, as one that inherited a lock held by another thread at the fork would be."""
    import threading

    threading.Event().wait()


def test_a_child_that_never_answers_is_given_up_and_its_replay_run_here(monkeypatch):
    from quotas.services import replay_pair as pair

    monkeypatch.setattr(pair, "_replay_in_child", _stuck_child)
    monkeypatch.setattr(pair, "CHILD_GRACE_SECONDS", 0.5)
    _, baseline = recorded_period()
    proposed = dataclasses.replace(baseline, trees=raised(baseline.trees, baseline.jobs[0].project, 40))
    first, second = replay_pair(baseline, proposed)
    same(first, replay(baseline))
    same(second, replay(proposed))


def _child_that_answers_and_never_leaves(given, sending) -> None:
    """A child stuck on its way out, as one flushing a stream whose lock another thread held at the fork would be."""
    import threading

    from quotas.services import replay_pair as pair

    pair._answer(given, sending)
    threading.Event().wait()


def test_a_child_that_answered_but_does_not_leave_is_killed_and_its_answer_kept(monkeypatch):
    from quotas.services import replay_pair as pair

    monkeypatch.setattr(pair, "_replay_in_child", _child_that_answers_and_never_leaves)
    monkeypatch.setattr(pair, "CHILD_EXIT_SECONDS", 0.5)
    _, baseline = recorded_period()
    proposed = dataclasses.replace(baseline, trees=raised(baseline.trees, baseline.jobs[0].project, 40))
    first, second = replay_pair(baseline, proposed)
    same(first, replay(baseline))
    same(second, replay(proposed))
    assert second.input is proposed  # and the call returned rather than waiting on the child
