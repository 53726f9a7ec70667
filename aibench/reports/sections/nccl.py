"""NCCL-tests section: busbw vs message size per placement, with the spec's bounds.

Reads ``busbw`` (and, if no busbw exists, ``algbw``) measurements with the ``size_bytes``
and ``op`` dims. One line per placement (a node, or the whole set); beyond 12 placements of
one op the single-node placements are drawn as a min-max band plus the failing ones.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Collection

from aibench.model import Measurement
from aibench.reports import context, plots
from aibench.reports.i18n import N_, _
from aibench.reports.sections import (
    Plot,
    Section,
    SectionInput,
    SectionOutput,
    Table,
    failing_nodes,
    lower_bounds,
    measurement_table,
    pair_heatmap,
)

MAX_LINES = 12


def _placement(m: Measurement) -> str:
    if len(m.nodes) <= 2:
        return "+".join(m.nodes) or _("(run)")
    return _("all {n} nodes").format(n=len(m.nodes))


def render(si: SectionInput) -> SectionOutput:
    metric = "busbw" if any(m.metric == "busbw" for m in si.measurements) else "algbw"

    def headline(m: Measurement, placement: str | None = None) -> bool:
        return (
            m.metric == metric
            and "size_bytes" in m.dims
            and (placement is None or m.dims.get("placement") == placement)
        )

    ms = [m for m in si.measurements if headline(m)]
    place = None
    if any(m.dims.get("placement") == "out_of_place" for m in ms):  # the usual headline
        place = "out_of_place"
        ms = [m for m in ms if headline(m, place)]
    out_plots: list[Plot] = []
    rows: list[tuple[str, ...]] = []
    bad = failing_nodes(si.verdicts)
    for op in sorted({str(m.dims.get("op", "")) for m in ms}):
        op_ms = [m for m in ms if str(m.dims.get("op", "")) == op]
        plot, op_rows = _op(si, op, metric, op_ms, bad)
        out_plots.append(plot)
        rows += op_rows
    heat = None
    if ms:
        largest = max(float(x.dims["size_bytes"]) for x in ms)
        at_largest = [m for m in ms if float(m.dims["size_bytes"]) == largest]
        heat = pair_heatmap(si.run, metric, ms[0].unit, at_largest, si.verdicts)
    if heat:
        out_plots.append(heat)
    tables = [
        Table(
            _("Largest message size per placement"),
            ("op", _("placement"), _("size (bytes)"), metric, _("unit"), _("note")),
            tuple(rows),
        )
    ]
    # the measurements not shown above (read again: a run read from disk makes new ones)
    rest = measurement_table(
        (m for m in si.measurements if not headline(m, place)), _("Other NCCL measurements")
    )
    if rest.rows:
        tables.append(rest)
    return SectionOutput(plots=tuple(out_plots), tables=tuple(tables))


Series = dict[str, tuple[list[float], list[float]]]  # placement -> (sizes, median values)


def _curves(
    op_ms: list[Measurement], unit: str
) -> tuple[dict[str, dict[float, list[float]]], set[str]]:
    """Every value in ``unit`` per placement and message size, and the placements of one
    node (or none)."""
    curves: dict[str, dict[float, list[float]]] = defaultdict(lambda: defaultdict(list))
    single_node: set[str] = set()
    for m in op_ms:
        if m.unit == unit:
            curves[_placement(m)][float(m.dims["size_bytes"])].append(m.value)
            if len(m.nodes) <= 1:
                single_node.add(_placement(m))
    return curves, single_node


def _single_node_band(
    series: Series, single_node: set[str], bad: Collection[str]
) -> tuple[tuple[list[float], list[float], list[float]] | None, Series]:
    """Beyond MAX_LINES placements, the single-node ones drawn as one min–max band (a
    failing one keeps its line): the band (sizes, min, max), and the series left as lines."""
    if len(series) <= MAX_LINES:
        return None, series
    singles = [p for p in series if p in single_node]
    at: dict[float, list[float]] = defaultdict(list)  # size -> every single node's value
    for p in singles:
        for x, y in zip(*series[p], strict=True):
            at[x].append(y)
    xs = sorted(at)
    band = (xs, [min(at[x]) for x in xs], [max(at[x]) for x in xs])
    return band, {p: s for p, s in series.items() if p not in singles or p in bad}


def _op(
    si: SectionInput, op: str, metric: str, op_ms: list[Measurement], bad: Collection[str]
) -> tuple[Plot, list[tuple[str, ...]]]:
    """One collective: its sweep of bandwidth against message size per placement (many
    single-node placements drawn as one band), and its rows at the largest size."""
    unit = op_ms[0].unit
    curves, single_node = _curves(op_ms, unit)
    series = {
        p: (sorted(c), [statistics.median(c[x]) for x in sorted(c)]) for p, c in curves.items()
    }
    failing = [p for p in series if p in bad]
    band, series = _single_node_band(series, single_node, bad)
    svg = plots.sweep(
        series,
        bounds=lower_bounds(list(si.verdicts), unit),
        band=band,
        band_label=_("{n} single-node placements (min–max)").format(
            n=len(curves) - len(series) + len(failing)
        ),
        highlight=failing,
        ylabel=f"{metric} ({unit})",
        title=op or metric,
    )
    plot = Plot(
        _("{op}: {metric} vs message size").format(op=op or metric, metric=metric),
        svg,
        _(
            "grey lines: the spec's bounds; thick red line with × markers, named "
            "'(failing)': a failing placement"
        ),
    )
    top = {p: max(c) for p, c in curves.items()}  # the largest size of each placement
    note = {p: _("failing") if p in bad else "" for p in curves}
    rows: list[tuple[str, ...]] = [
        (op, p, context.fmt_bytes(top[p]), context.fmt_number(max(c[top[p]])), unit, note[p])
        for p, c in sorted(curves.items())
    ]
    return plot, rows


SECTION = Section("nccl-tests", N_("NCCL tests (collective bandwidth)"), render)
