"""The console table AIPerf (and GenAI-Perf, its predecessor) prints at the end of a run:
``NVIDIA AIPerf | LLM Metrics`` (``NVIDIA GenAI-Perf | LLM Metrics``), a box table with a
row per metric and a column per statistic (avg, min, max, p99, p90, p50 or p75, std).

Numbers carry thousands separators (``37,719.87``); a metric name too long for its
column runs on in the rows under it, whose statistic cells are empty; ``N/A`` and ``-``
cells are statistics the tool does not give. A cell cut with ``…`` (a terminal too
narrow) cannot be read: a ParseError that says to widen the terminal or read the JSON
export. The run's settings are not in the table: the artifact directory the tool names
after it (``...-openai-chat-concurrency10/``) gives ``api`` and ``concurrency``, and the
``CLI Command:`` line AIPerf prints gives ``streaming``.
"""

from __future__ import annotations

import re

from aibench.errors import ParseError
from aibench.model import FrozenDims, Measurement

TOOL = "aiperf"
TITLE = re.compile(r"NVIDIA (?:AIPerf|GenAI-Perf) \| LLM Metrics")
# metric name (lower case, spaces collapsed) -> (metric, unit, stat or None for per-stat)
_ROWS: dict[str, tuple[str, str, str | None]] = {
    "time to first token (ms)": ("ttft", "ms", None),
    "inter token latency (ms)": ("itl", "ms", None),
    "request latency (ms)": ("e2e_latency", "ms", None),
    "output token throughput (tokens/sec)": ("output_token_throughput", "tokens/s", "avg"),
    "output token throughput (per sec)": ("output_token_throughput", "tokens/s", "avg"),
    "request throughput (requests/sec)": ("request_throughput", "queries/s", "avg"),
    "request throughput (per sec)": ("request_throughput", "queries/s", "avg"),
    "request throughput (req/s)": ("request_throughput", "queries/s", "avg"),
    "request count (requests)": ("requests", "count", "avg"),
    "request count (count)": ("requests", "count", "avg"),
}
_STATS = {"avg": "mean", "p50": "p50", "p90": "p90", "p99": "p99"}
_ARTIFACTS = re.compile(r"-openai-(\w+?)-concurrency(\d+)\b")


def _cells(line: str) -> list[str]:
    return [c.strip() for c in re.split(r"[│┃]", line.strip())[1:-1]]


def _rows(lines: list[str], start: int) -> tuple[list[str], list[tuple[str, list[str], int]]]:
    """The statistic names and the (metric name, cells, line) rows of the table whose
    title is at ``start``, continuation rows folded into the name above them."""
    stats: list[str] = []
    rows: list[tuple[str, list[str], int]] = []
    for n in range(start + 1, len(lines)):
        line = lines[n].strip()
        if line.startswith("┃") and not stats:
            stats = [c.lower() for c in _cells(line)[1:]]
        elif line.startswith("│"):
            cells = _cells(line)
            if not cells:
                raise ParseError(TOOL, "a table row without its cells: the output was cut", n + 1)
            if rows and not any(cells[1:]):
                name, values, at = rows[-1]
                rows[-1] = (f"{name} {cells[0]}", values, at)
            else:
                rows.append((cells[0], cells[1:], n + 1))
        elif line.startswith("└"):
            return stats, rows
    raise ParseError(TOOL, "the metrics table has no closing line: the output was cut", None)


def _number(cell: str, line: int) -> float | None:
    if cell in ("N/A", "-", ""):
        return None
    if "…" in cell:
        raise ParseError(
            TOOL,
            f"a cell cut by a narrow terminal ({cell!r}): widen it, or read the JSON export",
            line,
        )
    try:
        return float(cell.replace(",", ""))
    except ValueError:
        raise ParseError(TOOL, f"not a number: {cell!r}", line) from None


def parse_console(text: str) -> list[Measurement]:
    lines = text.splitlines()
    start = next((i for i, ln in enumerate(lines) if TITLE.search(ln)), None)
    if start is None:
        raise ParseError(TOOL, "no 'NVIDIA AIPerf | LLM Metrics' table", None)
    stats, rows = _rows(lines, start)
    dims = _dims(text)
    out: list[Measurement] = []
    for name, cells, n in rows:
        spec = _ROWS.get(re.sub(r"\s+", " ", name).lower())
        if spec is None:
            continue  # sequence lengths, per-user throughput, goodput ...: not read
        metric, unit, only = spec
        for stat, cell in zip(stats, cells, strict=False):
            if stat not in _STATS or (only is not None and stat != only):
                continue
            value = _number(cell, n)
            if value is None:
                continue
            extra = {} if only else {"stat": _STATS[stat]}
            out.append(Measurement(TOOL, metric, value, unit, FrozenDims({**dims, **extra})))
    if not out:
        raise ParseError(TOOL, "the metrics table has no row this reader knows", start + 1)
    return out


def _dims(text: str) -> dict[str, str | int | bool]:
    dims: dict[str, str | int | bool] = {}
    art = _ARTIFACTS.search(text)
    if art:
        dims.update(api=art.group(1), load="concurrency", concurrency=int(art.group(2)))
    if "CLI Command:" in text:
        dims["streaming"] = "--streaming" in text.split("CLI Command:", 1)[1][:2000]
    return dims


def detect_console(text: str) -> bool:
    return TITLE.search(text[:20000]) is not None and "┃" in text[:20000]
