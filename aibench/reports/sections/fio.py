"""fio section: per-node bars (or observed vs bounds) for each checked fio series, and a
summary over nodes of the primary metrics (bw, iops, mean latencies) per workload."""

from __future__ import annotations

import statistics

from aibench.reports import context
from aibench.reports.i18n import N_, _
from aibench.reports.sections import (
    Plot,
    Section,
    SectionInput,
    SectionOutput,
    Table,
    by_series,
    checked_plots,
    node_bars,
)

PRIMARY = ("bw", "iops", "lat_mean", "clat_mean")


def render(si: SectionInput) -> SectionOutput:
    out_plots: list[Plot] = checked_plots(si)
    rows = []
    for (label, unit), ms in sorted(by_series(si.measurements).items()):
        if not out_plots and label.split(" [")[0] in PRIMARY and len(out_plots) < 4:
            p = node_bars(label, unit, ms, [v for v in si.verdicts if v.unit == unit])
            if p:
                out_plots.append(p)
        if label.split(" [")[0] not in PRIMARY:
            continue
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
    if not rows:
        return SectionOutput(plots=tuple(out_plots))
    table = Table(
        _("Summary over nodes"),
        (_("series"), _("unit"), _("n"), _("min"), _("median"), _("max")),
        tuple(rows),
    )
    return SectionOutput(plots=tuple(out_plots), tables=(table,))


SECTION = Section("fio", N_("fio (storage)"), render)
