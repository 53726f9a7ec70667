"""Network sections (iperf3, iperf2, perftest): pairwise matrix and per-node bars.

For each series (metric + dims, e.g. ``bw [direction=send, streams=8]``) with data-rate
units: the N x N pair matrix (worst value per pair; aggregated by group label beyond 256
nodes), bars of the worst link each node is part of, and the 20 worst links as a table.
Series that differ only by rail (``hca``, ``port`` ...: perftest on 8 HCAs) are drawn as
one, the worst rail of each pair, and the table names the rail.
"""

from __future__ import annotations

import functools
import heapq
import itertools
from collections.abc import Sequence

from aibench import units
from aibench.model import Lazy, Measurement
from aibench.reports import context
from aibench.reports.i18n import N_, _
from aibench.reports.sections import (
    Plot,
    Section,
    SectionInput,
    SectionOutput,
    Table,
    checked_plots,
    checked_series,
    held,
    measurement_table,
    node_bars,
    pair_heatmap,
    series_key,
    series_of,
    several,
    short_label,
)

WORST = 20
RAIL_DIMS = frozenset({"hca", "rail", "port", "device", "ib_dev", "gid_index"})


def _is_rate(unit: str) -> bool:
    return units.is_known(unit) and units.dimension(unit) == "data_rate"


def _rail(m: Measurement) -> str:
    return ", ".join(f"{k}={v}" for k, v in m.dims.items() if k in RAIL_DIMS)


def merge_rails(
    series: Sequence[tuple[str, str, Sequence[Measurement]]],
) -> list[tuple[str, str, Sequence[Measurement]]]:
    """Series that differ only in their rail (hca, port ...) become one: the matrix and the
    bars then show the worst rail of each pair, and the table names the rail."""
    out: dict[tuple[str, str], list[Sequence[Measurement]]] = {}
    for label, unit, ms in series:
        first = next(iter(ms), None)
        if first is None:
            continue
        prefix = label.split(": ", 1)[0] + ": " if ": " in label else ""
        metric, dims = series_key(first)
        base = prefix + short_label(metric, [(k, v) for k, v in dims if k not in RAIL_DIMS])
        out.setdefault((base, unit), []).append(ms)
    merged: list[tuple[str, str, Sequence[Measurement]]] = []
    for (base, unit), parts in out.items():
        ms = _joined(parts)
        rails = {_rail(m) for m in ms}
        label = (
            base + _(" — worst of {n} rails per pair").format(n=len(rails))
            if len(rails) > 1
            else base
        )
        merged.append((label, unit, ms))
    return merged


def _joined(parts: list[Sequence[Measurement]]) -> Sequence[Measurement]:
    """One sequence of ``parts``: held ones joined, those read from disk chained."""
    if len(parts) == 1:
        return parts[0]
    if all(held(p) for p in parts):
        return tuple(m for p in parts for m in p)
    return Lazy(functools.partial(itertools.chain.from_iterable, parts))


def _followed(si: SectionInput) -> list[tuple[str, str, Sequence[Measurement]]]:
    """The series shown (at most 8, rails merged): those the spec checks, else (nothing to
    follow) every data-rate series."""
    checked = checked_series(si, limit=64)
    series: list[tuple[str, str, Sequence[Measurement]]] = [
        (c.check + ": " + c.label, c.unit, c.measurements) for c in checked
    ]
    if not checked:
        series = [
            (label, unit, ms)
            for (label, unit), ms in sorted(series_of(si.measurements).items())
            if _is_rate(unit)
        ]
    return merge_rails(series)[:8]


def _slowest_links(label: str, unit: str, ms: Sequence[Measurement]) -> Table | None:
    """The WORST slowest links of a series (with their rail when any has one)."""
    # the same as sorted(...)[:WORST], without holding every pair
    worst = heapq.nsmallest(WORST, (m for m in ms if len(m.nodes) == 2), key=lambda m: m.value)
    if not worst:
        return None
    rails = any(_rail(m) for m in worst)
    return Table(
        _("{label}: slowest links ({n})").format(label=label, n=len(worst)),
        (
            _("link"),
            *((_("rail"),) if rails else ()),
            _("value"),
            _("unit"),
            _("step"),
        ),
        tuple(
            (
                " ↔ ".join(m.nodes),
                *((_rail(m),) if rails else ()),
                context.fmt_number(m.value),
                unit,
                m.step,
            )
            for m in worst
        ),
    )


def render(si: SectionInput) -> SectionOutput:
    out_plots: list[Plot] = []
    tables: list[Table] = []
    series = _followed(si)
    pairs = several(m.nodes for _, _, ms in series for m in ms if len(m.nodes) == 2)
    for label, unit, ms in series:
        if pairs:
            heat = pair_heatmap(si.run, label, unit, ms, si.verdicts)
            if heat:
                out_plots.append(heat)
        if pairs and several(n for m in ms for n in m.nodes):
            bars = node_bars(label, unit, ms, si.verdicts)
            if bars:
                out_plots.append(bars)
        slowest = _slowest_links(label, unit, ms)
        if slowest is not None:
            tables.append(slowest)
    if not pairs:
        out_plots += checked_plots(si)
    other = (m for m in si.measurements if not _is_rate(m.unit))
    table = measurement_table(other, _("Other measurements"))
    if table.rows:
        tables.append(table)
    return SectionOutput(plots=tuple(out_plots), tables=tuple(tables))


SECTION = [
    Section("iperf3", N_("iperf3 (TCP/UDP bandwidth)"), render),
    Section("iperf2", N_("iperf2 (TCP/UDP bandwidth)"), render),
    Section("perftest", N_("perftest (RDMA bandwidth and latency)"), render),
]
