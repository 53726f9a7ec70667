"""Per-benchmark report sections: small plug-ins keyed by tool name.

A module in this package defines ``SECTION`` (one :class:`Section` or a list of them).
``render(SectionInput) -> SectionOutput`` turns the run's measurements and verdicts for one
tool into plots (inline SVG from :mod:`aibench.reports.plots`) and tables of *plain text*
cells; the HTML template escapes every cell. A tool without a section gets
:data:`GENERIC`, which lists its measurements. Third parties add sections through the
``aibench.reports.sections`` entry-point group.

A run of millions of invocations is reported with its steps left on disk: its sections are
given sequences that read the tool's steps again on each pass (:func:`held` tells them
apart from tuples). The helpers here go over them as often as they need and keep what they
draw (a value per node, a cell per pair of groups, the slowest links), not the
measurements; a section that keeps a list of them keeps it for a tool run per node, not
per pair.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import statistics
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from aibench import units
from aibench.model import Lazy, Measurement, Outcome, Run, StepResult, Verdict
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
    # held tuples, or (a run of millions of steps read from disk) sequences that read the
    # steps again on each pass: a section goes over them and keeps what it shows
    measurements: Sequence[Measurement]
    verdicts: tuple[Verdict, ...]
    steps: Sequence[StepResult]
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
    seen: dict[tuple[str, str], tuple[list[int], dict[str, None]]] = {}
    for s in steps:
        for n in s.notes:
            count, on = seen.setdefault((n.kind, n.text), ([0], {}))
            count[0] += 1
            on.update(dict.fromkeys(s.nodes))
    if not seen:
        return None
    rows = []
    for (kind, text), (count, of) in seen.items():
        nodes = list(of)
        shown = ", ".join(nodes[:6]) + (f" and {len(nodes) - 6} more" if len(nodes) > 6 else "")
        rows.append((kind, text, str(count[0]), shown or "-"))
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


def by_series(ms: Iterable[Measurement]) -> dict[tuple[str, str], list[Measurement]]:
    """(series label, unit) -> measurements; series = metric + dims (minus size)."""
    out: dict[tuple[str, str], list[Measurement]] = defaultdict(list)
    for m in ms:
        out[label_of(m)].append(m)
    return dict(out)


def label_of(m: Measurement) -> tuple[str, str]:
    """(series label, unit) of ``m``: the key of :func:`by_series`."""
    key = series_key(m)
    return short_label(key[0], key[1]), m.unit


def series_of(ms: Sequence[Measurement]) -> dict[tuple[str, str], Sequence[Measurement]]:
    """:func:`by_series` of held measurements; of measurements read from disk on each pass
    (a run of millions), each series a filter of them, made again on each pass."""
    if held(ms):
        return dict(by_series(ms))
    labels = dict.fromkeys(label_of(m) for m in ms)
    return {key: Lazy(functools.partial(_of_label, ms, key)) for key in labels}


def _of_label(ms: Iterable[Measurement], key: tuple[str, str]) -> Iterator[Measurement]:
    return (m for m in ms if label_of(m) == key)


def held(ms: Sequence[Any]) -> bool:
    """Whether ``ms`` is held in memory, not read again on each pass."""
    return isinstance(ms, tuple | list)


def several(values: Iterable[Any]) -> bool:
    """Whether ``values`` holds two distinct values (it stops at the second)."""
    first: Any = None
    for i, v in enumerate(values):
        if i == 0:
            first = v
        elif v != first:
            return True
    return False


def node_bars(
    label: str, unit: str, ms: Sequence[Measurement], verdicts: Sequence[Verdict]
) -> Plot | None:
    """One bar per node: the median per node (pairs: the worst value a node is part of).
    None for fewer than two nodes: one bar shows nothing the table does not."""
    low: dict[str, float] = {}  # the lowest value of each node
    per: dict[str, list[float]] = defaultdict(list)  # values of nodes measured alone
    pairs = False
    for m in ms:
        pairs = pairs or len(m.nodes) == 2
        for n in m.nodes:
            low[n] = min(low.get(n, math.inf), m.value)
            if len(m.nodes) != 2:  # a pair's node shows its lowest: its values are not kept
                per[n].append(m.value)
    if len(low) < 2:
        return None
    names = sorted(low)
    values = [low[n] if pairs else statistics.median(per[n]) for n in names]
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
    nodes = sorted({n for m in ms if len(m.nodes) == 2 for n in m.nodes})
    if not nodes:
        return None
    agg = ""
    key: dict[str, str] = {n: n for n in nodes}
    if len(nodes) > 256:
        key = context.groups(run, nodes)
        agg = _(" (aggregated by group: worst link between groups)")
    labels = sorted(set(key.values()))
    idx = {lab: i for i, lab in enumerate(labels)}
    cell: dict[tuple[int, int], float] = {}
    pairs = 0
    for m in ms:
        if len(m.nodes) != 2:
            continue
        pairs += 1
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
        ).format(pairs=pairs, nodes=len(nodes)),
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
    measurements: Sequence[Measurement]  # a tuple, or a Lazy filter of steps on disk
    verdicts: tuple[Verdict, ...]


def checked_series(si: SectionInput, limit: int = 8) -> list[Checked]:
    """The series the checks judged, found by the evidence steps and the observed value.

    A check's series is the (metric, dims) of the measurement in its evidence step whose
    value, converted to the check's unit, equals the observed value. Checks whose
    observed value is an aggregate that matches no single measurement are skipped here.
    Measurements held are gathered per series; those read from disk stay there, each
    series a filter of them made again on each pass.
    """
    found: dict[tuple[str, Any], list[Verdict]] = {}
    for v, key in zip(si.verdicts, _verdict_series(si), strict=True):
        if key:
            found.setdefault((v.check, key), []).append(v)
    chosen = list(found.items())[:limit]
    of_key: dict[Any, list[Measurement]] = {key: [] for (_, key), _ in chosen}
    if held(si.measurements):
        for m in si.measurements:  # one pass, not one per series: a large run has millions
            key = series_key(m)
            if key in of_key:
                of_key[key].append(m)
    out = []
    for (check, key), vs in chosen:
        unit = vs[0].unit
        ms: Sequence[Measurement]
        if held(si.measurements):
            ms = tuple(_in_unit(of_key[key], unit))
        else:
            ms = Lazy(functools.partial(_series_in_unit, si.measurements, key, unit))
        label = short_label(key[0], key[1])
        out.append(Checked(check, label, unit, ms, tuple(vs)))
    return out


def _verdict_series(si: SectionInput) -> list[Any]:
    """The series key of each verdict of ``si`` (None where none is found), in one pass
    over the steps that looks only at the verdicts' evidence steps; of several, the first
    in the verdict's evidence that has the observed value. What it keeps per verdict is
    small: a run of all pairs has a verdict per pair."""
    wanted: dict[str, int | list[int]] = {}  # evidence step id -> verdict index(es)
    for i, v in enumerate(si.verdicts):
        if v.observed is not None and v.unit:
            for sid in v.evidence:
                had = wanted.setdefault(sid, i)
                if isinstance(had, list):
                    had.append(i)
                elif had != i:
                    wanted[sid] = [had, i]
    keys: list[Any] = [None] * len(si.verdicts)
    places: dict[int, int] = {}  # verdict -> the place in its evidence of the step found
    shared: dict[Any, Any] = {}  # one key object for each series
    for step in si.steps if wanted else ():
        found = wanted.get(step.step_id)
        for i in (found,) if isinstance(found, int) else found or ():
            v = si.verdicts[i]
            place = v.evidence.index(step.step_id) if len(v.evidence) > 1 else 0
            if places.get(i, place + 1) <= place:
                continue
            for m in step.measurements:
                got = convert(m.value, m.unit, v.unit)
                if got is not None and math.isclose(got, float(v.observed or 0), rel_tol=1e-6):
                    key = series_key(m)
                    keys[i] = shared.setdefault(key, key)
                    if len(v.evidence) > 1:
                        places[i] = place
                    break
    return keys


def _in_unit(ms: Iterable[Measurement], unit: str) -> Iterator[Measurement]:
    for m in ms:
        if m.unit == unit:  # most are in the check's unit already: no copy
            yield m
            continue
        val = convert(m.value, m.unit, unit)
        if val is not None:
            yield dataclasses.replace(m, value=val, unit=unit)


def _series_in_unit(ms: Iterable[Measurement], key: Any, unit: str) -> Iterator[Measurement]:
    return _in_unit((m for m in ms if series_key(m) == key), unit)


def checked_plots(si: SectionInput) -> list[Plot]:
    """Per-node bars for each checked series with several nodes; one chart of the checks
    against their bounds for the series measured on one node (or one placement)."""
    out: list[Plot] = []
    single: list[tuple[str, float, str, tuple[float | None, float | None], bool]] = []
    for c in checked_series(si):
        if several(m.nodes for m in c.measurements):  # several nodes or pairs
            p = node_bars(c.label, c.unit, c.measurements, c.verdicts)
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


def measurement_table(ms: Iterable[Measurement], caption: str = "") -> Table:
    """The measurements as rows (at most :data:`MAX_ROWS`; the others are counted);
    ``caption`` defaults to "Measurements" in the report's language."""
    rows = []
    total = 0
    for total, m in enumerate(ms, 1):
        if total > MAX_ROWS:
            continue
        rows.append(
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
        )
    note = (
        _("showing {shown} of {total} measurements").format(shown=MAX_ROWS, total=total)
        if total > MAX_ROWS
        else ""
    )
    return Table(
        caption or _("Measurements"),
        (_("nodes"), _("metric"), _("dims"), _("value"), _("unit"), _("step")),
        tuple(rows),
        note,
    )


def _generic(si: SectionInput) -> SectionOutput:
    plots_out = checked_plots(si)
    if plots_out:
        return SectionOutput(plots=tuple(plots_out), tables=(measurement_table(si.measurements),))
    for (label, unit), ms in sorted(series_of(si.measurements).items())[:4]:
        if several(n for m in ms for n in m.nodes):
            p = node_bars(label, unit, ms, si.verdicts)
            if p:
                plots_out.append(p)
    return SectionOutput(plots=tuple(plots_out), tables=(measurement_table(si.measurements),))


GENERIC = Section("(generic)", N_("Other measurements"), _generic)
