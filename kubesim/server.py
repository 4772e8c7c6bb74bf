"""Serve a KubeEmulator over HTTP from its own asyncio loop in a daemon thread."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

import aiohttp.web

from .emulator import KubeEmulator


class EmulatorServer:
    """``with EmulatorServer() as server: ApiClient(Configuration(host=server.url))``.

    ``fleet``: ``"demo"`` or a list of node manifests to load at start; ``kubelet``: True or a
    dict of :class:`kubesim.kubelet.Kubelet` options to run the simulated kubelet; ``machine_pools``: True or a
    dict of :class:`kubesim.autoscaler.MachinePoolController` options to turn machine pools into nodes.
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

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def loop(self) -> asyncio.AbstractEventLoop | None:
        return self._loop

    def start(self) -> str:
        if self._thread is not None:
            raise RuntimeError("the server is already started")
        self._ready.clear()
        self._error = None
        if self._fleet is not None:
            from .fleet import demo_fleet, load_fleet

            load_fleet(self.emulator, demo_fleet() if self._fleet == "demo" else self._fleet)
        if self._kubelet_options:
            options = self._kubelet_options if isinstance(self._kubelet_options, dict) else {}
            self.enable_kubelet(**options)  # started by _serve() once the loop runs
        if self._machine_pool_options:
            options = self._machine_pool_options if isinstance(self._machine_pool_options, dict) else {}
            self.enable_machine_pools(**options)
        self._thread = threading.Thread(target=self._run, name=f"kubesim-{self.port}", daemon=True)
        self._thread.start()
        self._ready.wait(10)
        if self._error is not None:
            self._thread.join(5)
            self._thread = None
            raise self._error
        return self.url

    def stop(self, timeout: float = 5.0) -> None:
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        for part in (self.kubelet, self.machine_pools, self._spot):
            if part is not None:
                self.emulator.run_in_loop(part.stop)
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
        async with self.emulator:  # kmock's live-stream feeder, for DSL reactions that stream
            server = aiohttp.web.Server(self.emulator, handler_cancellation=True, access_log=None)
            listener = await loop.create_server(server, self.host, self.port)
            self.port = listener.sockets[0].getsockname()[1]
            self.emulator.bind_loop(loop)
            if self.kubelet is not None:
                self.kubelet.start()
            if self.machine_pools is not None:
                self.machine_pools.start()
            self._ready.set()
            try:
                await self._stop.wait()
            finally:
                self.emulator.close_watches()
                await asyncio.sleep(0)
                listener.close()
                server.pre_shutdown()  # close idle keep-alive connections at once
                await server.shutdown(timeout=1.0)
                await listener.wait_closed()
