"""fio section: per-node bars for each metric and workload (rw, bs), with the bounds."""

from __future__ import annotations

import statistics

from aibench.reports import context
from aibench.reports.sections import (
    Plot,
    Section,
    SectionInput,
    SectionOutput,
    Table,
    by_series,
    node_bars,
)


def render(si: SectionInput) -> SectionOutput:
    out_plots: list[Plot] = []
    rows = []
    for (label, unit), ms in sorted(by_series(si.measurements).items()):
        mine = [v for v in si.verdicts if v.unit == unit]
        p = node_bars(label, unit, ms, mine)
        if p:
            out_plots.append(p)
        vals = [m.value for m in ms]
        rows.append(
            (
                label,
                unit,
                str(len(vals)),
                context.fmt_number(min(vals)),
                context.fmt_number(statistics.median(vals)),
                context.fmt_number(max(vals)),
            )
        )
    table = Table(
        "Summary over nodes", ("series", "unit", "n", "min", "median", "max"), tuple(rows)
    )
    return SectionOutput(plots=tuple(out_plots), tables=(table,))


SECTION = Section("fio", "fio (storage)", render)
