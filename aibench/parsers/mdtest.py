"""mdtest: the metadata benchmark of the IOR suite (``mdtest -n N -d DIR ...`` under mpirun).

Reads the SUMMARY tables of mdtest's text output:

* 1.9.x: ``SUMMARY: (of N iterations)`` or ``SUMMARY rate: ...``, rows with a colon
  (``Directory creation:     661.621 ...``, ``File stat         :``);
* 3.x: ``SUMMARY rate: (of N iterations)``, rows ``File creation        :  ...``, a
  ``Nodemap:`` line in 3.3;
* 4.x: ``SUMMARY rate (in ops/sec): ...`` and, with ``-Z`` or in IO500 runs,
  ``SUMMARY time (in ops/sec): ...`` (before IOR commit dcc4e40) or ``SUMMARY time (in
  ms/op): ...`` (after it); rows without a colon; with or without ``Nodemap:``.

Tested on 1.9.3 (public logs), 3.3.0 and 4.1.0+dev (captured here) and 4.1.0+dev IO500
phases (public submissions).

Emitted per operation (dim ``op``: dir_create, dir_stat, dir_rename, dir_remove,
file_create, file_stat, file_read, file_remove, tree_create, tree_remove) and ``stat`` (max
| min | mean | stdev over the iterations): ``ops_rate`` (ops/s) from the rate table and
``time`` (s) from the time table. Whatever its heading says, the time table holds each
phase's duration in seconds (mdtest.c prints ``time_before_barrier``; the heading was
fixed to "ms/op" without changing the values), so it is read as seconds. A row that is all
zeros is an operation mdtest did not run (it prints every row of its phase list) and is
not emitted. Dims of the run: ``tasks`` and ``nodes`` (``launched with N total task(s) on
M node(s)``), ``items`` (``N tasks, M files/directories``) and ``iterations``. Several runs
appended to one log are numbered with the dim ``run``.

With ``--showRankStatistics`` (3.4 and later) each row has seven values: the per-rank
max, min and mean (``stat`` = rank_max | rank_min | rank_mean) before the per-iteration
max, min, mean and stdev.

Failures: ``ERROR:`` lines or an ``MPI_ABORT`` are a ToolFailure with the rows read before
as ``partial``; a row with another number of values is a ParseError; no SUMMARY table is a
ParseError.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace

from aibench.errors import ParseError, ToolFailure
from aibench.model import FrozenDims, Measurement
from aibench.parsers import Parser

TOOL = "mdtest"
OPS = {
    "Directory creation": "dir_create",
    "Directory stat": "dir_stat",
    "Directory rename": "dir_rename",
    "Directory removal": "dir_remove",
    "File creation": "file_create",
    "File stat": "file_stat",
    "File read": "file_read",
    "File removal": "file_remove",
    "Tree creation": "tree_create",
    "Tree removal": "tree_remove",
    "File create (stonewall)": "file_create_stonewall",
}
STATS = ("max", "min", "mean", "stdev")
_SUMMARY = re.compile(r"^SUMMARY(?: (rate|time))?(?: \(in [^)]*\))?: \(of (\d+) iterations\)")
_LAUNCHED = re.compile(r"was launched with (\d+) total task\(s\) on (\d+) node\(s\)")
_ITEMS = re.compile(r"^\d+ tasks, (\d+) (?:files/directories|files|directories)$")
_ROW = re.compile(r"^([A-Z][a-z]+ [a-z]+(?: \(stonewall\))?)\s*:?\s+(\S.*)$")
# with --showRankStatistics: per rank max, min, mean, then per iteration max, min, mean, stdev
RANK_STATS = ("rank_max", "rank_min", "rank_mean", "max", "min", "mean", "stdev")
_FAILURE = re.compile(r"^(?:ERROR|MPI_ABORT was invoked)\b.*")


@dataclass
class _State:
    run: int = 0
    dims: dict[str, int] = field(default_factory=dict)
    table: str = ""  # "rate" | "time" while inside a table
    per_rank: bool = False  # the table has the per-rank columns
    records: list[Measurement] = field(default_factory=list)
    problem: str = ""


def parse(text: str) -> list[Measurement]:
    st = _State()
    for n, raw in enumerate(text.splitlines(), 1):
        _line(st, raw.strip(), n)
    out = st.records if st.run > 1 else [_drop_run(r) for r in st.records]
    if st.problem:
        raise ToolFailure(TOOL, st.problem, partial=list(out))
    if not out:
        raise ParseError(TOOL, "no SUMMARY table ('SUMMARY rate: (of N iterations)') with a rate")
    return out


def _line(st: _State, line: str, n: int) -> None:
    if _FAILURE.match(line):
        st.problem = st.problem or line
        return
    m = _LAUNCHED.search(line)
    if m:
        st.run += 1
        st.dims = {"tasks": int(m.group(1)), "nodes": int(m.group(2))}
        return
    m = _ITEMS.match(line)
    if m:
        st.dims["items"] = int(m.group(1))
        return
    m = _SUMMARY.match(line)
    if m:
        st.table, st.per_rank = m.group(1) or "rate", False
        st.dims["iterations"] = int(m.group(2))
        st.run = max(st.run, 1)
        return
    if not st.table:
        return
    if line.startswith("Operation"):
        st.per_rank = "per Rank" in line
        return
    if not line or line.startswith("--"):
        st.table = "" if line.startswith("-- ") or not line else st.table
        return
    row = _ROW.match(line)
    if row and row.group(1) in OPS:
        cells = row.group(2).split()
        if len(cells) != (7 if st.per_rank else 4):
            raise ParseError(TOOL, f"{row.group(1)}: {len(cells)} values", line=n)
        st.records += _row(st, (row.group(1), *cells), n)


def _row(st: _State, cells: tuple[str | None, ...], n: int) -> list[Measurement]:
    """One operation's row; ``NA`` cells (the stonewall row prints only a mean) are skipped."""
    values: list[float | None] = []
    for cell in cells[1:]:
        if cell == "NA":
            values.append(None)
            continue
        try:
            value = float(cell or "")
        except ValueError:
            raise ParseError(TOOL, f"not a number: {cell!r}", line=n) from None
        if not math.isfinite(value):
            raise ParseError(TOOL, f"not a finite number: {cell!r}", line=n)
        values.append(value)
    if not any(values):
        return []
    metric, unit = ("ops_rate", "ops/s") if st.table == "rate" else ("time", "s")
    base: dict[str, str | int] = {**st.dims, "op": OPS[str(cells[0])], "run": st.run}
    names = RANK_STATS if st.per_rank else STATS
    return [
        Measurement(TOOL, metric, v, unit, FrozenDims({**base, "stat": s}))
        for s, v in zip(names, values, strict=True)
        if v is not None
    ]


def _drop_run(rec: Measurement) -> Measurement:
    return replace(rec, dims=FrozenDims({k: v for k, v in rec.dims.items() if k != "run"}))


def detect(text: str) -> bool:
    head = text[:6000]
    if re.search(r"mdtest-\S+ was launched with", head):
        return True
    return bool(
        re.search(r"^SUMMARY(?: rate)?(?: \(in [^)]*\))?: \(of \d+ iterations\)", text, re.M)
    )


PARSER = Parser(TOOL, parse, "mdtest: metadata operation rates and phase times", detect)
