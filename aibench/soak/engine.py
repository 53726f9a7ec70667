"""Running a soak: chunks of stress-ng on every node, the sampler beside, checkpoints.

State (``<dir>/soak-state.json``, rewritten after every chunk): the duration asked, the
seconds of stress done, the chunks done. A second :func:`run_soak` on the same directory
(``--resume``) continues from there, appending to the same telemetry files (the series
stay one series; a gap marks the interruption). Each chunk runs ``stress-ng ... --timeout
CHUNKs --metrics-brief --stdout`` on every node at once through the node's executor; its
``bogo_ops_rate`` per stressor becomes a sample (source ``stress-ng``) at the chunk's end,
and its raw output is kept under ``raw/``. With ``gpu_burn`` options, nodes whose inventory
lists GPUs also run gpu-burn for each chunk: its per-GPU Gflop/s and error counts are
samples (source ``gpu-burn``), a FAULTY GPU, a dead worker or a run cut short a ``faulty``
sample. A chunk that fails on a node is recorded as a
sampler error for that node and the soak goes on.

``progress(elapsed, duration, hottest)`` is called after each chunk: ``hottest`` is
(node, part, °C) of the highest temperature read in the last interval, or None.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aibench import parsers
from aibench.errors import OutputError, ToolFailure
from aibench.executors.base import Command, Executor
from aibench.inventory import Node
from aibench.model import Measurement
from aibench.runners.gpu_burn import GpuBurnOptions
from aibench.runners.gpu_burn import argv as burn_argv
from aibench.runners.stress_ng import StressNgOptions
from aibench.runners.stress_ng import argv as stress_argv
from aibench.telemetry import Sample, Sampler, has_gpus

STATE = "soak-state.json"
Progress = Callable[[float, float, tuple[str, str, float] | None], None]


@dataclass(frozen=True)
class SoakOptions:
    duration: float  # seconds of stress in all
    interval: float = 2.0  # telemetry interval
    chunk: float = 10.0  # seconds per stress-ng run
    stress: StressNgOptions = field(default_factory=lambda: StressNgOptions(cpu=1, vm=0))
    bmc_interval: float | None = None
    gpu_binary: str = "nvidia-smi"
    # gpu-burn beside stress-ng on nodes whose inventory lists GPUs (None: no GPU stress)
    gpu_burn: GpuBurnOptions | None = None


def load_state(directory: Path) -> dict[str, Any]:
    p = directory / STATE
    if p.exists():
        data: dict[str, Any] = json.loads(p.read_text())
        return data
    return {"duration": None, "elapsed": 0.0, "chunks": 0}


def _save_state(directory: Path, state: dict[str, Any]) -> None:
    tmp = directory / (STATE + ".tmp")
    tmp.write_text(json.dumps(state))
    tmp.replace(directory / STATE)


def hottest(sampler: Sampler) -> tuple[str, str, float] | None:
    temps = [
        (v, n, k)
        for (n, m, k), v in sampler.latest.items()
        if m in ("temp_gpu", "temperature", "temp")
    ]
    if not temps:
        return None
    v, n, k = max(temps)
    return n, k, v


async def _chunk(
    directory: Path,
    node: Node,
    ex: Executor,
    opts: SoakOptions,
    seconds: float,
    index: int,
    sampler: Sampler,
) -> None:
    o = opts.stress.model_copy(update={"duration": seconds})
    raw = directory / "raw" / f"{node.name}.stress-{index:05d}"
    cmd = Command(stress_argv(o), timeout=seconds + 60)
    try:
        res = await ex.run(node, cmd, raw.with_suffix(".out"), raw.with_suffix(".err"))
        text = raw.with_suffix(".out").read_text(errors="replace")
        if res.exit_code != 0:
            raise OutputError("stress-ng", res.reason or f"exit {res.exit_code}")
        recs = parsers.parse("stress-ng", text)
    except Exception as e:  # a chunk that fails is noted, the soak goes on
        sampler.store.error(time.time(), node.name, "stress-ng", f"chunk {index}: {e}")
        return
    t = time.time()
    sampler.record(
        [
            Sample(
                t, node.name, "stress-ng", "bogo_ops_rate", str(m.dims["stressor"]), m.unit, m.value
            )
            for m in recs
            if isinstance(m, Measurement) and m.metric == "bogo_ops_rate"
        ]
    )


async def _burn_chunk(
    directory: Path,
    node: Node,
    ex: Executor,
    opts: SoakOptions,
    seconds: float,
    index: int,
    sampler: Sampler,
) -> None:
    """gpu-burn for the chunk; per GPU its Gflop/s and error count become samples (source
    ``gpu-burn``), a FAULTY GPU or a dead worker a ``faulty`` sample of 1."""
    assert opts.gpu_burn is not None
    o = opts.gpu_burn.model_copy(update={"duration": max(1, int(seconds))})
    raw = directory / "raw" / f"{node.name}.gpu-burn-{index:05d}"
    try:
        res = await ex.run(
            node,
            Command(burn_argv(o, node), timeout=seconds + 120),
            raw.with_suffix(".out"),
            raw.with_suffix(".err"),
        )
        text = raw.with_suffix(".out").read_text(errors="replace")
    except Exception as e:  # a chunk that cannot run is noted, the soak goes on
        sampler.store.error(time.time(), node.name, "gpu-burn", f"chunk {index}: {e}")
        return
    failed: str | None = None
    try:
        recs = parsers.parse("gpu-burn", text)
    except ToolFailure as e:
        recs, failed = [r for r in e.partial if isinstance(r, Measurement)], e.reason
    except OutputError as e:
        recs, failed = [], str(e)
    if res.exit_code not in (0, None) and failed is None:
        failed = res.reason or f"exit {res.exit_code}"
    t = time.time()
    samples = [
        Sample(t, node.name, "gpu-burn", m.metric, f"gpu{m.dims['gpu']}", m.unit, m.value)
        for m in recs
        if isinstance(m, Measurement) and m.metric in ("gflops", "errors", "faulty")
    ]
    if failed is not None:
        sampler.store.error(t, node.name, "gpu-burn", f"chunk {index}: {failed}")
        if not any(s.metric == "faulty" for s in samples):
            samples.append(Sample(t, node.name, "gpu-burn", "faulty", "all", "count", 1.0))
    sampler.record(samples)


async def run_soak(
    directory: Path,
    nodes: Sequence[Node],
    executor_for: Callable[[Node], Executor],
    opts: SoakOptions,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Run (or continue) the soak; returns the state. Cancel it to interrupt: what was
    measured stays on disk."""
    directory.mkdir(parents=True, exist_ok=True)
    state = load_state(directory)
    state["duration"] = opts.duration
    sampler = Sampler(
        directory / "telemetry",
        nodes,
        executor_for,
        interval=opts.interval,
        bmc_interval=opts.bmc_interval,
        gpu_binary=opts.gpu_binary,
    )
    await sampler.start()
    try:
        while state["elapsed"] < opts.duration - 0.5:
            seconds = min(opts.chunk, opts.duration - state["elapsed"])
            work = [
                _chunk(directory, n, executor_for(n), opts, seconds, state["chunks"], sampler)
                for n in nodes
            ]
            if opts.gpu_burn is not None:
                work += [
                    _burn_chunk(
                        directory, n, executor_for(n), opts, seconds, state["chunks"], sampler
                    )
                    for n in nodes
                    if has_gpus(n)
                ]
            await asyncio.gather(*work)
            state["elapsed"] += seconds
            state["chunks"] += 1
            _save_state(directory, state)
            if progress is not None:
                progress(state["elapsed"], opts.duration, hottest(sampler))
    finally:
        await sampler.stop()
    return state


