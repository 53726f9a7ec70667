"""IOR: the parallel file-system bandwidth benchmark (``ior -w -r ...`` under mpirun/srun).

Reads IOR's normal text output and its JSON summary (``-O summaryFormat=JSON``):

* text of IOR 3.2 and later (``Began               : ...``, an ``Options:`` block, a
  ``Results:`` table with IOPS and latency columns, ``Summary of all tests:`` with
  Max/Min/Mean(OPs) and Stonewall columns): tested on 3.3.0 and 4.1.0+dev captured here,
  4.0.0rc1 and 4.1.0+dev (an IO500 ``ior-easy-write`` phase, which prints no summary)
  from public logs;
* text of IOR 3.0/3.1 (``Began: ...``, a ``Summary:`` block of ``key = value``, a table
  without IOPS/latency, ``Max Write: ... MiB/sec``, a summary with ``aggsize``): tested
  on 3.0.1 captured here and a public 3.0-form log;
* JSON of 3.3.0 (``Results`` a list of lists) and 4.1.0+dev (a flat list), captured here.

Emitted, dims ``op`` (write | read) plus the run's own parameters where the output
carries them: ``api`` (POSIX, MPIIO ...), ``access`` (file-per-process |
single-shared-file), ``tasks`` (int), ``block_bytes`` and ``xfer_bytes`` (int):

* per iteration (dim ``iteration``, IOR's ``iter``): ``bw`` (MiB/s), ``iops`` and
  ``latency`` (s) when the table has them, ``time`` (s, dim ``phase`` = open | wrrd |
  close | total);
* per operation of the summary: ``bw`` (MiB/s) and ``iops`` (ops/s) with dim ``stat`` =
  max | min | mean | stdev, and ``time`` (s, ``stat`` = mean).

Several tests in one run (an IOR script) add the dim ``test`` (IOR's TestID). IOR's own
``WARNING:`` lines (stonewalling, file-size checks) are Notes.

Failures: ``ERROR:``/``ior ERROR:`` lines or an ``MPI_ABORT`` are a ToolFailure with IOR's
words and the rows read before as ``partial``; an output with no result row and no
summary is a ParseError naming what was looked for.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field, replace

from aibench.errors import ParseError, ToolFailure
from aibench.model import FrozenDims, Measurement, Note
from aibench.parsers import Parser, Record
from aibench.parsers._ior_json import is_ior_json, parse_ior_json
from aibench.parsers._ior_text import RUN_DIMS, kib_bytes, run_params_line
from aibench.parsers._util import cell_number

TOOL = "ior"
OPS = ("write", "read")
# per-iteration table column -> (metric, unit, extra dims)
_ROW_COLUMNS = {
    "bw(MiB/s)": ("bw", "MiB/s", ()),
    "IOPS": ("iops", "ops/s", ()),
    "Latency(s)": ("latency", "s", ()),
    "open(s)": ("time", "s", (("phase", "open"),)),
    "wr/rd(s)": ("time", "s", (("phase", "wrrd"),)),
    "close(s)": ("time", "s", (("phase", "close"),)),
    "total(s)": ("time", "s", (("phase", "total"),)),
}
# summary column -> (metric, unit, stat)
_SUMMARY_COLUMNS = {
    "Max(MiB)": ("bw", "MiB/s", "max"),
    "Min(MiB)": ("bw", "MiB/s", "min"),
    "Mean(MiB)": ("bw", "MiB/s", "mean"),
    "Max(OPs)": ("iops", "ops/s", "max"),
    "Min(OPs)": ("iops", "ops/s", "min"),
    "Mean(OPs)": ("iops", "ops/s", "mean"),
    "Mean(s)": ("time", "s", "mean"),
}
_ROW_NEEDS = ("block(KiB)", "xfer(KiB)", "iter")
_SUMMARY_NEEDS = ("API", "#Tasks", "blksiz", "xsize", "Test#", "fPP")
_FAILURE = re.compile(r"^(?:ior ERROR|ERROR|MPI_ABORT was invoked)\b.*")
_TEST_ID = re.compile(r"^(?:TestID\s*:\s*(\d+)|Test (\d+) started:)")


@dataclass
class _State:
    test: int = 0
    params: dict[str, str | int] = field(default_factory=dict)
    row_header: list[str] | None = None
    summary_header: list[str] | None = None
    records: list[Record] = field(default_factory=list)
    tests: set[int] = field(default_factory=set)
    problem: str = ""
    notes: set[str] = field(default_factory=set)


def parse(text: str) -> list[Record]:
    if is_ior_json(text):
        return parse_ior_json(text)
    st = _State()
    for n, raw in enumerate(text.splitlines(), 1):
        _line(st, raw.rstrip(), n)
    out = _with_test_dim(st)
    if st.problem:
        raise ToolFailure(TOOL, st.problem, partial=list(out))
    if not any(isinstance(r, Measurement) for r in out):
        raise ParseError(
            TOOL, "no result row (an 'access bw(MiB/s) ...' table) and no 'Summary of all tests:'"
        )
    return out


def _line(st: _State, line: str, n: int) -> None:
    stripped = line.strip()
    if _FAILURE.match(stripped):
        st.problem = st.problem or stripped
        return
    if stripped.startswith("WARNING:") and stripped not in st.notes:
        st.notes.add(stripped)
        st.records.append(Note(TOOL, stripped, line=n))
        return
    m = _TEST_ID.match(stripped)
    if m:
        st.test = int(m.group(1) or m.group(2))
        st.tests.add(st.test)
        st.summary_header = None
        return
    key, value = run_params_line(stripped)
    if key:
        st.params[key] = value
        return
    words = stripped.split()
    if not words:
        return
    if words[0] == "access" and "bw(MiB/s)" in words:
        st.row_header = _header(words, _ROW_NEEDS, n)
    elif words[0] == "Operation" and "Max(MiB)" in words:
        st.summary_header = _header(words, _SUMMARY_NEEDS, n)
    elif words[0] in OPS and st.summary_header is not None:
        st.records += _summary_row(st, words, n)
    elif words[0] in OPS and st.row_header is not None:
        st.records += _iteration_row(st, words, n)


def _header(words: list[str], needs: tuple[str, ...], n: int) -> list[str]:
    missing = [c for c in needs if c not in words]
    if missing:
        raise ParseError(TOOL, f"table header without {', '.join(missing)}", line=n)
    return words


def _iteration_row(st: _State, words: list[str], n: int) -> list[Measurement]:
    header = st.row_header or []
    if len(words) != len(header):
        raise ParseError(TOOL, f"{len(words)} cells, the table header has {len(header)}", line=n)
    cells = dict(zip(header, words, strict=True))
    dims: dict[str, str | int] = {k: v for k, v in st.params.items() if k in RUN_DIMS}
    for dim, column in (("block_bytes", "block(KiB)"), ("xfer_bytes", "xfer(KiB)")):
        size = kib_bytes(cells[column], n)
        if dim not in dims and size is not None:
            dims[dim] = size
    dims["op"] = words[0]
    dims["test"] = st.test
    dims["iteration"] = int(cell_number(TOOL, cells["iter"], n))
    out = []
    for column, (metric, unit, extra) in _ROW_COLUMNS.items():
        if column in cells:
            value = cell_number(TOOL, cells[column], n)
            out.append(Measurement(TOOL, metric, value, unit, FrozenDims({**dims, **dict(extra)})))
    return out


def _summary_row(st: _State, words: list[str], n: int) -> list[Measurement]:
    header = st.summary_header or []
    if len(words) != len(header):
        raise ParseError(TOOL, f"{len(words)} cells, the summary header has {len(header)}", line=n)
    cells = dict(zip(header, words, strict=True))
    dims: dict[str, str | int] = {
        "op": words[0],
        "api": cells["API"],
        "tasks": int(cell_number(TOOL, cells["#Tasks"], n)),
        "block_bytes": int(cell_number(TOOL, cells["blksiz"], n)),
        "xfer_bytes": int(cell_number(TOOL, cells["xsize"], n)),
        "test": int(cell_number(TOOL, cells["Test#"], n)),
        # the row's own fPP: the parameters read last are the last test's
        "access": "file-per-process" if cells["fPP"] == "1" else "single-shared-file",
    }
    out = []
    for column, (metric, unit, stat) in _SUMMARY_COLUMNS.items():
        if column in cells:
            value = cell_number(TOOL, cells[column], n)
            out.append(Measurement(TOOL, metric, value, unit, FrozenDims({**dims, "stat": stat})))
    out += list(_stdevs(header, words, dims, n))
    return out


def _stdevs(
    header: list[str], words: list[str], dims: dict[str, str | int], n: int
) -> Iterator[Measurement]:
    """The two ``StdDev`` columns: the first after Mean(MiB), the second after Mean(OPs)."""
    for i, name in enumerate(header):
        if name != "StdDev" or i == 0:
            continue
        metric, unit = ("iops", "ops/s") if header[i - 1] == "Mean(OPs)" else ("bw", "MiB/s")
        value = cell_number(TOOL, words[i], n)
        yield Measurement(TOOL, metric, value, unit, FrozenDims({**dims, "stat": "stdev"}))


def _with_test_dim(st: _State) -> list[Record]:
    """Records carry ``test`` while read; a run of one test drops it."""
    if len(st.tests) > 1:
        return st.records
    return [_drop_test(r) for r in st.records]


def _drop_test(rec: Record) -> Record:
    if not isinstance(rec, Measurement) or "test" not in rec.dims:
        return rec
    dims = FrozenDims({k: v for k, v in rec.dims.items() if k != "test"})
    return replace(rec, dims=dims)


def detect(text: str) -> bool:
    head = text[:4000]
    return "MPI Coordinated Test of Parallel I/O" in head or is_ior_json(head)


PARSER = Parser(TOOL, parse, "IOR: bandwidth, IOPS and times per iteration and summary", detect)
