"""The notifications app's signal receiver, connected by `notifications.apps.NotificationsConfig.ready()`
(docs/architecture.md, "Reactions across apps"). Imports are lazy: this module is imported while the apps load."""

from __future__ import annotations

import logging

log = logging.getLogger(__name__)


def workflow_finished(sender, *, workflow_pk, **kwargs) -> None:
    """A workflow finished (after commit): tell its submitter on the channels they switched on. Whatever goes
    wrong here is logged and recorded, never raised into the step that finished the workflow."""
    from notifications.services import outbox

    try:
        outbox.notify(workflow_pk, outbox.FINISHED)
    except Exception:
        log.exception("workflow #%s: notifications not queued", workflow_pk)
