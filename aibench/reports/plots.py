"""Plots for the HTML report: matplotlib (Agg), returned as inline SVG text.

Every function takes plain numbers and labels and returns an SVG string that is safe to
place inside HTML: matplotlib's SVG writer XML-escapes all text; :func:`svg_text` then drops
the XML prolog, DOCTYPE, metadata and namespace declarations (no URL of any kind remains)
and prefixes every element id so that several plots can live in one document. Text is kept
as ``<text>`` (``svg.fonttype = none``): searchable, small, and printed crisply.

Large matrices (heatmaps) are drawn as one embedded raster image inside the SVG so that a
256 x 256 matrix stays a few hundred kB.
"""

from __future__ import annotations

import functools
import io
import itertools
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from aibench.reports import i18n
from aibench.reports.i18n import _

_counter = itertools.count(1)


def restart_ids() -> None:
    """Number the plots of a new report from 1 again: the ids of its SVG elements (``p1-``)
    then depend on the report alone, so the same run renders to the same bytes in any
    process (and a signed run re-rendered keeps its signature)."""
    global _counter
    _counter = itertools.count(1)


BAD = "#c0392b"
OK = "#2e6da4"
BOUND = "#444444"
# Sequential, luminance falling from high to low values: a slow link is dark red and reads
# as dark in greyscale too (RdYlGn would not: its red and green ends are equally dark).
HEAT_CMAP = "YlOrRd_r"
# Lines of one chart differ by dash pattern and marker as well as by colour.
_MARKERS = ("o", "s", "^", "v", "D", "P", "*", "<", ">", "h")
_DASHES = ("-", "--", ":", "-.")


