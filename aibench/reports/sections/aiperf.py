"""Serving section (tool ``aiperf``): latency vs load per endpoint, and the failover timeline.

* "Latency vs load": one row per endpoint and load level (concurrency or request rate):
  request throughput, output tokens/s, TTFT p50/p99, ITL p50/p99, e2e p50/p99, error rate;
  and a chart of p99 TTFT against the load level, one line per endpoint.
* "Failover timeline": per failover step, per second from the stop of the backend:
  requests started, failed, mean latency of the successful ones; above it the errors seen,
  the recovery time and how long the backend was down.
* The spec's checks on these series, as the other sections show them.
"""

from __future__ import annotations

from collections import defaultdict

from aibench.model import Measurement
from aibench.reports import context, plots
from aibench.reports.sections import (
    Plot,
    Section,
    SectionInput,
    SectionOutput,
    Table,
    checked_plots,
)

COLUMNS = (
    ("request_throughput", None, "req/s"),
    ("output_token_throughput", None, "tok/s"),
    ("ttft", "p50", "TTFT p50 ms"),
    ("ttft", "p99", "TTFT p99 ms"),
    ("itl", "p50", "ITL p50 ms"),
    ("itl", "p99", "ITL p99 ms"),
    ("e2e_latency", "p50", "e2e p50 ms"),
    ("e2e_latency", "p99", "e2e p99 ms"),
    ("error_rate", None, "errors %"),
)


def _load(m: Measurement) -> tuple[str, float]:
    if "rate" in m.dims:
        return "rate", float(m.dims["rate"])
    return "concurrency", float(m.dims.get("concurrency", 0))


def _fmt(v: float | None) -> str:
    return "—" if v is None else context.fmt_number(v)


def load_table(ms: list[Measurement]) -> tuple[Table | None, Plot | None]:
    cells: dict[tuple[str, str, str, float], dict[tuple[str, str | None], float]] = defaultdict(
        dict
    )
    for m in ms:
        if m.metric not in {c[0] for c in COLUMNS}:
            continue
        kind, level = _load(m)
        key = (m.step, str(m.dims.get("endpoint", "")), kind, level)
        stat = m.dims.get("stat")
        cells[key][(m.metric, str(stat) if stat is not None else None)] = m.value
    if not cells:
        return None, None
    rows = []
    lines: dict[str, tuple[list[float], list[float]]] = {}
    for (step, ep, kind, level), vals in sorted(cells.items()):
        rows.append(
            (ep, step, f"{kind} {context.fmt_number(level)}",
             *(_fmt(vals.get((metric, stat))) for metric, stat, _ in COLUMNS))
        )  # fmt: skip
        if ("ttft", "p99") in vals:
            xs, ys = lines.setdefault(f"{ep} ({step})", ([], []))
            xs.append(level)
            ys.append(vals[("ttft", "p99")])
    table = Table(
        "Latency vs load",
        ("endpoint", "step", "load", *(c[2] for c in COLUMNS)),
        tuple(rows),
    )
    plot = None
    if any(len(xs) > 1 for xs, _ in lines.values()):
        plot = Plot("Latency vs load: TTFT p99", _lines(lines), "one line per endpoint and step")
    return table, plot


def _lines(series: dict[str, tuple[list[float], list[float]]]) -> str:
    plt = plots._plt()
    fig, ax = plt.subplots(figsize=(7.5, 3.4))
    for (label, (xs, ys)), (dash, mark) in zip(
        series.items(), plots.line_styles(len(series)), strict=True
    ):
        ax.plot(xs, ys, linestyle=dash, marker=mark, label=label)
    ax.set_xlabel("load level (concurrency, or requests/s)")
    ax.set_ylabel("TTFT p99 (ms)")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return plots.svg_text(fig)


def failover_tables(ms: list[Measurement]) -> list[Table]:
    by_step: dict[str, list[Measurement]] = defaultdict(list)
    for m in ms:
        if m.metric.startswith(("timeline_", "failover_", "recovery_", "backend_down")):
            by_step[m.step].append(m)
    out = []
    for step, sms in sorted(by_step.items()):
        summary = []
        for m in sms:
            if m.metric in ("failover_errors", "failover_error_rate", "recovery_time",
                            "backend_down_time"):  # fmt: skip
                kind = m.dims.get("kind")
                name = m.metric + (f" ({kind})" if kind else "")
                summary.append(f"{name} {context.fmt_number(m.value)} {m.unit}")
        per_t: dict[int, dict[str, float]] = defaultdict(dict)
        for m in sms:
            if m.metric.startswith("timeline_"):
                per_t[int(m.dims["t"])][m.metric] = m.value
        rows = tuple(
            (
                f"{t:+d} s",
                _fmt(v.get("timeline_requests")),
                _fmt(v.get("timeline_errors")),
                _fmt(v.get("timeline_latency")),
            )
            for t, v in sorted(per_t.items())
        )
        flagged = frozenset((i, 2) for i, r in enumerate(rows) if r[2] not in ("0", "—"))
        out.append(
            Table(
                f"Failover timeline: {step} (seconds from the backend's stop)",
                ("t", "requests started", "failed", "mean latency ms"),
                rows,
                note="; ".join(summary),
                flagged=flagged,
            )
        )
    return out


def render(si: SectionInput) -> SectionOutput:
    ms = list(si.measurements)
    table, plot = load_table(ms)
    tables = ([table] if table else []) + failover_tables(ms)
    out_plots = ([plot] if plot else []) + checked_plots(si)
    return SectionOutput(plots=tuple(out_plots), tables=tuple(tables))


SECTION = Section("aiperf", "Inference serving (AIPerf)", render)
