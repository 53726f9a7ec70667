"""The report reads the same without colour: every coloured mark also says it in text or shape.

HTML: each element whose class colours an outcome or an odd value carries the outcome's
symbol and word, or a ≠ / ✖ marker. Plots: the heatmap's colour map gets darker as values
get lower (so greyscale keeps the order), failing cells are crossed and small matrices
write their values; lines of a chart differ by dash and marker; failing bars are hatched.
"""

from __future__ import annotations

import itertools
import math
import re

import pytest

from aibench.model import Outcome
from aibench.reports import context, plots

OUTCOME_CLASS = re.compile(r'<(\w+)[^>]*\bclass="[^"]*\bt-([A-Z]+)\b[^"]*"[^>]*>(.*?)</\1>', re.S)


def _text(fragment: str) -> str:
    return re.sub(r"<[^>]+>", "", fragment)


def test_outcome_colours_come_with_the_symbol_and_the_word(rendered) -> None:
    html = rendered.html
    found = OUTCOME_CLASS.findall(html)
    assert len(found) >= len(rendered.gen.run.verdicts)
    for _tag, outcome, inner in found:
        text = _text(inner)
        assert outcome in text, inner
        assert context.SYMBOL[Outcome(outcome)] in text, inner
    # the banner and the counts
    banner = html.split('id="signoff"')[0]
    assert re.search(r'class="big"><span class="sym" aria-hidden="true">✖</span> FAIL<', banner)
    for o in Outcome:
        assert re.search(rf"{re.escape(context.SYMBOL[o])}</span> {o.value} <b>\d+</b>", banner)


def test_highlighted_cells_carry_a_marker(rendered) -> None:
    html = rendered.html
    cells = re.findall(r'<td class="(diff|flag)">(.*?)</td>', html, re.S)
    assert cells
    for _cls, inner in cells:
        assert _text(inner).lstrip()[:1] in ("≠", "✖", "?"), inner
    for row in re.findall(r'<tr class="diff">(.*?)</tr>', html, re.S):
        assert "≠" in _text(row)
    for row in re.findall(r'<tr id="step-\d+" class="bad">(.*?)</tr>', html, re.S):
        assert "✖" in _text(row)


def _luminance(rgb: tuple[float, ...]) -> float:
    def lin(c: float) -> float:
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (lin(c) for c in rgb[:3])
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def test_heatmap_colours_get_darker_as_values_get_lower() -> None:
    import matplotlib

    cmap = matplotlib.colormaps[plots.HEAT_CMAP]
    lum = [_luminance(cmap(x / 20)) for x in range(21)]
    assert all(a < b for a, b in itertools.pairwise(lum)), lum
    assert lum[0] < 0.1  # the slowest is nearly black in greyscale
    assert lum[-1] > 0.8


def test_small_heatmap_writes_values_and_crosses_the_failing_cell() -> None:
    n = 6
    labels = [f"n{i}" for i in range(n)]
    m = [[math.nan] * n for _ in range(n)]
    for i in range(n):
        m[i][(i + 1) % n] = 94.0
    m[1][2] = 31.5
    svg = plots.heatmap(labels, m, unit="Gbit/s", marks=[(1, 2)])
    assert ">× 31.5<" in svg
    assert svg.count(">94<") == n - 1


def test_large_heatmap_rings_and_names_the_failing_cell() -> None:
    n = 60
    labels = [f"n{i:02d}" for i in range(n)]
    m = [[90.0] * n for _ in range(n)]
    m[7][41] = 10.0
    svg = plots.heatmap(labels, m, unit="Gbit/s", marks=[(7, 41)])
    assert "n07 ↔ n41" in svg


def test_lines_differ_by_dash_and_marker() -> None:
    styles = plots.line_styles(40)
    assert len(set(styles)) == 40
    svg = plots.sweep(
        {f"p{i}": ([1024.0, 4096.0, 16384.0], [1.0 + i, 2.0 + i, 3.0 + i]) for i in range(6)},
        highlight=["p5"],
    )
    dashes = set(re.findall(r"stroke-dasharray: ([\d.,\s]+)", svg))
    assert len(dashes) >= 3  # dashed, dotted, dash-dot beside the solid lines
    assert "p5 (failing)" in svg


@pytest.mark.parametrize("n", [8, 80])
def test_failing_bars_are_marked_by_shape(n: int) -> None:
    labels = [f"n{i:03d}" for i in range(n)]
    values = [100.0] * n
    values[3] = 40.0
    svg = plots.bars(labels, values, unit="GB/s", bad=["n003"])
    if n <= plots.MAX_BARS:
        assert "<pattern" in svg  # the hatch
    else:
        assert "FAIL or WARN (1)" in svg
        assert ">n003<" in svg
