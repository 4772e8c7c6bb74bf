"""Watch streams: initial state or history replay from a resourceVersion, then live events."""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Any

import aiohttp.web

from .resources import ApiError, ResourceType, status_body
from .selectors import FieldSelector, LabelSelector

if TYPE_CHECKING:
    from .emulator import KubeEmulator

CLOSE = object()  # end the stream cleanly
EXPIRE = object()  # send a 410 Expired ERROR event, then end
_dumps = json.JSONEncoder(separators=(",", ":")).encode


class WatchStream:
    def __init__(
        self,
        emulator: KubeEmulator,
        rt: ResourceType,
        namespace: str | None,
        name: str | None,
        labels: LabelSelector,
        fields: FieldSelector,
    ) -> None:
        self.emulator, self.rt = emulator, rt
        self.namespace, self.name = namespace, name
        self.labels, self.fields = labels, fields
        self.queue: asyncio.Queue[Any] = asyncio.Queue()

    def _matches(self, obj: dict) -> bool:
        meta = obj["metadata"]
        return (
            (self.namespace is None or meta.get("namespace") == self.namespace)
            and (self.name is None or meta["name"] == self.name)
            and (not self.labels or self.labels.matches(meta.get("labels")))
            and (not self.fields or self.fields.matches(obj))
        )

    def translate(self, etype: str, old: dict | None, new: dict) -> tuple[str, dict] | None:
        """Map a store event to what this watcher sees, as the apiserver does for selectors."""
        if etype == "MODIFIED" and old is not None:
            was, now = self._matches(old), self._matches(new)
            if was and now:
                return ("MODIFIED", new)
            if was:
                return ("DELETED", new)
            return ("ADDED", new) if now else None
        return (etype, new) if self._matches(new) else None

    def offer(self, etype: str, old: dict | None, new: dict) -> None:
        event = self.translate(etype, old, new)
        if event is not None:
            self.queue.put_nowait(event)

    async def serve(self, raw: aiohttp.web.BaseRequest, query: dict[str, str]) -> aiohttp.web.StreamResponse:
        emu, key = self.emulator, self.rt.key
        since_text = query.get("resourceVersion", "")
        try:
            timeout = float(query.get("timeoutSeconds") or 0)
        except ValueError:
            raise ApiError(400, f"invalid timeoutSeconds: {query['timeoutSeconds']!r}") from None
        timeout = timeout if timeout > 0 else emu.watch_max_seconds

        # Everything up to the registration is synchronous: no event can slip in between.
        backlog: list[tuple[str, dict]] = []
        expired: str | None = None
        if since_text in ("", "0"):
            backlog = [
                ("ADDED", obj) for obj in emu._select(self.rt, self.namespace, self.name, self.labels, self.fields)
            ]
        else:
            try:
                since = int(since_text)
            except ValueError:
                raise ApiError(400, f"invalid resource version: {since_text!r}") from None
            if since < emu._floor[key]:
                expired = f"too old resource version: {since} ({emu._floor[key] + 1})"
            else:
                for rv, etype, old, new in emu._history[key]:
                    if rv > since and (event := self.translate(etype, old, new)) is not None:
                        backlog.append(event)
        emu._watchers[key].add(self)

        response = aiohttp.web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
        response.enable_chunked_encoding()
        try:
            await response.prepare(raw)
            if expired is not None:
                await self._write_error(response, expired)
                return response
            if backlog:
                await response.write(b"".join(self._line(t, o) for t, o in backlog))
            loop = asyncio.get_running_loop()
            deadline = loop.time() + timeout
            while True:
                remaining = deadline - loop.time()
                if remaining <= 0:
                    break
                try:
                    item = await asyncio.wait_for(self.queue.get(), remaining)
                except TimeoutError:
                    break
                chunks, stop = [], None
                while True:
                    if item is CLOSE or item is EXPIRE:
                        stop = item
                        break
                    chunks.append(self._line(*item))
                    if self.queue.empty():
                        break
                    item = self.queue.get_nowait()
                if chunks:
                    await response.write(b"".join(chunks))
                if stop is EXPIRE:
                    await self._write_error(response, "too old resource version: the watch was expired")
                if stop is not None:
                    break
            await response.write_eof()
        except (ConnectionError, RuntimeError):
            pass  # the client went away
        finally:
            emu._watchers[key].discard(self)
        return response

    @staticmethod
    def _line(etype: str, obj: dict) -> bytes:
        return _dumps({"type": etype, "object": obj}).encode() + b"\n"

    async def _write_error(self, response: aiohttp.web.StreamResponse, message: str) -> None:
        await response.write(self._line("ERROR", status_body(410, message, "Expired")))
        await response.write_eof()
