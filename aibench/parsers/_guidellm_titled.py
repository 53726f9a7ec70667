"""The console tables of GuideLLM 0.4 and later: ``ℹ <Title>`` over a table framed by
``|===|`` lines, with three header lines (the group: ``Request Latency``, ``TTFT``; its
unit or kind: ``Sec``, ``ms``, ``Per Sec``; the statistic: ``Mdn``, ``p95``, ``Mean``), a
``|---|`` line and a row per benchmark (the strategy alone: ``constant``, ``synchronous``,
the rate is not printed). A group spans as many columns as it has ``|`` after its name.

Read: ``Request Latency Statistics`` (``e2e_latency`` in the unit printed, ``ttft``,
``itl``, ``tpot``, each with dim ``stat`` = p50 (Mdn) | p95 | mean | p99) and ``Server
Throughput Statistics`` (``request_throughput`` queries/s and ``output_token_throughput``
tokens/s: the Mean column, as the JSON's). Dims ``load`` (the strategy) and ``benchmark``
(the row's place, from 0: the same in every table, and two ``constant`` rows differ only
by it). The other tables (token counts, text sizes, timings) are not read.
"""

from __future__ import annotations

import re

from aibench.errors import ParseError
from aibench.model import FrozenDims, Measurement
from aibench.parsers._util import cell_number

TOOL = "guidellm"
_TITLE = re.compile(r"^\s*ℹ\s+(?P<title>.+?)\s*$")
_STATS = {"mdn": "p50", "median": "p50", "mean": "mean", "p50": "p50", "p90": "p90",
          "p95": "p95", "p99": "p99"}  # fmt: skip
_UNITS = {"sec": "s", "ms": "ms"}
_LATENCY = {"request latency": "e2e_latency", "ttft": "ttft", "itl": "itl", "tpot": "tpot"}
_RATES = {
    ("requests", "per sec"): ("request_throughput", "queries/s"),
    ("output tokens", "per sec"): ("output_token_throughput", "tokens/s"),
}
Column = tuple[str, str, str]  # group, unit or kind, statistic (lower case)


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _spanned(line: str, width: int) -> list[str]:
    """A header line's names, each repeated over the columns its group spans."""
    out: list[str] = []
    for cell in _cells(line):
        out.append(cell.lower() or (out[-1] if out else ""))
    return (out + [out[-1] if out else ""] * width)[:width]


def table(lines: list[str], title: str) -> tuple[list[Column], list[tuple[int, list[str]]]]:
    """(columns, (line number, cells) per row) of the first table under ``ℹ <title>``
    (a title GuideLLM may end with a qualifier: ``Server Throughput Statistics (All
    Requests)``)."""
    at = next(
        (
            i
            for i, ln in enumerate(lines)
            if (m := _TITLE.match(ln)) and m["title"].startswith(title)
        ),
        None,
    )
    if at is None:
        return [], []
    heads: list[str] = []
    rows: list[tuple[int, list[str]]] = []
    for n in range(at + 1, len(lines)):
        s = lines[n].strip()
        if s.startswith("|==="):
            if rows:
                break
            continue
        if s.startswith("|---"):
            continue
        if not s.startswith("|"):
            break
        if len(heads) < 3:
            heads.append(s)
        else:
            rows.append((n + 1, _cells(s)))
    if len(heads) < 3:
        raise ParseError(TOOL, f"'{title}' has no three header lines", at + 1)
    width = len(_cells(heads[2]))
    groups, kinds = _spanned(heads[0], width), _spanned(heads[1], width)
    stats = [c.lower() for c in _cells(heads[2])]
    cols = list(zip(groups, kinds, stats, strict=True))
    for n, cells in rows:
        if len(cells) != width:
            raise ParseError(TOOL, f"'{title}': {len(cells)} cells for {width} columns", n)
    return cols, rows


def _record(col: Column, cell: str, n: int, dims: dict[str, str | int]) -> Measurement | None:
    group, kind, stat = col
    if group in _LATENCY and stat in _STATS and kind in _UNITS:
        d = FrozenDims({**dims, "stat": _STATS[stat]})
        return Measurement(TOOL, _LATENCY[group], cell_number(TOOL, cell, n), _UNITS[kind], d)
    if (group, kind) in _RATES and stat == "mean":
        metric, unit = _RATES[(group, kind)]
        return Measurement(TOOL, metric, cell_number(TOOL, cell, n), unit, FrozenDims(dims))
    return None


def parse_titled(text: str) -> list[Measurement]:
    lines = text.splitlines()
    out: list[Measurement] = []
    for title in ("Request Latency Statistics", "Server Throughput Statistics"):
        cols, rows = table(lines, title)
        for place, (n, cells) in enumerate(rows):
            dims: dict[str, str | int] = {"load": cells[0], "benchmark": place}
            for col, cell in zip(cols[1:], cells[1:], strict=True):
                rec = _record(col, cell, n, dims)
                if rec is not None:
                    out.append(rec)
    if not out:
        raise ParseError(
            TOOL,
            "no 'ℹ Request Latency Statistics' or 'ℹ Server Throughput Statistics' table "
            "with a benchmark row (GuideLLM 0.4+ console)",
        )
    return out


def detect_titled(text: str) -> bool:
    return any(
        m is not None and m["title"].startswith(("Request Latency Statistics", "Server Throughput"))
        for m in map(_TITLE.match, text.splitlines())
    )
