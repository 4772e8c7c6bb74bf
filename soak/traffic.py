"""The soak's steady mixed load through the HTTP API, from threads of this process until stopped:

* submissions: `rate` a second, each at its own moment (a researcher of a random project, a random pool,
  1 to 4 CPUs a task, one task or two);
* cancels: a recent workflow of its own researcher every `cancel_seconds` (200, or 409 when it just finished);
* reads: the workflow list, a workflow, the pool list and a node pool's quotas, `reads` a second in all;
* config edits: the administrator changes a pool's description every `config_seconds`;
* quota changes: the administrator changes a project's over-quota weight and CPU limit in a node pool every
  `quota_seconds` (never its deserved quota: the guarantee check compares with it).
"""

from __future__ import annotations

import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from soak import load
from soak.portal import spec


@dataclass
class Traffic:
    port: int
    admin_token: str
    tokens: dict[str, str]  # project → researcher token
    pools: list[str]
    node_pools: list[str]
    rate: float = 2.0
    reads: float = 4.0
    cancel_seconds: float = 4.0
    config_seconds: float = 10.0
    quota_seconds: float = 15.0
    recorder: load.Recorder = field(default_factory=load.Recorder)
    submitted: list[tuple[str, str]] = field(default_factory=list)  # (workflow id, project)
    cancelled: list[str] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _threads: list[threading.Thread] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self) -> None:
        for target in (self._submissions, self._cancels, self._reads, self._config_edits, self._quota_changes):
            thread = threading.Thread(target=target, name=f"soak-{target.__name__}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(120)

    def _call(self, kind: str, token: str, method: str, path: str, body: object = None):
        status, answer, seconds = load.call(self.port, token, method, path, body)
        self.recorder.record(kind, status, seconds, answer)
        return status, answer

    def _submissions(self) -> None:
        rng, index, start = random.Random(1), 0, time.monotonic()
        with ThreadPoolExecutor(8) as clients:
            while not self._stop.is_set():
                due = start + index / self.rate
                if self._stop.wait(max(0.0, due - time.monotonic())):
                    break
                project = rng.choice(sorted(self.tokens))
                document = spec(index, cpu=rng.choice((1, 2, 4)), name=f"soak-{project}")
                clients.submit(self._submit, project, rng.choice(self.pools), document)
                index += 1

    def _submit(self, project: str, pool: str, document: str) -> None:
        status, answer = self._call(
            "submit", self.tokens[project], "POST", f"/api/pool/{pool}/workflow", {"file": document}
        )
        if status == 200:
            with self._lock:
                self.submitted.append((answer["workflow_id"], project))

    def _recent(self, rng: random.Random) -> tuple[str, str] | None:
        with self._lock:
            recent = self.submitted[-30:]
        return rng.choice(recent) if recent else None

    def _cancels(self) -> None:
        rng = random.Random(2)
        while not self._stop.wait(self.cancel_seconds):
            picked = self._recent(rng)
            if picked is None:
                continue
            workflow_id, project = picked
            status, _ = self._call("cancel", self.tokens[project], "POST", f"/api/workflow/{workflow_id}/cancel", {})
            if status == 200:
                with self._lock:
                    self.cancelled.append(workflow_id)

    def _reads(self) -> None:
        rng, step = random.Random(3), 0
        while not self._stop.wait(1 / self.reads):
            token = self.tokens[rng.choice(sorted(self.tokens))]
            kind = ("list", "workflow", "pools", "quota")[step % 4]
            step += 1
            if kind == "list":
                self._call("read: workflow list", token, "GET", "/api/workflow?limit=20")
            elif kind == "workflow":
                picked = self._recent(rng)
                if picked is not None:
                    self._call("read: workflow", self.tokens[picked[1]], "GET", f"/api/workflow/{picked[0]}")
            elif kind == "pools":
                self._call("read: pool list", token, "GET", "/api/pool")
            else:
                self._call(
                    "read: node pool quotas", token, "GET", f"/api/quotas/node_pools/{rng.choice(self.node_pools)}"
                )

    def _config_edits(self) -> None:
        rng, edit = random.Random(4), 0
        while not self._stop.wait(self.config_seconds):
            edit += 1
            body = {"configs": {"description": f"soak edit {edit}"}, "description": "soak: a config edit"}
            self._call("config edit", self.admin_token, "POST", f"/api/configs/POOL/{rng.choice(self.pools)}", body)

    def _quota_changes(self) -> None:
        rng, change = random.Random(5), 0
        projects = sorted(self.tokens)
        while not self._stop.wait(self.quota_seconds):
            change += 1
            node_pool, project = rng.choice(self.node_pools), rng.choice(projects)
            limit = rng.choice((None, 60000, 90000))
            body = {"cpu": {"weight": 1 + change % 3, "limit": limit}, "description": "soak: a quota change"}
            path = f"/api/quotas/node_pools/{node_pool}/projects/{project}"
            self._call("quota change", self.admin_token, "PATCH", path, body)
