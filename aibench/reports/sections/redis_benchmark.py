"""The cache (redis-benchmark): per node and for all nodes together, the operations per
second and the latency percentiles of each test (SET, GET ...), with the checks' bars."""

from __future__ import annotations

from aibench.model import Measurement
from aibench.reports.sections import Section, SectionInput, SectionOutput, checked_plots
from aibench.reports.sections.s5cmd import Column, node_table


def columns(ms: list[Measurement]) -> tuple[Column, ...]:
    """ops/s, p50 and p99 latency of every test that was run, in the order first seen."""
    ops = list(dict.fromkeys(str(m.dims.get("op", "")) for m in ms))
    out: list[Column] = []
    for op in ops:
        name = op.upper()
        out.append((f"{name} ops/s", "ops_rate", {"op": op}, sum))
        out.append((f"{name} p50 ms", "latency", {"op": op, "stat": "p50"}, max))
        out.append((f"{name} p99 ms", "latency", {"op": op, "stat": "p99"}, max))
    return tuple(out)


def render(si: SectionInput) -> SectionOutput:
    ms = [m for s in si.steps for m in s.measurements]
    t = node_table(si.steps, "Cache load per node", columns(ms))
    return SectionOutput(plots=tuple(checked_plots(si)), tables=(t,) if t else ())


SECTION = Section("redis-benchmark", "Cache (redis-benchmark)", render)
