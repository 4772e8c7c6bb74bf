"""Work queued once per transaction, after it commits: a writer that touches a backend many times in one
transaction (a batch of configs, a sync writing hundreds of nodes) asks for one follow-up task, not hundreds.
A broker that is down when the callback runs is logged (`robust`), never the writer's error."""

from __future__ import annotations

from collections.abc import Callable

from django.db import transaction


def once_after_commit(tag: str, value: object, run: Callable[[], None]) -> bool:
    """Run `run` after the current transaction commits, unless a callback tagged `tag == value` is already
    waiting in it (the tag is an attribute of the callback, which tests read). Returns whether it queued."""
    for entry in transaction.get_connection().run_on_commit:  # (savepoints, callback, robust)
        if getattr(entry[1], tag, None) == value and not entry[1].ran:
            return False

    def callback() -> None:
        callback.ran = True
        run()

    setattr(callback, tag, value)
    callback.ran = False
    transaction.on_commit(callback, robust=True)
    return True
