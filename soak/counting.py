"""What the proof counts: every pod the simulated cluster ever created (a store listener, so pods deleted later
count too), and the Celery messages workers received again after another worker died holding them."""

from __future__ import annotations

import collections
import re
import threading

RECEIVED = re.compile(r"Task workflows\.tasks\.create_pods\[([0-9a-f-]+)\] received")
# how Celery's worker ends a task's line: done, failed, or handed back as a retry (a new message)
FINISHED = re.compile(r"Task workflows\.tasks\.create_pods\[([0-9a-f-]+)\] (?:succeeded|raised|retry)")


class PodCreations:
    """Listens to the emulator's store: a pod ADDED is a creation (a 409 on create adds nothing). Also keeps each
    pod's last phase, or "Deleted" once it is gone (the soak compares them with the portal's tasks)."""

    def __init__(self, instance: str, cluster: str = "") -> None:
        self.instance, self.cluster = instance, cluster
        self.by_name: collections.Counter[str] = collections.Counter()
        self.phase: dict[str, str] = {}
        self._lock = threading.Lock()

    def __call__(self, etype: str, rt, old: dict | None, new: dict) -> None:
        if rt.plural != "pods":
            return
        metadata = new["metadata"]
        if (metadata.get("labels") or {}).get("pool-portal/instance") != self.instance:
            return
        with self._lock:
            if etype == "ADDED":
                self.by_name[metadata["name"]] += 1
            if etype == "DELETED":
                self.phase[metadata["name"]] = "Deleted"
            else:
                self.phase[metadata["name"]] = (new.get("status") or {}).get("phase") or "Pending"

    def snapshot(self) -> collections.Counter[str]:
        with self._lock:
            return collections.Counter(self.by_name)

    def phases(self) -> dict[str, str]:
        with self._lock:
            return dict(self.phase)


def received(log: str) -> collections.Counter[str]:
    return collections.Counter(RECEIVED.findall(log))


def in_hand(log: str) -> set[str]:
    """Messages a worker received and never finished: what it held when it died."""
    return set(RECEIVED.findall(log)) - set(FINISHED.findall(log))


def redelivered(*logs: str) -> int:
    """Messages received more than once, by any worker."""
    return sum(1 for times in sum((received(log) for log in logs), collections.Counter()).values() if times > 1)