def line_styles(n: int) -> list[tuple[str, str]]:
    """``n`` (linestyle, marker) pairs, distinct for up to 40 lines."""
    m, d = len(_MARKERS), len(_DASHES)
    return [(_DASHES[(i + i // m) % d], _MARKERS[i % m]) for i in range(n)]


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    matplotlib.rcParams.update(
        {
            "svg.fonttype": "none",
            "svg.hashsalt": "aibench",
            "font.size": 9,
            "axes.grid": True,
            "grid.alpha": 0.3,
            "axes.spines.top": False,
            "axes.spines.right": False,
            "font.family": ["DejaVu Sans", *_cjk_fallback()]
            if i18n.current_lang() == "zh"
            else ["DejaVu Sans"],
        }
    )
    return plt


CJK_FAMILIES = ("Noto Sans CJK SC", "Source Han Sans SC", "WenQuanYi Zen Hei", "Noto Sans CJK JP")


@functools.cache
def _cjk_fallback() -> tuple[str, ...]:
    """The first CJK family matplotlib knows (Debian: fonts-noto-cjk), for measuring and
    naming Chinese text in the SVG; none when no such font is installed (the browser then
    picks its own fallback for the glyphs)."""
    from matplotlib import font_manager

    known = {f.name for f in font_manager.fontManager.ttflist}
    return tuple(name for name in CJK_FAMILIES if name in known)[:1]


_PROLOG = re.compile(r"^.*?(?=<svg\b)", re.S)
_METADATA = re.compile(r"<metadata>.*?</metadata>\s*", re.S)
_XMLNS = re.compile(r'\s+xmlns(?::\w+)?="[^"]*"')
_TEXT = re.compile(r">([^<]+)<")
_IDS = re.compile(r'(\bid="|xlink:href="#|href="#|url\(#)([^")]+)')


def svg_text(fig: Any) -> str:
    """Serialize a figure to SVG fit for inlining in HTML, then close it."""
    plt = _plt()
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight")
    plt.close(fig)
    text = _PROLOG.sub("", buf.getvalue(), count=1)
    text = _METADATA.sub("", text)
    text = _XMLNS.sub("", text)
    prefix = f"p{next(_counter)}-"
    text = _IDS.sub(lambda m: m.group(1) + prefix + m.group(2), text)
    # text content may hold quotes (matplotlib escapes only &, <, > there); escape them too
    # so that no planted string looks like an attribute to anyone reading the source
    text = _TEXT.sub(
        lambda m: ">" + m.group(1).replace('"', "&quot;").replace("'", "&#39;") + "<", text
    )
    text = text.replace("<svg ", '<svg role="img" ', 1)
    return text.strip()


def _bound_lines(ax: Any, bounds: Sequence[tuple[str, float]], horizontal: bool = True) -> None:
    for i, (label, value) in enumerate(bounds):
        style = ("--", ":", "-.")[i % 3]
        if horizontal:
            ax.axhline(value, color=BOUND, linestyle=style, linewidth=1.2, label=label)
        else:
            ax.axvline(value, color=BOUND, linestyle=style, linewidth=1.2, label=label)


def sweep(
    series: Mapping[str, tuple[Sequence[float], Sequence[float]]],
    *,
    bounds: Sequence[tuple[str, float]] = (),
    band: tuple[Sequence[float], Sequence[float], Sequence[float]] | None = None,
    band_label: str = "",
    xlabel: str = "",  # default: "message size (bytes)" in the report's language
    ylabel: str = "busbw (GB/s)",
    title: str = "",
    highlight: Sequence[str] = (),
) -> str:
    """Lines over a log2 x axis (NCCL busbw vs message size), with threshold lines."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7.5, 3.6))
    if band is not None:
        xs, lo, hi = band
        ax.fill_between(xs, lo, hi, color=OK, alpha=0.15, label=band_label or _("min–max"))
    styles = line_styles(len(series))
    for (label, (xs, ys)), (dash, mark) in zip(series.items(), styles, strict=True):
        bad = label in highlight
        ax.plot(
            xs,
            ys,
            marker="X" if bad else mark,
            markersize=6 if bad else 3.5,
            linestyle="-" if bad else dash,
            linewidth=2.6 if bad else 1.3,
            color=BAD if bad else None,
            label=label + (_(" (failing)") if bad else ""),
            zorder=3 if bad else 2,
        )
    _bound_lines(ax, bounds)
    _size_axis(ax, xlabel or _("message size (bytes)"))
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    _legend_beside(ax)
    return svg_text(fig)


def _size_axis(ax: Any, xlabel: str) -> None:
    """The x axis in message sizes: log 2, a tick every factor 4, named 1K, 4M, 1G."""
    ax.set_xscale("log", base=2)
    from matplotlib.ticker import FuncFormatter, LogLocator

    ax.xaxis.set_major_locator(LogLocator(base=4))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _pos: _size(x)))
    ax.set_xlabel(xlabel)


def _legend_beside(ax: Any) -> None:
    """The legend right of the axes (two columns beyond 14 entries), when there is one."""
    handles, _labels = ax.get_legend_handles_labels()
    if handles:
        ax.legend(
            fontsize=7,
            loc="upper left",
            bbox_to_anchor=(1.01, 1.0),
            ncol=2 if len(handles) > 14 else 1,
            frameon=False,
        )


def _size(x: float) -> str:
    for unit, size in (("G", 2**30), ("M", 2**20), ("K", 2**10)):
        if x >= size:
            return f"{x / size:g}{unit}"
    return f"{x:g}"


def _write_values(ax: Any, data: Any, marked: set[tuple[int, int]]) -> None:
    """Every measured value written in its cell (white on the darker ones), a failing one
    in bold after a cross."""
    import numpy as np

    lo, hi = float(np.nanmin(data)), float(np.nanmax(data))
    for (r, c), value in np.ndenumerate(data):
        if math.isfinite(value):
            dark = hi > lo and (value - lo) / (hi - lo) < 0.45
            bad = (int(r), int(c)) in marked
            ax.text(
                c,
                r,
                f"× {value:.3g}" if bad else f"{value:.3g}",
                fontweight="bold" if bad else "normal",
                ha="center",
                va="center",
                fontsize=6,
                color="white" if dark else "black",
            )


def _mark(ax: Any, labels: Sequence[str], r: int, c: int, *, named: bool) -> None:
    """A failing cell: a cross up to 48 nodes; beyond, a ring (and its pair's names when
    ``named``), a cell being a pixel there."""
    n = len(labels)
    if n <= 48:
        # white with a black edge: seen on a dark (slow) cell and on a light one
        ax.plot(
            c,
            r,
            marker="X",
            mfc="white",
            mec="black",
            markersize=max(5, 12 - n / 8),
            mew=1.0,
            zorder=4,
        )
        return
    ax.plot(c, r, marker="o", mfc="none", mec="black", markersize=12, mew=1.8)
    ax.plot(c, r, marker="o", mfc="none", mec="white", markersize=9, mew=1.0)
    if named:
        ax.annotate(
            f"{labels[r]} ↔ {labels[c]}",
            (c, r),
            textcoords="offset points",
            xytext=(10, 8),
            fontsize=7,
            color="black",
            bbox={"boxstyle": "round,pad=0.2", "fc": "white", "ec": "black", "lw": 0.6},
        )


def _pair_axes(ax: Any, labels: Sequence[str], axis_label: str) -> None:
    """The node names along both axes of a pair matrix (at most 48 ticks each), the
    columns the second node of a pair, the rows the first."""
    n = len(labels)
    step = max(1, math.ceil(n / 48))
    ticks = list(range(0, n, step))
    fs = 7 if n <= 24 else 5
    ax.set_xticks(ticks)
    ax.set_xticklabels([labels[i] for i in ticks], rotation=90, fontsize=fs)
    ax.set_yticks(ticks)
    ax.set_yticklabels([labels[i] for i in ticks], fontsize=fs)
    ax.set_xlabel(_("{axis} (second of pair)").format(axis=axis_label))
    ax.set_ylabel(_("{axis} (first of pair)").format(axis=axis_label))


def heatmap(
    labels: Sequence[str],
    matrix: Sequence[Sequence[float]],
    *,
    unit: str,
    title: str = "",
    marks: Sequence[tuple[int, int]] = (),
    axis_label: str = "",  # default: "node" in the report's language
) -> str:
    """An N x N matrix (row = first node of the pair, column = second); NaN = not measured.

    Low values are dark red (:data:`HEAT_CMAP`: darker means lower, in colour and in
    greyscale), not measured is white; ``marks`` (failing cells) get a cross, up to 24 nodes
    a cell not measured gets a small dot and up to 12 nodes every value is written in its
    cell, so that the figure reads without colour.
    """
    import numpy as np

    plt = _plt()
    n = len(labels)
    side = min(14.0, max(4.0, 2.5 + n * 0.05))
    fig, ax = plt.subplots(figsize=(side + 1.2, side))
    data = np.array(matrix, dtype=float)
    masked = np.ma.masked_invalid(data)
    cmap = plt.get_cmap(HEAT_CMAP).with_extremes(bad="#ffffff")
    im = ax.imshow(masked, cmap=cmap, interpolation="nearest", aspect="equal", rasterized=n > 48)
    ax.grid(False)
    if n <= 24:
        rows, cols = np.nonzero(np.isnan(data))
        if len(rows):
            ax.plot(cols, rows, linestyle="none", marker=".", color="#999999", markersize=2)
    written = n <= 12 and bool(np.isfinite(data).any())
    if written:
        _write_values(ax, data, {(int(r), int(c)) for r, c in marks})
    _pair_axes(ax, labels, axis_label or _("node"))
    for k, (r, c) in enumerate(marks):
        if written and math.isfinite(data[r][c]):
            continue  # the cell says "× value"
        _mark(ax, labels, r, c, named=k < 8)
    cb = fig.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
    cb.set_label(unit)
    if title:
        ax.set_title(title)
    return svg_text(fig)


def bars(
    labels: Sequence[str],
    values: Sequence[float],
    *,
    unit: str,
    bounds: Sequence[tuple[str, float]] = (),
    bad: Sequence[str] = (),
    title: str = "",
    ylabel: str = "",
) -> str:
    """One bar per node (or run) with the bound lines; failing bars red and hatched.

    Beyond :data:`MAX_BARS` items one bar each would hide a bad node in a hairline, so the
    values are drawn sorted, worst first, with the failing ones marked and named.
    """
    if len(labels) > MAX_BARS:
        return _sorted_profile(
            labels, values, unit=unit, bounds=bounds, bad=bad, title=title, ylabel=ylabel
        )
    plt = _plt()
    n = len(labels)
    fig, ax = plt.subplots(figsize=(min(14.0, max(4.0, 1.5 + n * 0.22)), 3.4))
    badset = set(bad)
    colors = [BAD if lab in badset else OK for lab in labels]
    rects = ax.bar(range(n), values, color=colors, width=0.8, linewidth=0)
    for rect, lab in zip(rects, labels, strict=True):
        if lab in badset:
            rect.set_hatch("//")
            rect.set_edgecolor("black")
    _bound_lines(ax, bounds)
    ax.set_xticks(range(n))
    if n <= 6 and max(len(lab) for lab in labels) <= 40:
        ax.set_xticklabels(labels, fontsize=7)
    else:
        ax.set_xticklabels(labels, rotation=90, fontsize=6 if n > 16 else 7)
    ax.set_ylabel(ylabel or unit)
    ax.grid(axis="x", visible=False)
    if title:
        ax.set_title(title)
    if bounds:
        ax.legend(fontsize=7, frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return svg_text(fig)


MAX_BARS = 64
MAX_NAMED = 12


def _mark_failing(
    ax: Any, labels: Sequence[str], values: Sequence[float], order: Sequence[int], bad: set[str]
) -> None:
    """The failing nodes of a sorted profile: each a cross at its place in ``order``, the
    first MAX_NAMED named beside it."""
    marked = [(pos, i) for pos, i in enumerate(order) if labels[i] in bad]
    if marked:
        ax.plot(
            [p for p, _i in marked],
            [values[i] for _p, i in marked],
            "X",
            color=BAD,
            markersize=7,
            markeredgecolor="black",
            label=_("FAIL or WARN ({n})").format(n=len(marked)),
        )
    for k, (pos, i) in enumerate(marked[:MAX_NAMED]):
        ax.annotate(
            labels[i],
            (pos, values[i]),
            textcoords="offset points",
            xytext=(8, -10 - 9 * k),
            fontsize=7,
            color=BAD,
            arrowprops={"arrowstyle": "-", "color": BAD, "linewidth": 0.6},
        )


def _sorted_profile(
    labels: Sequence[str],
    values: Sequence[float],
    *,
    unit: str,
    bounds: Sequence[tuple[str, float]],
    bad: Sequence[str],
    title: str,
    ylabel: str,
) -> str:
    plt = _plt()
    n = len(labels)
    order = sorted(range(n), key=lambda i: values[i])
    ys = [values[i] for i in order]
    fig, ax = plt.subplots(figsize=(10.0, 3.6))
    ax.plot(
        range(n),
        ys,
        color=OK,
        linewidth=1.5,
        drawstyle="steps-mid",
        label=_("{n} nodes, sorted").format(n=n),
    )
    _mark_failing(ax, labels, values, order, set(bad))
    _bound_lines(ax, bounds)
    lo = min(min(ys), *(b for _lab, b in bounds)) if bounds else min(ys)
    hi = max(max(ys), *(b for _lab, b in bounds)) if bounds else max(ys)
    pad = (hi - lo) * 0.08 or abs(hi) * 0.05 or 1.0
    ax.set_ylim(lo - pad, hi + pad)
    ax.set_xlim(-1, n)
    ax.set_xlabel(_("nodes sorted by value, worst first (the y axis does not start at 0)"))
    ax.set_ylabel(ylabel or unit)
    if title:
        ax.set_title(title)
    ax.legend(fontsize=7, frameon=False, loc="lower right")
    return svg_text(fig)


def check_bars(
    rows: Sequence[tuple[str, float, tuple[float | None, float | None], bool]],
    *,
    unit: str,
) -> str:
    """One horizontal bar per check (name, observed, (lower, upper), failing)."""
    plt = _plt()
    n = len(rows)
    fig, ax = plt.subplots(figsize=(7.5, 0.9 + 0.32 * n))
    ys = list(range(n))[::-1]
    for y, (_name, val, (lo, hi), bad) in zip(ys, rows, strict=True):
        ax.barh(
            y,
            val,
            color=BAD if bad else OK,
            hatch="//" if bad else "",
            height=0.6,
            edgecolor="black" if bad else OK,
        )
        for b in (lo, hi):
            if b is not None:
                ax.plot([b, b], [y - 0.42, y + 0.42], color="black", linewidth=2.2)
    ax.set_yticks(ys)
    ax.set_yticklabels([r[0] for r in rows], fontsize=7)
    ax.set_xlabel(unit)
    ax.grid(axis="y", visible=False)
    return svg_text(fig)


def trend(
    series: Mapping[str, tuple[Sequence[str], Sequence[float]]],
    *,
    ylabel: str,
    title: str = "",
    bounds: Sequence[tuple[str, float]] = (),
) -> str:
    """History: one line per series over the runs (x = run label, oldest first)."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7.5, 3.2))
    xs_all: list[str] = []
    for xs, _ys in series.values():
        for x in xs:
            if x not in xs_all:
                xs_all.append(x)
    xs_all.sort()
    pos = {x: i for i, x in enumerate(xs_all)}
    for (label, (xs, ys)), (dash, mark) in zip(
        series.items(), line_styles(len(series)), strict=True
    ):
        ax.plot([pos[x] for x in xs], ys, marker=mark, markersize=3.5, linestyle=dash, label=label)
    _bound_lines(ax, bounds)
    ax.set_xticks(range(len(xs_all)))
    ax.set_xticklabels(xs_all, rotation=45, ha="right", fontsize=6)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    ax.legend(fontsize=7, frameon=False)
    return svg_text(fig)
