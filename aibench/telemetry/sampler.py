"""The telemetry sampler: time series of every node beside a step, never failing it.

Per node, at ``interval`` seconds: the host probe (a fixed shell loop started on the node
through its executor, :mod:`aibench.telemetry.host`), the GPU probe when the node has GPUs
(``nvidia-smi`` query loop, :mod:`aibench.telemetry.gpu`), and the BMC when the inventory
names one (read from here, where the BMC network is reachable; :mod:`aibench.bmc`), at
``bmc_interval``. Samples and BMC events go to files as they arrive (:mod:`.store`);
:meth:`Sampler.compact` gives the run.json form.

Whatever goes wrong in a probe (a node that cannot start the loop, nvidia-smi missing, a
BMC that does not answer) is recorded in ``errors`` and the probe stops or retries; it never
raises into the step it watches. ``stop()`` ends every probe process.

Use::

    sampler = Sampler(run_dir / "telemetry", nodes, executor_for, interval=2.0)
    await sampler.start()
    try:
        ...  # the step(s)
    finally:
        await sampler.stop()
    telemetry = sampler.compact()
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

from aibench import bmc
from aibench.executors.base import Command, Executor, ReadyCheck, Server
from aibench.inventory import Node
from aibench.telemetry import gpu, host, vendor_gpu
from aibench.telemetry.store import Sample, Store, compact


class _Parser(Protocol):
    def feed(self, text: str) -> list[Sample]: ...


def has_gpus(node: Node) -> bool:
    g = node.facts.get("gpus")
    return isinstance(g, dict) and int(g.get("count", 0) or 0) > 0


class Sampler:
    def __init__(
        self,
        directory: Path,
        nodes: Sequence[Node],
        executor_for: Callable[[Node], Executor],
        *,
        interval: float = 2.0,
        bmc_interval: float | None = None,
        gpu_probe: bool | None = None,  # None: nodes whose inventory lists GPUs
        host_probe: bool = True,
        gpu_binary: str = "nvidia-smi",
    ) -> None:
        self.store = Store(directory)
        self.dir = directory
        self.nodes = list(nodes)
        self.executor_for = executor_for
        self.interval = interval
        self.bmc_interval = bmc_interval or max(interval, 2.0)
        self.gpu_probe = gpu_probe
        self.host_probe = host_probe
        self.gpu_binary = gpu_binary
        self._servers: list[Server] = []
        self._tasks: list[asyncio.Task[None]] = []
        self._stopping = asyncio.Event()
        self._seen_events = self.store.known_events()
        self.latest: dict[tuple[str, str, str], float] = {}  # (node, metric, key) -> value
        # nodes whose BMC log was read once: events seen then were there before the watch
        self._baselined: set[str] = {n for n, _ in self._seen_events}

    # ------------------------------------------------------------------ life cycle
    async def start(self) -> None:
        self._stopping.clear()
        starts = []
        for node in self.nodes:
            if self.host_probe:
                starts.append(
                    self._start_stream(
                        node,
                        "host",
                        [host.argv(self.interval)],
                        host.HostParser(node.name),
                        r"^@@ ",
                    )
                )
            if self.gpu_probe or (self.gpu_probe is None and has_gpus(node)):
                starts.append(
                    self._start_stream(
                        node,
                        "gpu",
                        [
                            *gpu.argvs(self.interval, self.gpu_binary),
                            *vendor_gpu.argvs(self.interval),
                        ],
                        vendor_gpu.AnyGpuParser(node.name),
                        "temperature|@@ ",
                    )
                )
            target = self._bmc_target(node)
            if target is not None:
                self._tasks.append(asyncio.create_task(self._bmc_loop(target)))
        await asyncio.gather(*starts)

    async def stop(self) -> None:
        self._stopping.set()
        for t in self._tasks:
            t.cancel()
        for t in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t
        self._tasks.clear()
        for s in self._servers:
            with contextlib.suppress(Exception):
                await s.stop()
        self._servers.clear()

    def compact(self) -> dict[str, Any]:
        return compact(self.store)

    # ------------------------------------------------------------------ probes
    def _error(self, node: str, source: str, reason: str) -> None:
        self.store.error(time.time(), node, source, reason)

    def _bmc_target(self, node: Node) -> bmc.BmcTarget | None:
        try:
            return bmc.target_for(node)
        except ValueError as e:
            self._error(node.name, "bmc", f"bmc block: {e}")
            return None

    async def _start_stream(
        self,
        node: Node,
        source: str,
        argvs: Sequence[tuple[str, ...]],
        parser: _Parser,
        ready: str,
    ) -> None:
        """Start the first of ``argvs`` that becomes ready (its output matches ``ready``);
        raw output under ``raw/`` with the start time in the name (a resume adds files)."""
        stamp = int(time.time())
        reasons = []
        for i, argv in enumerate(argvs):
            out = self.dir / "raw" / f"{node.name}.{source}.{stamp}.{i}.out"
            err = out.with_suffix(".err")
            try:
                server = await self.executor_for(node).start(
                    node,
                    Command(tuple(argv), timeout=10 * 86400.0, role="sampler"),
                    out,
                    err,
                    ReadyCheck(pattern=ready, timeout=20.0),
                )
            except Exception as e:  # never fail the step
                said = err.read_text(errors="replace").strip() if err.exists() else ""
                reasons.append(f"{e}" + (f" ({said.splitlines()[-1][:200]})" if said else ""))
                continue
            self._servers.append(server)
            self._tasks.append(
                asyncio.create_task(self._tail(node.name, source, out, parser, server))
            )
            return
        self._error(node.name, source, "probe did not start: " + " | ".join(reasons))

    async def _tail(
        self, node: str, source: str, path: Path, parser: _Parser, server: Server
    ) -> None:
        pos = 0
        while True:
            try:
                with path.open("rb") as f:
                    f.seek(pos)
                    chunk = f.read()
                pos += len(chunk)
                samples = parser.feed(chunk.decode(errors="replace"))
                self.record(samples)
                if not server.alive and not self._stopping.is_set():
                    self._error(node, source, "probe process ended")
                    return
            except Exception as e:  # never fail the step
                self._error(node, source, f"{type(e).__name__}: {e}")
            await asyncio.sleep(min(self.interval, 1.0))

    async def _bmc_loop(self, target: bmc.BmcTarget) -> None:
        failures = 0
        while True:
            started = time.monotonic()
            try:
                reading = await asyncio.to_thread(bmc.read, target)
                failures = 0
                t = time.time()
                self.record(
                    [
                        Sample(t, target.node, "bmc", s.kind, s.name, s.unit, s.value)
                        for s in reading.sensors
                    ]
                )
                for e in reading.events:
                    if (target.node, e.key) in self._seen_events:
                        continue
                    self._seen_events.add((target.node, e.key))
                    self.store.event(
                        t,
                        target.node,
                        "bmc",
                        key=e.key,
                        record=e.record,
                        sensor_type=e.sensor_type,
                        sensor=e.sensor,
                        event=e.event,
                        asserted=e.asserted,
                        bmc_time=e.time,
                        first_read=not self._baseline_done(target.node),
                    )
                self._baselined.add(target.node)
            except Exception as e:  # never fail the step
                failures += 1
                self._error(target.node, "bmc", str(e))
            wait = self.bmc_interval * min(2 ** max(0, failures - 1), 8)
            await asyncio.sleep(max(0.0, wait - (time.monotonic() - started)))

    def _baseline_done(self, node: str) -> bool:
        return node in self._baselined

    def record(self, samples: list[Sample]) -> None:
        if not samples:
            return
        self.store.add(samples)
        for s in samples:
            self.latest[(s.node, s.metric, s.key)] = s.v
