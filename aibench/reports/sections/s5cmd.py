"""Object storage over S3 (s5cmd): per node and for all nodes together, the large-object
PUT and GET throughput, small-object operations per second, small-object latency
percentiles and the error count, with the checks' bars.

Steps that failed (a gateway gone mid-run) are listed too, with their error counts and
their status, so that the table shows what was measured before the failure; their
numbers are never judged (the verdicts say ERROR)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable

from aibench.model import Measurement, StepResult
from aibench.reports import context
from aibench.reports.sections import (
    Section,
    SectionInput,
    SectionOutput,
    Table,
    checked_plots,
    notes_table,
)

# (column, metric, dims that must match, how the "all nodes" row combines the nodes)
Column = tuple[str, str, dict[str, str], Callable[[list[float]], float]]
COLUMNS: tuple[Column, ...] = (
    ("PUT large MB/s", "throughput", {"op": "put", "object": "large"}, sum),
    ("GET large MB/s", "throughput", {"op": "get", "object": "large"}, sum),
    ("PUT small ops/s", "ops_rate", {"op": "put", "object": "small"}, sum),
    ("GET small ops/s", "ops_rate", {"op": "get", "object": "small"}, sum),
    ("PUT small p50 ms", "latency", {"op": "put", "object": "small", "stat": "p50"}, max),
    ("PUT small p99 ms", "latency", {"op": "put", "object": "small", "stat": "p99"}, max),
    ("GET small p50 ms", "latency", {"op": "get", "object": "small", "stat": "p50"}, max),
    ("GET small p99 ms", "latency", {"op": "get", "object": "small", "stat": "p99"}, max),
    ("errors", "errors", {}, sum),
)


def _cell(ms: Iterable[Measurement], metric: str, dims: dict[str, str]) -> float | None:
    """The median over repeats of one column; errors: the total."""
    vals = [
        m.value
        for m in ms
        if m.metric == metric and all(m.dims.get(k) == v for k, v in dims.items())
    ]
    if not vals:
        return None
    if metric == "errors":
        return sum(vals)
    vals.sort()
    return vals[len(vals) // 2]


def node_table(
    steps: Iterable[StepResult], title: str, columns: tuple[Column, ...]
) -> Table | None:
    """One row per step and node (the median of its repeats; its status), then per step
    one row for all nodes whose steps finished: throughputs summed, latencies the worst."""
    by_node: dict[tuple[str, str], list[Measurement]] = defaultdict(list)
    status: dict[tuple[str, str], set[str]] = defaultdict(set)
    for s in steps:
        key = (s.step, ",".join(s.nodes))
        by_node[key] += s.measurements
        status[key].add(str(s.status))
    if not by_node:
        return None
    rows = []
    totals: dict[str, list[float]] = defaultdict(list)
    for (step, node), ms in sorted(by_node.items()):
        cells = []
        for col, metric, dims, _how in columns:
            v = _cell(ms, metric, dims)
            if v is not None and status[(step, node)] == {"ok"}:
                totals[f"{step}\0{col}"].append(v)
            cells.append(context.fmt_number(v))
        rows.append((step, node, "/".join(sorted(status[(step, node)])), *cells))
    for step in sorted({k[0] for k in by_node}):
        cells = []
        for col, _metric, _dims, how in columns:
            vals = totals.get(f"{step}\0{col}")
            cells.append(context.fmt_number(how(vals)) if vals else "")
        rows.append((step, "all nodes (sum; latency: worst)", "", *cells))
    heads = ("step", "node", "status", *(c[0] for c in columns))
    return Table(title, heads, tuple(rows))


def render(si: SectionInput) -> SectionOutput:
    tables = [t for t in (node_table(si.steps, "S3 load per node", COLUMNS),) if t]
    notes = notes_table(si.steps)
    if notes is not None:
        tables.append(notes)
    return SectionOutput(plots=tuple(checked_plots(si)), tables=tuple(tables))


SECTION = Section("s5cmd", "Object storage over S3 (s5cmd)", render)
