"""The what-if's two replays (baseline and proposed) side by side, each on a core of its own.

The two replays share no state: the proposed one runs in a forked child while this process runs the baseline,
so a what-if takes about as long as one replay instead of two (docs/performance.md, "What-if"). Fork, not
spawn: the child inherits the input as it is in memory (pickling ~47,000 jobs costs half a second) and sends back
only its per-project rows and compact per-job outcomes. The child runs the pure engine only (no database, no
logging) and leaves through os._exit, so it touches none of the parent's connections.

Where fork is missing or this process may use one core only, or the child dies, or it has not answered well after
the baseline took its time (a fork in a threaded web worker can inherit a lock another thread held), the replays
run one after the other here: the same reports, only slower.
"""

from __future__ import annotations

import multiprocessing
import os
import time
import traceback

from pools.engine.replay import JobOutcome, ReplayInput, ReplayReport, replay

# How long the child may take past the baseline's end: the two replays cost about the same, so twice the
# baseline's time, and at least this, before the child is given up for stuck
CHILD_GRACE_SECONDS = 30.0
# How long a child that has answered may take to leave before it is killed: it leaves through os._exit at once,
# so only a child stuck on an inherited lock takes longer
CHILD_EXIT_SECONDS = 5.0


def replay_pair(baseline: ReplayInput, proposed: ReplayInput | None) -> tuple[ReplayReport, ReplayReport]:
    """Both reports; `proposed` None means no change: the baseline stands for both."""
    if proposed is None:
        report = replay(baseline)
        return report, report
    if not _parallel():
        return replay(baseline), replay(proposed)
    context = multiprocessing.get_context("fork")
    receiving, sending = context.Pipe(duplex=False)
    child = context.Process(target=_replay_in_child, args=(proposed, sending), daemon=True)
    child.start()
    sending.close()
    answer = None
    try:
        started = time.monotonic()
        first = replay(baseline)
        answer = _receive(receiving, max(CHILD_GRACE_SECONDS, 2 * (time.monotonic() - started)))
    finally:
        receiving.close()
        _end(child, stuck=answer is None)
    if answer is None:  # the child died (killed, out of memory) or is stuck: do its work here
        return first, replay(proposed)
    if isinstance(answer, BaseException):
        raise answer
    return first, _report(proposed, *answer)


def _parallel() -> bool:
    if "fork" not in multiprocessing.get_all_start_methods():
        return False
    return len(os.sched_getaffinity(0)) > 1 if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1) > 1


def _end(child, stuck: bool) -> None:
    """Reap the child; one that gave no answer, or answered and did not leave, is stopped rather than waited on."""
    if stuck:
        child.terminate()
    child.join(CHILD_EXIT_SECONDS)
    if child.is_alive():  # SIGTERM ignored or a lock held on the way out: SIGKILL is not refused
        child.kill()
        child.join()


def _receive(receiving, timeout: float):
    """The child's answer; None when it died first or gave none within `timeout` seconds."""
    try:
        return receiving.recv() if receiving.poll(timeout) else None
    except EOFError:
        return None


def _replay_in_child(given: ReplayInput, sending) -> None:
    """The child's whole life: answer, then leave through os._exit, skipping multiprocessing's exit (which flushes
    the standard streams and runs finalizers, any of which may wait on a lock another thread of the parent held
    at the fork)."""
    _answer(given, sending)
    os._exit(0)


def _answer(given: ReplayInput, sending) -> None:
    try:
        report = replay(given)
        jobs = [
            (j.id, j.project, j.submitted, j.started, j.ended, j.preemptions, j.cancelled) for j in report.jobs.values()
        ]
        sending.send((jobs, report.projects, report.passes, report.seconds_run))
    except Exception as error:  # the engine's refusal (EngineError) reaches the caller as it would in-process
        try:
            sending.send(error)
        except Exception:  # an error that does not pickle: its text does
            sending.send(RuntimeError(traceback.format_exc()))
    finally:
        sending.close()


def _report(given: ReplayInput, jobs: list[tuple], projects: dict, passes: int, seconds_run: int) -> ReplayReport:
    outcomes = {fields[0]: JobOutcome(*fields) for fields in jobs}
    return ReplayReport(given, outcomes, projects, passes, seconds_run)
