"""MLPerf sections: time to train per run (training) and the result metrics (inference).

Training reads ``time_to_train`` measurements (dim ``benchmark``); with history runs the
bars show one bar per earlier run as well, oldest first. Inference lists its metrics per
scenario and plots them per run when there are several.
"""

from __future__ import annotations

from aibench.reports import context, plots
from aibench.reports.sections import (
    Plot,
    Section,
    SectionInput,
    SectionOutput,
    Table,
    by_series,
    lower_bounds,
    measurement_table,
)


def _per_run(si: SectionInput, metric: str) -> dict[tuple[str, str], list[tuple[str, float]]]:
    out: dict[tuple[str, str], list[tuple[str, float]]] = {}
    for run in (*si.history, si.run):
        for m in run.measurements:
            if m.tool == si.tool and m.metric == metric:
                label = str(m.dims.get("benchmark", m.dims.get("model", metric)))
                out.setdefault((label, m.unit), []).append((f"{run.id} r{m.repeat}", m.value))
    return out


def training(si: SectionInput) -> SectionOutput:
    out_plots: list[Plot] = []
    rows = []
    for (label, unit), pts in sorted(_per_run(si, "time_to_train").items()):
        svg = plots.bars(
            [p[0] for p in pts],
            [p[1] for p in pts],
            unit=unit,
            bounds=lower_bounds(list(si.verdicts), unit),
            ylabel=f"time to train ({unit})",
        )
        out_plots.append(
            Plot(
                f"{label}: time to train per run",
                svg,
                "lower is better; dashed line: the spec's bound",
            )
        )
        rows += [(label, run, context.fmt_number(v), unit) for run, v in pts]
    tables = [Table("Time to train", ("benchmark", "run", "value", "unit"), tuple(rows))]
    rest = [m for m in si.measurements if m.metric != "time_to_train"]
    if rest:
        tables.append(measurement_table(rest))
    return SectionOutput(plots=tuple(out_plots), tables=tuple(tables))


def inference(si: SectionInput) -> SectionOutput:
    out_plots: list[Plot] = []
    for (label, unit), ms in sorted(by_series(si.measurements).items()):
        if len(ms) > 1:
            svg = plots.bars(
                [f"{m.step} r{m.repeat}" for m in ms],
                [m.value for m in ms],
                unit=unit,
                bounds=lower_bounds(list(si.verdicts), unit),
            )
            out_plots.append(Plot(label, svg))
    return SectionOutput(plots=tuple(out_plots), tables=(measurement_table(si.measurements),))


SECTION = [
    Section("mlperf-training", "MLPerf Training", training),
    Section("mlperf-inference", "MLPerf Inference", inference),
]
