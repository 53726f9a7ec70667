"""The console tables GuideLLM (0.2.x and later) prints after a run: ``Benchmarks Info:``
(requests made per benchmark: completed, incomplete, errored) and ``Benchmarks Stats:``
(rates and latencies). Each is ``|``-separated with two header lines: the groups (``Req
Latency (ms)||| TTFT (ms) |||``: a group spans as many columns as it has ``|``) and the
statistics under them (``mean| median| p99``); a row per benchmark (``synchronous``,
``throughput``, ``constant@0.69``, ``poisson@2.00``, ``concurrent@8``).

Units. GuideLLM 0.2.x labels the request latency ``Req Latency (ms)`` but prints it in
seconds (``4.36`` beside a 59.8 ms TTFT). A request's latency is never below its time to
first token, so the unit is decided by the values: when every row's latency reads below
its TTFT as milliseconds, the column holds seconds, and a Note says so.
"""

from __future__ import annotations

import re

from aibench.errors import ParseError
from aibench.model import FrozenDims, Measurement, Note
from aibench.parsers._util import cell_number

TOOL = "guidellm"
Record = Measurement | Note
_STATS = {"mean": "mean", "median": "p50", "p50": "p50", "p90": "p90", "p99": "p99"}
# group (lower case, unit cut) -> (metric, unit)
_GROUPS = {
    "ttft": ("ttft", "ms"),
    "itl": ("itl", "ms"),
    "tpot": ("tpot", "ms"),
    "req latency": ("e2e_latency", "s"),
}
_STRATEGY = re.compile(r"^(\w+)(?:@([0-9.]+))?$")


def _table(
    lines: list[str], title: str
) -> tuple[list[tuple[str, str]], list[tuple[int, list[str]]]]:
    """((group, stat) per column, (line, cells) per row) of the table under ``title``."""
    at = next((i for i, ln in enumerate(lines) if ln.strip() == title), None)
    if at is None:
        return [], []
    heads = [ln for ln in lines[at + 1 : at + 6] if "|" in ln][:2]
    if len(heads) < 2:
        raise ParseError(TOOL, f"'{title}' has no two header lines", at + 1)
    groups, stats = heads[0].split("|"), [c.strip().lower() for c in heads[1].split("|")]
    cols, current = [], ""
    for i, stat in enumerate(stats):
        name = groups[i].strip() if i < len(groups) else ""
        current = name or current
        cols.append((current.lower(), stat))
    rows: list[tuple[int, list[str]]] = []
    body = False  # the rows start under the "----|----" line
    for n in range(at + 1, len(lines)):
        line = lines[n]
        if line.startswith("=") and rows:
            break
        body = body or line.startswith("-")
        cells = [c.strip() for c in line.split("|")]
        if body and len(cells) == len(cols) and _STRATEGY.match(cells[0]):
            rows.append((n + 1, cells))
    return cols, rows


def _dims(name: str) -> dict[str, str | int | float]:
    m = _STRATEGY.match(name)
    assert m is not None
    load, arg = m.group(1), m.group(2)
    dims: dict[str, str | int | float] = {"load": load}
    if arg is not None:
        dims["concurrency" if load == "concurrent" else "rate"] = (
            int(float(arg)) if load == "concurrent" else float(arg)
        )
    return dims


def _stats(cols: list[tuple[str, str]], rows: list[tuple[int, list[str]]]) -> list[Record]:
    out: list[Record] = []
    seconds = _latency_in_seconds(cols, rows)
    for n, cells in rows:
        dims = _dims(cells[0])
        for (group, stat), cell in zip(cols, cells, strict=True):
            base = re.sub(r"\s*\(.*\)$", "", group)
            value: float | None = None
            if base == "request stats" and stat == "per second":
                metric, unit, value = "request_throughput", "queries/s", cell_number(TOOL, cell, n)
            elif base == "out tok/sec" and stat == "mean":
                metric, unit = "output_token_throughput", "tokens/s"
                value = cell_number(TOOL, cell, n)
            elif base in _GROUPS and stat in _STATS:
                metric, unit = _GROUPS[base]
                value = cell_number(TOOL, cell, n)
                if base == "req latency" and not seconds and "(ms)" in group:
                    value /= 1000.0
                out.append(
                    Measurement(
                        TOOL, metric, value, unit, FrozenDims({**dims, "stat": _STATS[stat]})
                    )
                )
                continue
            if value is not None:
                out.append(Measurement(TOOL, metric, value, unit, FrozenDims(dims)))
    if seconds:
        out.append(
            Note(
                TOOL,
                "'Req Latency (ms)' holds seconds (every latency is below its "
                "TTFT as milliseconds, which cannot be): read as seconds",
                "warning",
            )
        )
    return out


def _latency_in_seconds(cols: list[tuple[str, str]], rows: list[tuple[int, list[str]]]) -> bool:
    try:
        lat = cols.index(("req latency (ms)", "mean"))
        ttft = cols.index(("ttft (ms)", "mean"))
    except ValueError:
        return False
    return bool(rows) and all(
        cell_number(TOOL, cells[lat], n) < cell_number(TOOL, cells[ttft], n) for n, cells in rows
    )


def _info(cols: list[tuple[str, str]], rows: list[tuple[int, list[str]]]) -> list[Record]:
    out: list[Record] = []
    for n, cells in rows:
        dims = _dims(cells[0])
        made = {
            s: cell_number(TOOL, c, n)
            for (g, s), c in zip(cols, cells, strict=True)
            if g == "requests made"
        }
        if not made:
            continue
        total = sum(made.values())
        out.append(Measurement(TOOL, "requests", total, "count", FrozenDims(dims)))
        err = made.get("err", 0.0)
        out.append(
            Measurement(
                TOOL, "error_rate", 100.0 * err / total if total else 0.0, "%", FrozenDims(dims)
            )
        )
        for kind, key in (("errored", "err"), ("incomplete", "inc")):
            if made.get(key):
                out.append(
                    Measurement(
                        TOOL, "errors", made[key], "count", FrozenDims({**dims, "kind": kind})
                    )
                )
    return out


def parse_console(text: str) -> list[Record]:
    lines = text.splitlines()
    cols, rows = _table(lines, "Benchmarks Stats:")
    if not rows:
        raise ParseError(TOOL, "no 'Benchmarks Stats:' table with a benchmark row", None)
    return _stats(cols, rows) + _info(*_table(lines, "Benchmarks Info:"))


def detect_console(text: str) -> bool:
    return "Benchmarks Stats:" in text and "TTFT (ms)" in text
