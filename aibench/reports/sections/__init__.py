"""Per-benchmark report sections: small plug-ins keyed by tool name.

A module in this package defines ``SECTION`` (one :class:`Section` or a list of them).
``render(SectionInput) -> SectionOutput`` turns the run's measurements and verdicts for one
tool into plots (inline SVG from :mod:`aibench.reports.plots`) and tables of *plain text*
cells; the HTML template escapes every cell. A tool without a section gets
:data:`GENERIC`, which lists its measurements. Third parties add sections through the
``aibench.reports.sections`` entry-point group.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from aibench import units
from aibench.model import Measurement, Outcome, Run, StepResult, Verdict
from aibench.registry import Registry
from aibench.reports import context, plots
from aibench.reports.i18n import N_, _, ngettext


@dataclass(frozen=True)
class Plot:
    title: str
    svg: str  # produced by aibench.reports.plots (trusted markup)
    caption: str = ""


@dataclass(frozen=True)
class Table:
    caption: str
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    note: str = ""  # e.g. "showing 200 of 4096 rows"
    # (row, column) of cells to highlight; the cell's text carries its own marker as well
    # (✖, ≠ ...) so that the table reads the same without colour
    flagged: frozenset[tuple[int, int]] = frozenset()


@dataclass(frozen=True)
class SectionInput:
    tool: str
    run: Run
    measurements: tuple[Measurement, ...]
    verdicts: tuple[Verdict, ...]
    steps: tuple[StepResult, ...]
    history: tuple[Run, ...] = ()


@dataclass(frozen=True)
class SectionOutput:
    plots: tuple[Plot, ...] = ()
    tables: tuple[Table, ...] = ()
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Section:
    tool: str
    title: str  # English; marked with i18n.N_ it is shown translated
    render: Callable[[SectionInput], SectionOutput] = field(repr=False)
    # reads the steps of the earlier runs it is given (SectionInput.history), not only
    # their verdicts: a run judged with history reads those steps of its earlier runs
    history_steps: bool = False


SECTIONS: Registry[Section] = Registry(
    "report section", "aibench.reports.sections", "SECTION", key=lambda s: s.tool
)

MAX_ROWS = 300


def section_for(tool: str) -> Section:
    """The tool's own section; else the section of the tool it declares it reads like
    (``Traits.section``: rccl-tests renders as NCCL-tests), under its own name and title;
    else the generic list of its measurements."""
    from aibench import tools

    if tool in SECTIONS:
        return SECTIONS.get(tool)
    t = tools.traits(tool)
    if t.section and t.section in SECTIONS:
        return dataclasses.replace(SECTIONS.get(t.section), tool=tool, title=t.title or tool)
    return Section(tool, t.title or tool, GENERIC.render)


def history_step_tools(tools: Iterable[str]) -> frozenset[str]:
    """Of ``tools``, those whose section reads the steps of earlier runs (the others'
    trends are drawn from the verdicts alone)."""
    return frozenset(t for t in tools if section_for(t).history_steps)


# ---- helpers shared by the sections -------------------------------------------------


def notes_table(steps: Sequence[StepResult]) -> Table | None:
    """The tools' own warnings (``StepResult.notes``), one row per distinct text: the
    words, how many steps printed them and on which nodes. None when there are none."""
    seen: dict[tuple[str, str], tuple[list[str], list[str]]] = {}
    for s in steps:
        for n in s.notes:
            step_ids, nodes = seen.setdefault((n.kind, n.text), ([], []))
            step_ids.append(s.step_id)
            nodes.extend(x for x in s.nodes if x not in nodes)
    if not seen:
        return None
    rows = []
    for (kind, text), (step_ids, nodes) in seen.items():
        shown = ", ".join(nodes[:6]) + (f" and {len(nodes) - 6} more" if len(nodes) > 6 else "")
        rows.append((kind, text, str(len(step_ids)), shown or "-"))
    return Table(
        caption="The tool's own warnings about these runs (they qualify the numbers below)",
        columns=("kind", "the tool's words", "steps", "nodes"),
        rows=tuple(rows[:MAX_ROWS]),
        note=f"showing {MAX_ROWS} of {len(rows)}" if len(rows) > MAX_ROWS else "",
    )


def convert(value: float, src: str, dst: str) -> float | None:
    if src == dst:
        return value
    try:
        return units.convert(value, src, dst)
    except ValueError:
        return None


def lower_bounds(verdicts: Sequence[Verdict], unit: str) -> list[tuple[str, float]]:
    """Distinct lower (or, if none, upper) bounds of the checks, in ``unit``."""
    seen: dict[float, str] = {}
    for v in verdicts:
        for side, b in (("≥", v.bounds[0]), ("≤", v.bounds[1])):
            if b is None:
                continue
            got = convert(float(b), v.unit or unit, unit)
            if got is not None and got not in seen:
                seen[got] = f"{v.check} {side} {context.fmt_number(got)} {unit}"
    return [(label, val) for val, label in sorted(seen.items())][:4]


def failing_nodes(verdicts: Sequence[Verdict], warn: bool = False) -> set[str]:
    out: set[str] = set()
    for v in verdicts:
        if v.outcome.failing or (warn and v.outcome is Outcome.WARN):
            out.update(v.culprits or v.subject)
    return out


def group_key(m: Measurement, ignore: Sequence[str] = ()) -> str:
    dims = ", ".join(f"{k}={v}" for k, v in m.dims.items() if k not in ignore)
    return f"{m.metric} [{dims}]" if dims else m.metric


def by_series(ms: Sequence[Measurement]) -> dict[tuple[str, str], list[Measurement]]:
    """(series label, unit) -> measurements; series = metric + dims (minus size)."""
    out: dict[tuple[str, str], list[Measurement]] = defaultdict(list)
    for m in ms:
        key = series_key(m)
        out[(short_label(key[0], key[1]), m.unit)].append(m)
    return dict(out)


def node_bars(
    label: str, unit: str, ms: Sequence[Measurement], verdicts: Sequence[Verdict]
) -> Plot | None:
    """One bar per node: the median per node (pairs: the worst value a node is part of).
    None for fewer than two nodes: one bar shows nothing the table does not."""
    per: dict[str, list[float]] = defaultdict(list)
    for m in ms:
        for n in m.nodes:
            per[n].append(m.value)
    if len(per) < 2:
        return None
    pairs = any(len(m.nodes) == 2 for m in ms)
    names = sorted(per)
    values = [min(per[n]) if pairs else statistics.median(per[n]) for n in names]
    mine = [v for v in verdicts if v.unit == unit or convert(1.0, v.unit, unit) is not None]
    bad = failing_nodes(mine, warn=True)
    bad_nodes = [n for n in names if n in bad or any(n in b.split("<->") for b in bad)]
    how = _("worst link per node") if pairs else _("median per node")
    many = len(names) > plots.MAX_BARS
    return Plot(
        _("{label} per node").format(label=label),
        plots.bars(
            names,
            values,
            unit=unit,
            bounds=lower_bounds(mine, unit),
            bad=bad_nodes,
            # the metric alone: the dims are in the plot's caption, and a long rotated
            # label would stretch the figure
            ylabel=f"{label.split(' [', 1)[0]} ({unit})",
        ),
        how
        + (
            _("; nodes with a FAIL or WARN marked and named; dashed lines are the spec bounds")
            if many
            else _("; nodes with a FAIL or WARN hatched and red; dashed lines are the spec bounds")
        ),
    )


def pair_heatmap(
    run: Run, label: str, unit: str, ms: Sequence[Measurement], verdicts: Sequence[Verdict]
) -> Plot | None:
    pair_ms = [m for m in ms if len(m.nodes) == 2]
    if not pair_ms:
        return None
    nodes = sorted({n for m in pair_ms for n in m.nodes})
    agg = ""
    key: dict[str, str] = {n: n for n in nodes}
    if len(nodes) > 256:
        key = context.groups(run, nodes)
        agg = _(" (aggregated by group: worst link between groups)")
    labels = sorted(set(key.values()))
    idx = {lab: i for i, lab in enumerate(labels)}
    cell: dict[tuple[int, int], float] = {}
    for m in pair_ms:
        a, b = idx[key[m.nodes[0]]], idx[key[m.nodes[1]]]
        cell[(a, b)] = min(cell.get((a, b), math.inf), m.value)
    matrix = [[cell.get((r, c), math.nan) for c in range(len(labels))] for r in range(len(labels))]
    marks = []
    for v in verdicts:
        if v.outcome.failing and len(v.subject) == 2 and all(s in key for s in v.subject):
            marks.append((idx[key[v.subject[0]]], idx[key[v.subject[1]]]))
    svg = plots.heatmap(
        labels,
        matrix,
        unit=unit,
        marks=sorted(set(marks)),
        axis_label=_("group") if agg else _("node"),
    )
    return Plot(
        _("{label}: pairwise matrix").format(label=label) + agg,
        svg,
        _(
            "{pairs} pair measurements over {nodes} nodes; darker = lower (dark red "
            "is the slowest), white = not measured, × or ring = failing check"
        ).format(pairs=len(pair_ms), nodes=len(nodes)),
    )


# dims left out of plot and series labels (they stay in the measurement tables)
NOISY_DIMS = frozenset(
    {"job", "direct", "ioengine", "numjobs", "iodepth", "count", "dtype", "redop", "root", "group"}
    | {"mtu", "link_layer", "transport", "gid_index"}
)


def series_key(m: Measurement) -> tuple[str, tuple[tuple[str, str], ...]]:
    """(metric, dims without the message size): the identity of a line or a bar series."""
    return m.metric, tuple((k, str(v)) for k, v in m.dims.items() if k != "size_bytes")


def short_label(metric: str, dims: Sequence[tuple[str, str]]) -> str:
    shown = [f"{k}={v}" for k, v in dims if k not in NOISY_DIMS]
    return f"{metric} [{', '.join(shown)}]" if shown else metric


@dataclass(frozen=True)
class Checked:
    """A series of measurements that one check of the spec judged."""

    check: str
    label: str
    unit: str  # the check's unit; values are converted to it
    measurements: tuple[Measurement, ...]
    verdicts: tuple[Verdict, ...]


def checked_series(si: SectionInput, limit: int = 8) -> list[Checked]:
    """The series the checks judged, found by the evidence steps and the observed value.

    A check's series is the (metric, dims) of the measurement in its evidence step whose
    value, converted to the check's unit, equals the observed value. Checks whose
    observed value is an aggregate that matches no single measurement are skipped here.
    """
    steps = {s.step_id: s for s in si.steps}
    found: dict[tuple[str, Any], list[Verdict]] = {}
    for v in si.verdicts:
        if v.observed is None or not v.evidence:
            continue
        key = None
        for sid in v.evidence:
            step = steps.get(sid)
            for m in step.measurements if step else ():
                got = convert(m.value, m.unit, v.unit) if v.unit else None
                if got is not None and math.isclose(got, v.observed, rel_tol=1e-6):
                    key = series_key(m)
                    break
            if key:
                break
        if key:
            found.setdefault((v.check, key), []).append(v)
    chosen = list(found.items())[:limit]
    wanted = {key for (_, key), _ in chosen}
    of_key: dict[Any, list[Measurement]] = {key: [] for key in wanted}
    for m in si.measurements:  # one pass, not one per series: a large run has millions
        key = series_key(m)
        if key in wanted:
            of_key[key].append(m)
    out = []
    for (check, key), vs in chosen:
        unit = vs[0].unit
        ms = []
        for m in of_key[key]:
            if m.unit == unit:  # most are in the check's unit already: no copy
                ms.append(m)
                continue
            val = convert(m.value, m.unit, unit)
            if val is not None:
                ms.append(dataclasses.replace(m, value=val, unit=unit))
        label = short_label(key[0], key[1])
        out.append(Checked(check, label, unit, tuple(ms), tuple(vs)))
    return out


def checked_plots(si: SectionInput) -> list[Plot]:
    """Per-node bars for each checked series with several nodes; one chart of the checks
    against their bounds for the series measured on one node (or one placement)."""
    out: list[Plot] = []
    single: list[tuple[str, float, str, tuple[float | None, float | None], bool]] = []
    for c in checked_series(si):
        if len({m.nodes for m in c.measurements}) > 1:  # several nodes or pairs
            p = node_bars(c.label, c.unit, list(c.measurements), list(c.verdicts))
            if p:
                out.append(Plot(f"{c.check}: {p.title}", p.svg, p.caption))
        else:
            for v in c.verdicts:
                if v.observed is not None:
                    single.append((v.check, v.observed, v.unit, v.bounds, v.outcome.failing))
    by_unit: dict[str, list[tuple[str, float, tuple[float | None, float | None], bool]]] = {}
    for check, val, unit, bounds, bad in single:
        by_unit.setdefault(unit, []).append((check, val, bounds, bad))
    for unit, rows in sorted(by_unit.items()):
        if len(rows) < 2:  # one bar: the check's table row says the same
            continue
        out.append(
            Plot(
                _("Checks in {unit}: observed value and bounds").format(unit=unit),
                plots.check_bars(rows, unit=unit),
                _("bars: observed; black ticks: the spec's bounds; red hatched: failing"),
            )
        )
    return out


def measurement_table(ms: Sequence[Measurement], caption: str = "") -> Table:
    """The measurements as rows (at most :data:`MAX_ROWS`); ``caption`` defaults to
    "Measurements" in the report's language."""
    rows = tuple(
        (
            ", ".join(m.nodes)
            if len(m.nodes) <= 4
            else ngettext("{n} node", "{n} nodes", len(m.nodes)).format(n=len(m.nodes)),
            m.metric,
            ", ".join(f"{k}={v}" for k, v in m.dims.items()),
            context.fmt_number(m.value),
            m.unit,
            m.step,
        )
        for m in ms[:MAX_ROWS]
    )
    note = (
        _("showing {shown} of {total} measurements").format(shown=MAX_ROWS, total=len(ms))
        if len(ms) > MAX_ROWS
        else ""
    )
    return Table(
        caption or _("Measurements"),
        (_("nodes"), _("metric"), _("dims"), _("value"), _("unit"), _("step")),
        rows,
        note,
    )


def _generic(si: SectionInput) -> SectionOutput:
    plots_out = checked_plots(si)
    if plots_out:
        return SectionOutput(plots=tuple(plots_out), tables=(measurement_table(si.measurements),))
    for (label, unit), ms in sorted(by_series(si.measurements).items())[:4]:
        if len({n for m in ms for n in m.nodes}) > 1:
            p = node_bars(label, unit, ms, si.verdicts)
            if p:
                plots_out.append(p)
    return SectionOutput(plots=tuple(plots_out), tables=(measurement_table(si.measurements),))


GENERIC = Section("(generic)", N_("Other measurements"), _generic)
