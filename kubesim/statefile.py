"""``python -m kubesim --state FILE``: keep the cluster's objects in a JSON file across restarts.

The OCM machine pools (``emulator.ocm_machine_pools``, the cloud's state behind kubesim.machinepools) are kept
with them. Every change is written, atomically through a temporary file: creations and deletions before the API
answers, other changes coalesced per loop iteration. A new process loads the file instead of the fleet, so
its pods survive the restart and the simulated kubelet finishes them (``Kubelet.start`` picks up Pending and
Running pods). Watch history is not kept: clients watching from an older resourceVersion get 410 Expired and
list again, as after an etcd compaction.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

from .emulator import KubeEmulator
from .resources import ResourceType

log = logging.getLogger("kubesim")
FORMAT = 1


class StateFile:
    def __init__(self, emulator: KubeEmulator, path: str | os.PathLike) -> None:
        self.emulator = emulator
        self.path = Path(path)
        self._pending = False

    def exists(self) -> bool:
        return self.path.is_file() and self.path.stat().st_size > 0

    def load(self) -> int:
        """Load the saved objects (before the server starts); returns how many."""
        data = json.loads(self.path.read_text())
        if data.get("format") != FORMAT:
            raise ValueError(f"{self.path}: not a kubesim state file (format {data.get('format')!r})")
        emulator = self.emulator
        emulator._rv = max(emulator._rv, int(data.get("resourceVersion", 0)))
        count = 0
        # namespaces first: namespaced objects need theirs
        for key, objects in sorted(data["objects"].items(), key=lambda kv: kv[0] != "/namespaces"):
            try:
                count += emulator.load(key, objects)  # "group/plural"; the core group is ""
            except KeyError:  # a resource added at run time (add_resource) that this process does not serve
                log.warning("kubesim: %s: skipping %d object(s) of unknown resource %s", self.path, len(objects), key)
        if data.get("ocm_machine_pools") is not None:  # the cloud's machine pools (kubesim.machinepools)
            emulator.ocm_machine_pools = data["ocm_machine_pools"]
        emulator.compact()  # no history: watches from before the restart list again (410)
        return count

    def attach(self) -> None:
        """Save after every change from now on (call before the server starts)."""
        self.emulator.add_listener(self._changed)

    def _changed(self, etype: str, rt: ResourceType, old: dict | None, new: dict) -> None:
        loop = self.emulator._loop
        if loop is None or etype != "MODIFIED":
            self.save()  # a new or deleted object is on disk before the client hears of it
        elif not self._pending:
            self._pending = True
            loop.call_soon(self._flush)

    def _flush(self) -> None:
        self._pending = False
        try:
            self.save()
        except OSError as error:  # a full disk must not break the API
            log.error("kubesim: cannot save %s: %s", self.path, error)

    def save(self) -> None:
        """Write every object (on the loop's thread, or before it runs)."""
        emulator = self.emulator
        objects = {
            f"{group}/{plural}": list(bucket.values()) for (group, plural), bucket in emulator._store.items() if bucket
        }
        state = {"format": FORMAT, "resourceVersion": emulator._rv, "objects": objects}
        if getattr(emulator, "ocm_machine_pools", None):
            state["ocm_machine_pools"] = emulator.ocm_machine_pools
        body = json.dumps(state, separators=(",", ":"))
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.path.with_name(self.path.name + ".tmp")
        temporary.write_text(body)
        os.replace(temporary, self.path)
