"""Soak report section: per-node temperature, power and clock over time, throttling shaded,
the BMC events listed, the failing parts named.

Reads ``run.telemetry`` (:func:`aibench.telemetry.compact`) and the soak verdicts
(benchmark ``soak``). One figure per node with up to three panels that share the time axis:
temperatures (GPU ``temp_gpu`` and BMC ``temperature``), power (GPU ``power`` and BMC
``power``) and rates (GPU ``clock_sm`` in MHz, else the stress-ng rate). Spans where a GPU
reported a clocks-event reason other than idle or the software power cap are shaded red;
the time a failing check names is a vertical line. Nodes with a failing soak check come
first; at most 16 figures (the tables list every node).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from aibench.model import Outcome, Verdict
from aibench.reports import plots
from aibench.reports.sections import Plot, Section, SectionInput, SectionOutput, Table
from aibench.soak.judge import IGNORED_CLOCK_EVENTS

MAX_FIGURES = 16
_AT = re.compile(r"(?:from|at) (\d+(?:\.\d+)?) s")
PANELS = (
    ("temperature (C)", ("temp_gpu", "temperature", "temp")),
    ("power (W)", ("power",)),
    ("clock (MHz) / stress rate", ("clock_sm", "bogo_ops_rate")),
)


def _throttle_spans(series: Sequence[Mapping[str, Any]]) -> list[tuple[float, float]]:
    spans: list[tuple[float, float]] = []
    for s in series:
        if s["metric"] != "clocks_event_mask":
            continue
        start = None
        for t, v in zip(s["t"], s["v"], strict=True):
            if int(v) & ~IGNORED_CLOCK_EVENTS:
                start = t if start is None else start
            elif start is not None:
                spans.append((start, t))
                start = None
        if start is not None:
            spans.append((start, s["t"][-1]))
    return spans


def _fail_times(verdicts: Sequence[Verdict]) -> list[tuple[float, str]]:
    out = []
    for v in verdicts:
        if v.outcome is Outcome.FAIL:
            m = _AT.search(v.observed_text)
            if m:
                out.append((float(m.group(1)), v.check.removeprefix("soak.")))
    return out


def _figure(node: str, series: Sequence[Mapping[str, Any]], verdicts: Sequence[Verdict]) -> str:
    plt = plots._plt()
    panels = [(label, [s for s in series if s["metric"] in metrics]) for label, metrics in PANELS]
    panels = [(label, ss) for label, ss in panels if ss]
    fig, axes = plt.subplots(
        len(panels), 1, figsize=(7.5, 1.9 * len(panels) + 0.4), sharex=True, squeeze=False
    )
    spans = _throttle_spans(series)
    fails = _fail_times(verdicts)
    for ax, (label, ss) in zip(axes[:, 0], panels, strict=True):
        for s in ss[:8]:
            ax.plot(s["t"], s["v"], linewidth=1.2, label=f"{s['source']} {s['key']}"[:28])
        for a, b in spans:
            ax.axvspan(a, b, color=plots.BAD, alpha=0.15, linewidth=0)
        for t, _check in fails:
            ax.axvline(t, color=plots.BAD, linestyle="--", linewidth=1)
        ax.set_ylabel(label, fontsize=8)
        ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    axes[-1, 0].set_xlabel("seconds since the soak started")
    axes[0, 0].set_title(node)
    return plots.svg_text(fig)


def render(si: SectionInput) -> SectionOutput:
    tel: Mapping[str, Any] = si.run.telemetry or {}
    notes = () if tel else ("this run holds no telemetry",)
    return SectionOutput(
        plots=_figures(tel, si.verdicts), tables=_tables(tel, si.verdicts), notes=notes
    )


def _figures(tel: Mapping[str, Any], verdicts: Sequence[Verdict]) -> tuple[Plot, ...]:
    """One figure per node, the failing nodes first, at most :data:`MAX_FIGURES`."""
    by_node: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for s in tel.get("series", []):
        by_node[str(s["node"])].append(s)
    verdicts_of: dict[str, list[Verdict]] = defaultdict(list)
    for v in verdicts:
        for n in v.subject:
            verdicts_of[n].append(v)
    failing = {n for n, vs in verdicts_of.items() if any(v.outcome.failing for v in vs)}
    order = sorted(by_node, key=lambda n: (n not in failing, n))
    return tuple(
        Plot(
            f"{n}: temperature, power and clock over time",
            _figure(n, by_node[n], verdicts_of[n]),
            "red shading: a GPU clocks-event reason other than idle or power cap; dashed "
            "line: when a failing check saw the fault"
            + (" — this node FAILS" if n in failing else ""),
        )
        for n in order[:MAX_FIGURES]
    )


def _tables(tel: Mapping[str, Any], verdicts: Sequence[Verdict]) -> tuple[Table, ...]:
    """The failing parts, the BMC events and, when there were any, the sampling problems."""
    parts = tuple(
        (v.subject[0] if v.subject else "", c.split(":", 1)[-1], v.check, v.observed_text)
        for v in verdicts
        if v.outcome.failing
        for c in (v.culprits or ("",))
    )
    events = tuple(
        (
            str(e.get("node", "")),
            f"{e.get('t', '')}",
            str(e.get("sensor_type", "")),
            str(e.get("sensor", "")),
            str(e.get("event", "")),
            "before the soak" if e.get("first_read") else "new",
        )
        for e in tel.get("events", [])
    )
    errors = tuple(
        (
            str(e.get("node", "")),
            f"{e.get('t', '')}",
            str(e.get("source", "")),
            str(e.get("reason", "")),
        )
        for e in tel.get("errors", [])[:200]
    )
    tables = [
        Table(
            "Failing parts",
            ("node", "part", "check", "what and when"),
            parts,
            note="" if parts else "no part failed",
        ),
        Table(
            "BMC events (SEL / Redfish health)",
            ("node", "t (s)", "type", "sensor", "event", "seen"),
            events,
            note="" if events else "no BMC event",
        ),
    ]
    if errors:
        tables.append(
            Table(
                "Sampling problems (the soak went on)", ("node", "t (s)", "probe", "reason"), errors
            )
        )
    return tuple(tables)


SECTION = Section("soak", "Burn-in soak", render)