def plan_lines(inventory: Any, opts: SoakOptions, spec: Any) -> list[str]:
    """What a soak would do, node by node, without starting anything (``--dry-run``)."""
    import shlex

    from aibench.telemetry import gpu, host

    chunks = max(1, -int(-opts.duration // opts.chunk))
    lines = [
        f"soak: {len(inventory)} node(s), {opts.duration:g} s of stress in {chunks} "
        f"chunk(s) of at most {opts.chunk:g} s, samples every {opts.interval:g} s; "
        f"judged by {spec.name} ({len(spec.telemetry)} telemetry checks)",
        "nothing is started (dry run)",
    ]
    first = min(opts.chunk, opts.duration)
    stress = stress_argv(opts.stress.model_copy(update={"duration": first}))
    for node in inventory.nodes:
        how = node.executor if node.executor == "local" else f"{node.executor} {node.host}"
        where = f"{node.name} ({how})"
        lines.append(f"{where}:")
        lines.append(f"  each chunk: {shlex.join(stress)}")
        if has_gpus(node) and opts.gpu_burn is not None:
            o = opts.gpu_burn.model_copy(update={"duration": max(1, int(opts.chunk))})
            lines.append(f"  each chunk: {shlex.join(burn_argv(o, node))}")
        elif has_gpus(node):
            lines.append("  no GPU stress (--no-gpu-burn): soak.gpu_burn will be MISSING")
        lines.append(f"  sampler: host probe ({shlex.join(host.argv(opts.interval)[:2])} ...)")
        if has_gpus(node):
            lines.append(f"  sampler: {shlex.join(gpu.argvs(opts.interval, opts.gpu_binary)[0])}")
        b = node.facts.get("bmc")
        if isinstance(b, dict):
            bmc = f"{b.get('protocol', '')} at {b.get('address', '')}"
            lines.append(f"  sampler: BMC {bmc} (read from here)")
    return lines
