"""Serve a KubeEmulator over HTTP from its own asyncio loop in a daemon thread; or several, one simulated cluster
per base path (``/clusters/<name>``), as the demo's backends each have their own cluster."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from typing import Any

import aiohttp.web
from yarl import URL

from .emulator import KubeEmulator, _json
from .resources import status_body

CLUSTERS_PATH = "/clusters/"


class EmulatorServer:
    """``with EmulatorServer() as server: ApiClient(Configuration(host=server.url))``.

    ``fleet``: ``"demo"`` or a list of node manifests to load at start; ``kubelet``: True or a
    dict of :class:`kubesim.kubelet.Kubelet` options to run the simulated kubelet; ``machine_pools``: True or a
    dict of :class:`kubesim.autoscaler.MachinePoolController` options to turn machine pools into nodes.

    ``clusters``: several simulated clusters behind one port, ``{name: EmulatorServer(...)}`` (not started
    themselves): cluster ``name`` answers under ``<url>/clusters/<name>`` (its ``url``), with its own objects,
    kubelet and machine pools, on this server's loop; any other path answers 404.

    ``down()`` / ``up()``: an outage of this cluster's API server (``outage_seconds``): every request answers 503
    and open watches end, as a load balancer in front of a stopped apiserver answers; the objects stay as etcd
    keeps them (the kubelet keeps running pods), so clients find the same state, newer, when it is back.
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        emulator: KubeEmulator | None = None,
        fleet: str | list[dict] | None = None,
        kubelet: bool | dict[str, Any] = False,
        machine_pools: bool | dict[str, Any] = False,
        clusters: dict[str, EmulatorServer] | None = None,
        **emulator_options: Any,
    ) -> None:
        self.host, self.port = host, port
        self.emulator = emulator if emulator is not None else KubeEmulator(**emulator_options)
        self.kubelet = None
        self.machine_pools = None
        self._fleet, self._kubelet_options, self._machine_pool_options = fleet, kubelet, machine_pools
        self._spot = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._error: BaseException | None = None
        self.clusters = clusters or {}
        self._mounted_at: tuple[EmulatorServer, str] | None = None  # (the server, the name) when one of clusters
        self.is_down = False
        self.refused_while_down = 0  # requests answered 503 during outages
        for name, cluster in self.clusters.items():
            cluster._mounted_at = (self, name)

    @property
    def url(self) -> str:
        if self._mounted_at is not None:
            host, name = self._mounted_at
            return f"{host.url}{CLUSTERS_PATH}{name}"
        return f"http://{self.host}:{self.port}"

    @property
    def loop(self) -> asyncio.AbstractEventLoop | None:
        return self._loop

    def start(self) -> str:
        if self._thread is not None:
            raise RuntimeError("the server is already started")
        if self._mounted_at is not None:
            raise RuntimeError(f"{self.url} is served by its server: start that one")
        self._ready.clear()
        self._error = None
        for part in (self, *self.clusters.values()):
            part._prepare()
        self._thread = threading.Thread(target=self._run, name=f"kubesim-{self.port}", daemon=True)
        self._thread.start()
        self._ready.wait(10)
        if self._error is not None:
            self._thread.join(5)
            self._thread = None
            raise self._error
        return self.url

    def _prepare(self) -> None:
        """Before the loop runs: the fleet loaded, the kubelet and machine pools made (started by _serve)."""
        if self._fleet is not None:
            from .fleet import demo_fleet, load_fleet

            load_fleet(self.emulator, demo_fleet() if self._fleet == "demo" else self._fleet)
        if self._kubelet_options:
            options = self._kubelet_options if isinstance(self._kubelet_options, dict) else {}
            self.enable_kubelet(**options)  # started by _serve() once the loop runs
        if self._machine_pool_options:
            options = self._machine_pool_options if isinstance(self._machine_pool_options, dict) else {}
            self.enable_machine_pools(**options)

    def stop(self, timeout: float = 5.0) -> None:
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        for cluster in (self, *self.clusters.values()):
            for part in (cluster.kubelet, cluster.machine_pools, cluster._spot):
                if part is not None:
                    cluster.emulator.run_in_loop(part.stop)
        if self._stop is not None and loop.is_running():
            loop.call_soon_threadsafe(self._stop.set)
        thread.join(timeout)
        self._thread = None

    def __enter__(self) -> EmulatorServer:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run ``fn`` on the server's loop thread and return its result."""
        return self.emulator.run_in_loop(fn, *args, **kwargs)

    def enable_kubelet(self, **options: Any):
        """Start the simulated kubelet (see :class:`kubesim.kubelet.Kubelet` for the options)."""
        from .kubelet import Kubelet

        if self.kubelet is None:
            self.kubelet = Kubelet(self.emulator, **options)
            if self._loop is not None and self._loop.is_running():
                self.emulator.run_in_loop(self.kubelet.start)
        return self.kubelet

    def enable_machine_pools(self, **options: Any):
        """Turn machine pools (OCM store, Karpenter NodePools) into nodes, with the simulated autoscaler and spot
        interruptions (see :class:`kubesim.autoscaler.MachinePoolController` for the options)."""
        from .autoscaler import MachinePoolController

        if self.machine_pools is None:
            self.machine_pools = MachinePoolController(self.emulator, **options)
            if self._loop is not None and self._loop.is_running():
                self.emulator.run_in_loop(self.machine_pools.start)
        return self.machine_pools

    def interrupt_spot(self, node_name: str, notice_seconds: float | None = None) -> str:
        """Give a spot node its termination notice (kubesim.spot); returns the ISO time the node goes.
        ``notice_seconds``: the machine pools' ``spot_notice_seconds`` if they run, else 120 (AWS's)."""
        from .spot import SpotInterrupter

        interrupter = self.machine_pools.spot if self.machine_pools is not None else None
        if interrupter is None:
            if self._spot is None:
                self._spot = SpotInterrupter(self.emulator)
                self.emulator.run_in_loop(self._spot.start)
            interrupter = self._spot
        if notice_seconds is not None:
            interrupter.notice_seconds = notice_seconds
        return interrupter.interrupt(node_name)

    def down(self) -> None:
        """The API server goes away: 503 from now on, and the open watch streams end (clients must relist)."""
        self.is_down = True
        self.emulator.close_watches()

    def up(self) -> None:
        self.is_down = False

    def _unavailable(self, path: str) -> aiohttp.web.StreamResponse:
        self.refused_while_down += 1
        body = status_body(503, f"the API server of {self.url} is unavailable (simulated outage): {path}")
        return _json(body, 503)

    async def _single(self, raw: aiohttp.web.BaseRequest) -> aiohttp.web.StreamResponse:
        if self.is_down:
            return self._unavailable(raw.path)
        return await self.emulator(raw)

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        self._loop = loop
        try:
            loop.run_until_complete(self._serve())
        except BaseException as exc:  # noqa: BLE001 - reported to start()
            self._error = exc
        finally:
            self.emulator.bind_loop(None)
            self._ready.set()
            loop.close()
            self._loop = None

    async def _serve(self) -> None:
        loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        served = (self, *self.clusters.values())
        async with contextlib.AsyncExitStack() as stack:
            for cluster in served:  # kmock's live-stream feeder, for DSL reactions that stream
                await stack.enter_async_context(cluster.emulator)
            handler = self._route if self.clusters else self._single
            server = aiohttp.web.Server(handler, handler_cancellation=True, access_log=None)
            listener = await loop.create_server(server, self.host, self.port)
            self.port = listener.sockets[0].getsockname()[1]
            for cluster in served:
                cluster._loop = loop
                cluster.emulator.bind_loop(loop)
                if cluster.kubelet is not None:
                    cluster.kubelet.start()
                if cluster.machine_pools is not None:
                    cluster.machine_pools.start()
            self._ready.set()
            try:
                await self._stop.wait()
            finally:
                for cluster in served:
                    cluster.emulator.close_watches()
                await asyncio.sleep(0)
                listener.close()
                server.pre_shutdown()  # close idle keep-alive connections at once
                await server.shutdown(timeout=1.0)
                await listener.wait_closed()
                for cluster in self.clusters.values():
                    cluster.emulator.bind_loop(None)
                    cluster._loop = None

    async def _route(self, raw: aiohttp.web.BaseRequest) -> aiohttp.web.StreamResponse:
        """``/clusters/<name>/<path>`` to cluster ``name``'s emulator as ``/<path>`` (query unchanged)."""
        name, _, rest = raw.rel_url.raw_path.removeprefix(CLUSTERS_PATH).partition("/")
        cluster = self.clusters.get(name) if raw.rel_url.raw_path.startswith(CLUSTERS_PATH) else None
        if cluster is None:
            known = ", ".join(f"{CLUSTERS_PATH}{n}" for n in self.clusters)
            body = status_body(404, f"no simulated cluster at {raw.path}: this server serves {known}", "NotFound")
            return _json(body, 404)
        if cluster.is_down:
            return cluster._unavailable(raw.path)
        url = URL.build(path=f"/{rest}", query_string=raw.rel_url.raw_query_string, encoded=True)
        return await cluster.emulator(raw.clone(rel_url=url))
