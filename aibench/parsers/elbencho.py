"""elbencho: the distributed file-system, block-device and S3 benchmark.

Reads elbencho's results table (stdout, and the same table in its ``--resfile``)::

    OPERATION   RESULT TYPE         FIRST DONE   LAST DONE
    =========== ================    ==========   =========
    WRITE       Elapsed time     :    2m3.241s    2m5.755s
                IOPS             :       33395       33352
                Throughput MiB/s :       33395       33352
                Total MiB        :     4115703     4194304
    ---

Two layouts: 1.x prints ``Elapsed ms`` (an integer) and ``IO latency us : [ min=91 avg=120
max=1583 ]``; 2.x and later print ``Elapsed time`` as ``2m3.241s``/``82ms`` and wider
columns. Tested on elbencho's own published sessions and documentation (breuner/elbencho:
a 1.x storage sweep of many phases, a 3.x result example) and a 1.8 block-device run.

Emitted per phase (dim ``op``: write, read, mkdirs, rmfiles, stat, dropcache, sync ...)
and per column (dim ``done`` = first | last: until the first or the last thread finished
its share): ``elapsed`` (s), ``iops``, ``throughput`` (MiB/s), ``io_total`` (MiB),
``ops_rate`` (per second, dim ``item`` = files | dirs | objects | buckets | entries) and
``items`` (count, same dim; 1.x ``Total files``, later ``Files total``); ``latency`` (us,
dims ``kind`` = io | file | entry ... and ``stat`` = min | mean | max, no ``done``). Rows
of other kinds are not read. Several tables in one output (a sweep) are numbered with the
dim ``run``; a phase that comes again in one table (elbencho's ``DROPCACHE`` between
phases) has the dim ``pass`` (2, 3 ...) from its second time.

Failures: ``ERROR:`` lines are a ToolFailure carrying the records; an output without a
table is a ParseError.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from aibench.errors import ParseError, ToolFailure
from aibench.model import FrozenDims, Measurement, Scalar
from aibench.parsers import Parser
from aibench.parsers._elbencho_cells import elapsed_s, latency_us
from aibench.parsers._util import cell_number

TOOL = "elbencho"
_HEAD = re.compile(r"^OPERATION\s+RESULT TYPE\s+FIRST DONE\s+LAST DONE\s*$")
_ROW = re.compile(r"^([A-Z][A-Z0-9_]*)?\s+([A-Za-z][A-Za-z0-9/% ]*?)\s*:\s*(.+?)\s*$")
_LATENCY_NAME = re.compile(r"^([A-Za-z]+) latency(?: us)?$")
_PER_SEC = re.compile(r"^(Files|Dirs|Objects|Buckets|Entries)/s$")
_TOTAL = re.compile(
    r"^(?:(Files|Dirs|Objects|Buckets|Entries) total|Total (files|dirs|objects|buckets|entries))$"
)
_SIMPLE = {"IOPS": ("iops", "IOPS"), "Throughput MiB/s": ("throughput", "MiB/s")}
_SIMPLE |= {"Total MiB": ("io_total", "MiB")}


@dataclass
class _State:
    run: int = 0
    op: str = ""
    seen: dict[str, int] = field(default_factory=dict)  # phases of each op in this table
    in_table: bool = False
    records: list[Measurement] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def parse(text: str) -> list[Measurement]:
    st = _State()
    for n, raw in enumerate(text.splitlines(), 1):
        _line(st, raw.rstrip(), n)
    out = st.records
    if st.run == 1:
        out = [replace(r, dims=FrozenDims({k: v for k, v in r.dims.items() if k != "run"}))
               for r in out]  # fmt: skip
    if st.problems:
        raise ToolFailure(TOOL, "; ".join(st.problems), partial=list(out))
    if not out:
        raise ParseError(TOOL, "no results table ('OPERATION RESULT TYPE FIRST DONE LAST DONE')")
    return out


def _line(st: _State, line: str, n: int) -> None:
    if line.startswith("ERROR"):
        st.problems.append(line.strip())
    elif _HEAD.match(line):
        st.run, st.in_table, st.op, st.seen = st.run + 1, True, "", {}
    elif not st.in_table or line.startswith("=") or line.strip() == "---":
        return
    elif m := _ROW.match(line):
        if m.group(1):
            st.op = m.group(1).lower()
            st.seen[st.op] = st.seen.get(st.op, 0) + 1
        elif not st.op:
            raise ParseError(TOOL, "a result row before any operation", line=n)
        st.records += _row(st, m.group(2).strip(), m.group(3), n)
    else:
        st.in_table = False  # the table ended (a sweep's own lines follow)


def _row(st: _State, name: str, cells: str, n: int) -> list[Measurement]:
    base: dict[str, Scalar] = {"op": st.op, "run": st.run}
    if st.seen.get(st.op, 1) > 1:
        base["pass"] = st.seen[st.op]
    if m := _LATENCY_NAME.match(name):
        base["kind"] = m.group(1).lower()
        return [
            Measurement(TOOL, "latency", v, "us", FrozenDims({**base, "stat": s}))
            for s, v in latency_us(cells, name.endswith(" us"), n)
        ]
    values = cells.split()
    if len(values) != 2:
        raise ParseError(TOOL, f"{name}: {len(values)} values, the table has 2 columns", line=n)
    metric, unit = _metric(name, base)
    if not metric:
        return []
    out = []
    for done, cell in zip(("first", "last"), values, strict=True):
        if metric == "elapsed":
            value = elapsed_s(cell, name == "Elapsed ms", n)
        else:
            value = cell_number(TOOL, cell, n)
        out.append(Measurement(TOOL, metric, value, unit, FrozenDims({**base, "done": done})))
    return out


def _metric(name: str, base: dict[str, Scalar]) -> tuple[str, str]:
    """The metric and unit of a row; ``base`` gains the row's ``item`` dim."""
    if name in ("Elapsed ms", "Elapsed time"):
        return "elapsed", "s"
    if name in _SIMPLE:
        return _SIMPLE[name]
    if m := _PER_SEC.match(name):
        base["item"] = m.group(1).lower()
        return "ops_rate", "ops/s"
    if m := _TOTAL.match(name):
        base["item"] = (m.group(1) or m.group(2)).lower()
        return "items", "count"
    return "", ""


def detect(text: str) -> bool:
    return (
        re.search(r"^OPERATION\s+RESULT TYPE\s+FIRST DONE\s+LAST DONE", text[:20000], re.M)
        is not None
    )


PARSER = Parser(TOOL, parse, "elbencho: throughput, IOPS, rates and latency per phase", detect)
