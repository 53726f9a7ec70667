"""redis-benchmark: the ``--csv`` output of ``redis-benchmark -t set,get ... --csv``, and
its text reports (the default 6.2+ ``Summary:`` tables, the older per-test text, ``-q``;
see :mod:`aibench.parsers._redis_text`).

Redis 7 (tested with redis-benchmark 7.0.15, Debian 12, captured here) prints a header
``"test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms",
"p99_latency_ms","max_latency_ms"`` and one row per test (``"SET","5878.90",...``);
before 6.2 it printed rows of two cells (test, rps) and no header: both are read.
``--precision N`` sets the latency decimals.

Emitted per test (dim ``op``: the test's name in lower case, ``set``, ``get``, ``lpush``
...): ``ops_rate`` (ops/s, the ``rps`` column) and ``latency`` (ms, dim ``stat`` = mean |
min | p50 | p95 | p99 | max) where the header names them. The 6.2+ text gives the same
(``throughput summary`` and the ``latency summary (msec)`` table); ``-q`` gives
``ops_rate`` and, from 6.2, the p50; the older text ``ops_rate`` only. Text tested on
7.0.15 (default and ``-q``, captured here, progress lines and all) and public logs of a
7.x default report and a pre-6.2 ``-q`` run.

Failures: ``Error: ...`` (``Error: Server closed the connection`` when the server went
away mid-run) or ``Could not connect to Redis at ...`` is a ToolFailure with the rows read
before it as ``partial``; so is ``Node H:P replied with error:`` with the server's reply on
the next line (``NOAUTH Authentication required.`` when a password is needed: 7.0.15 takes
one only from ``-a``, and does not read ``REDISCLI_AUTH``, tested here); a header with no
row, or no result at all, is a ToolFailure too.
(A server that refuses every connection makes redis-benchmark retry for ever: the step's
timeout ends it.)
"""

from __future__ import annotations

import csv
import io
import re

from aibench.errors import ParseError, ToolFailure
from aibench.model import FrozenDims, Measurement
from aibench.parsers import Parser
from aibench.parsers._redis_text import is_text_report, parse_text

TOOL = "redis-benchmark"
UNITS = {"ops_rate": "ops/s", "latency": "ms"}
_LATENCY = {
    "avg_latency_ms": "mean",
    "min_latency_ms": "min",
    "p50_latency_ms": "p50",
    "p95_latency_ms": "p95",
    "p99_latency_ms": "p99",
    "max_latency_ms": "max",
}
_PROBLEM = re.compile(
    r"^(Error: .*|Could not connect to Redis at .*|.*Connection refused.*|NOAUTH .*|WRONGPASS .*)$"
)
_REPLIED = re.compile(r"^Node \S+ replied with error:$", re.MULTILINE)


def parse(text: str) -> list[Measurement]:
    problem = _problem(text)
    lines = text.splitlines()
    if any(line.startswith('"') for line in lines):
        out = _csv(lines)
    elif is_text_report(text):
        out = parse_text(text)
    else:
        out = []
    if problem:
        raise ToolFailure(TOOL, problem, partial=list(out))
    if not out:
        tail = " | ".join([ln.strip() for ln in lines if ln.strip()][-3:])
        raise ToolFailure(TOOL, "no result row: " + (tail[-200:] or "no output"))
    return out


def _problem(text: str) -> str:
    """redis-benchmark's own words when it failed; a ``Node ... replied with error:`` line
    is joined with the server's reply on the next line (``NOAUTH Authentication
    required.``, ``WRONGPASS ...``)."""
    lines = [ln.strip() for ln in text.splitlines()]
    for i, line in enumerate(lines):
        if _REPLIED.match(line) and i + 1 < len(lines):
            return f"{line} {lines[i + 1]}"
        if _PROBLEM.match(line):
            return line
    return ""


def _csv(lines: list[str]) -> list[Measurement]:
    out: list[Measurement] = []
    header: list[str] | None = None
    for n, line in enumerate(lines, 1):
        if not line.startswith('"'):
            continue
        cells = next(csv.reader(io.StringIO(line)))
        if cells and cells[0] == "test":
            header = cells
            continue
        out += _row(cells, header, n)
    return out


def _row(cells: list[str], header: list[str] | None, n: int) -> list[Measurement]:
    names = header or ["test", "rps"]
    if len(cells) != len(names):
        raise ParseError(TOOL, f"line {n}: {len(cells)} cells, the header has {len(names)}")
    op = cells[0].strip().lower()
    if not op:
        raise ParseError(TOOL, f"line {n}: a row without a test name")
    out = []
    for name, cell in zip(names[1:], cells[1:], strict=True):
        try:
            value = float(cell)
        except ValueError:
            raise ParseError(TOOL, f"line {n}: {name} is not a number: {cell!r}") from None
        if name == "rps":
            out.append(Measurement(TOOL, "ops_rate", value, "ops/s", FrozenDims({"op": op})))
        elif name in _LATENCY:
            dims = FrozenDims({"op": op, "stat": _LATENCY[name]})
            out.append(Measurement(TOOL, "latency", value, "ms", dims))
    return out


_TEXT_MARK = re.compile(
    r"====== .+ ======\s*$|^\s*throughput summary: \S+ requests per second$"
    r"|^[A-Z][A-Z0-9_]*(?: \([^)]*\))?: \S+ requests per second(?:, p50=\S+ msec)?$",
    re.MULTILINE,
)


def detect(text: str) -> bool:
    head = text[:4000]
    if '"test","rps"' in head or "Could not connect to Redis at" in head:
        return True
    # progress lines end in carriage returns: a result may follow one on the same line
    head = head.replace("\r", "\n")
    return _TEXT_MARK.search(head) is not None or _REPLIED.search(head) is not None


PARSER = Parser(
    TOOL, parse, "redis-benchmark (--csv, text, -q): ops/s and latency per test", detect
)
