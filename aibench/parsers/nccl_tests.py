"""nccl-tests: the text log of ``*_perf`` binaries and the JSON file of ``-J``.

Command read: the stdout of any nccl-tests benchmark binary (``all_reduce_perf``,
``all_gather_perf``, ``reduce_scatter_perf``, ``alltoall_perf``, ``sendrecv_perf``,
``broadcast_perf``, ``reduce_perf``, ``gather_perf``, ``scatter_perf``,
``hypercube_perf``), run directly, under ``mpirun`` or ``srun``; several runs may be
concatenated in one log. Or the document written by ``-J FILE.json``
(``--output_file``, JSON file version 3, nccl-tests 2.17.7 and later).

Versions tested (golden fixtures): the pre-2.13 format (float ``error`` column, no
``root``, no ``agg iters``/``graph`` in the parameter line), the 2.13-2.16 format
(integer ``#wrong``, ``root``, ``N/A`` for in-place checks that are not made), and the
2.17/2.18 format (``# nccl-tests version`` and ``# Collective test starting/concluded``
lines; ``*_perf_mpi`` binary names), and rccl-tests logs, which share the format (the
2021 ``# nThread: 1 nGpus: 1 ...`` header with colons, ``rccl-tests: Version ...`` and
``# Errors with asterisks ...`` lines). The JSON reader follows the schema written by
``src/util.cu`` (2.19.6); no real ``-J`` capture was available, so its fixtures are
built from real text logs in that format (see the fixtures' SOURCES.md). No real
``reduce``, ``gather``, ``scatter`` or ``hypercube`` log with its footer was found: those
are tested on constructed logs, and on a real scatter table whose footer was cut. Columns are
located by the names in the header line and each row is split on whitespace, so widened
columns, the optional ``timestamp`` column (two fields) and the per-iteration columns
(``i_min`` ...) of newer versions (the latter two tested on rows built with 2.19.6's
formats) do not shift anything. Lines
are first stripped of an ``mpirun --tag-output`` prefix (``[1,0]<stdout>:``), an
``srun --label`` prefix (``0: ``) or an MPICH/Intel MPI ``-prepend-rank`` / ``-l`` prefix
(``[0] ``). The MPICH launcher tags every chunk it reads from the pipe, not every line,
so a row printed in several writes carries the same ``[0]`` tag in its middle too
(``... -1[0]    1626.5 ...``); those inner tags of the line's own rank are removed.
NCCL ``INFO``/``WARN`` lines and other tool chatter between rows are ignored. A log
whose head was cut (no ``# nThread`` line, as when only ``# Using devices`` onwards was
kept) is read from its results header on; the rank count is then unknown, which only
matters for the pre-2.13 ``error`` tolerance (taken as for 2 ranks).

Emitted, per row and placement (``out_of_place`` then ``in_place``):

* ``time`` (us), ``algbw`` (GB/s, decimal: bytes / 1e9 / s), ``busbw`` (GB/s), and
  ``wrong`` (count) where the ``#wrong`` column exists and holds a number. ``N/A``
  (and ``nan`` in JSON) is not a number: that metric is left out for that row, never
  written as 0. The pre-2.13 ``error`` column (largest absolute deviation) is checked,
  not emitted.
* dims: ``op`` (``all_reduce`` ...), ``size_bytes``, ``count``, ``dtype``, ``redop``,
  ``root`` (where the column exists) and ``placement``. ``hypercube_perf`` prints an
  empty redop (one field fewer, an integer root after the type): its rows have no
  ``redop`` dim. ``op`` comes from the
  ``# Collective test starting: X_perf`` line (2.17+) or, in JSON, from the binary name
  in ``args[0]``. Logs older than 2.17 do not name the collective anywhere, so their
  records carry no ``op`` dim: the caller that ran the binary knows it and must add it.

And per collective run: ``avg_busbw`` (GB/s), the ``# Avg bus bandwidth`` footer, with
the ``op`` dim when known. nccl-tests computes it as the plain mean of busbw over every
row and both placements (``bw[0] += busBw; bw_count[0]++`` per measurement, then
``bw[0] /= bw_count[0]``); the parser recomputes that mean from the printed rows and
raises ParseError when the two differ by more than the rounding of the printed digits.

busbw is algbw times a factor that depends on the collective and the rank count n
(nccl-tests ``*GetBw``): all_reduce 2(n-1)/n; all_gather, reduce_scatter, alltoall,
gather, scatter (n-1)/n; broadcast, reduce, sendrecv 1; hypercube 1, with algbw counting
(n-1) x the message. So with one rank busbw is 0 for the (n-1)/n collectives, which is a
real measured 0 and kept.

A log with several results tables (runs of several binaries, or of one binary several
times, appended) gives every record the dim ``run``: the number of its table (1, 2 ...),
so that runs whose collective the log does not name, their ``avg_busbw`` included, stay
told apart. A log of one table has no ``run`` dim.

A log that ends inside a results table (a job killed, a publisher's cut) is a
ToolFailure whose reason says where the table was cut (``cut after line N``, or ``cut at
line N (a row cut short)`` when its last row has fewer fields than the rows before it, as a
run killed between a row's out-of-place and in-place halves leaves it) and whose
``partial`` holds the runs read whole and every complete row of the cut table (no
``avg_busbw``: there is no footer to check them against). The row cut short is not a
record.

Failed data checks (ToolFailure): a ``#wrong`` above 0 (JSON ``nwrong``), a pre-2.13
``error`` above the tool's tolerance (1e-2 half/bfloat16, 1e-5 float, 1e-12 double, 0 for
integers, times n-1), ``Out of bounds values : N FAILED`` and ``Avg bus bandwidth : X
FAILED`` (the ``NCCL_TESTS_MIN_BW`` check). nccl-tests goes on after them, and so does the
parser: every run of the log is read to its footer, the failing rows included, and all of
it is the ``partial`` of one ToolFailure raised at the end (with ``oob_values``, the count
of an ``Out of bounds values : N`` above 0, per table), whose reason names each failed
run by its collective (or ``table N``): how many elements its data check found wrong in
how many rows (the sum of the printed ``#wrong`` figures: data corruption), then in the
tool's words the first failed row (and how many more) and its footer. Each row's ``wrong``
record is the figure itself. A failed step never passes a check: the judge gives every
check of it ERROR with this reason. Lines that end the run at once are a ToolFailure right away
with what was read before them: ``Test NCCL failure`` / ``Test CUDA failure`` / ``Test
failure``, ``Invalid number of GPUs: ...`` (more GPUs asked than found), and the
launcher's words for a run it stopped (mpirun's ``... exited on signal N``, ``srun: Job
step aborted``, slurmstepd's ``*** STEP|JOB ... CANCELLED ...`` of a time limit or
scancel, ``srun: error: NODE: task N: Killed``).

``# Reducing maxBytes to N due to memory limitation`` (the largest size asked for was not
run) is returned as a Note. The ``# error: ...`` line of 2.19 (``ncclGetLastError`` after
the run) is not read as a failure on its own: the exit status says whether the run failed.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from typing import Any

from aibench.errors import ParseError, ToolFailure
from aibench.model import FrozenDims, Measurement, Note
from aibench.parsers import Parser, Record
from aibench.parsers._nccl_table import (
    COLLECTIVES,
    RCCL_ONLY,
    TOOL,
    Section,
    check_average,
    half_ulp_g,
    number,
)
from aibench.parsers._util import json_document

OPS = (*COLLECTIVES, *RCCL_ONLY)  # a log of either tool

# launcher prefixes: MPICH/Intel MPI rank tag (group 1), mpirun --tag-output, srun --label
_PREFIX = re.compile(r"^(?:\[(\d+)\] ?|\[\d+,\d+\]<(?:stdout|stderr)>:|\s*\d+: )")
_FAILURE = re.compile(r"Test (?:NCCL |CUDA )?failure|Invalid number of GPUs: ")
_STARTING = re.compile(r"^#\s*Collective test starting:\s*(\S+)")
_RANK = re.compile(r"^#\s+Rank\s+\d+\s")
_AVG = re.compile(r"^#\s*Avg bus bandwidth\s*:\s*(\S+)\s*(\S*)")
_OOB = re.compile(r"^#\s*Out of bounds values\s*:\s*(\d+)\s*(\S*)")
# the launcher's words for a run it stopped: mpirun, srun, slurmstepd (a time limit)
_CUT = re.compile(
    r"exited on signal \d+|srun: Job step aborted|\*\*\* (?:JOB|STEP) \S+ ON \S+ CANCELLED"
    r"|srun: error: \S+: tasks? [\d,-]+: (?:Killed|Terminated)"
)


def _op_name(program: str) -> str | None:
    base = program.replace("\\", "/").rsplit("/", 1)[-1]
    m = re.match(r"([a-z_]+?)_perf", base)
    if m and m.group(1) in OPS:
        return m.group(1)
    return None


def _strip_prefix(raw: str) -> str:
    m = _PREFIX.match(raw)
    if m is None:
        return raw.rstrip()
    rank = m.group(1)
    if rank is not None:
        return raw[m.end() :].replace(f"[{rank}]", " ").rstrip()
    return raw[m.end() :].rstrip()


def parse(text: str) -> list[Record]:
    if text.lstrip().startswith("{"):
        return [*_parse_json(text)]
    return _parse_text(text)


def _parse_text(text: str) -> list[Record]:
    log = _Log()
    for no, raw in enumerate(text.splitlines(), start=1):
        # every launcher prefix starts with "[" or holds ": " (srun --label's "0: ")
        line = _strip_prefix(raw) if raw[:1] == "[" or ": " in raw else raw.rstrip()
        if not line:
            continue
        # the substring tests are cheap and _FAILURE cannot match without one of them
        if ("failure" in line or "GPUs:" in line) and _FAILURE.search(line):
            raise log.failed(line.strip(), no)
        if ("signal" in line or "CANCELLED" in line or "aborted" in line) and _CUT.search(line):
            raise log.failed(f"{line.strip()} (the run was stopped before its end)", no)
        if line[0] == "#":
            log.comment(line, no)
            continue
        section = log.section
        if section is None or section.columns is None:
            continue
        tokens = line.split()
        if not tokens[0].isdigit():
            continue  # NCCL INFO/WARN lines, launcher chatter
        log.row(section, line, no, tokens)
    return log.outcome()


@dataclass
class _Log:
    """What the log read so far holds: the runs read to their footer, the notes, the
    failed runs, the run being read and the collective announced for the next one."""

    out: list[tuple[int, list[Measurement]]] = field(default_factory=list)  # run, records
    notes: list[Note] = field(default_factory=list)
    failed_runs: list[Section] = field(default_factory=list)  # read whole, a check failed
    section: Section | None = None
    pending_op: str | None = None
    tables: int = 0  # results tables seen: their number is the dim "run" when more than one
    # a row narrower than the rows before it (line, text, fields): where the log was
    # cut if nothing of the table follows it; read as any row if something does
    short: tuple[int, str, list[str]] | None = None
    width: int = 0  # the most fields of a row of the table being read
    last: int = 0  # the line of the last row or header of the table being read

    def row(self, section: Section, line: str, no: int, tokens: list[str]) -> None:
        """A row of the table being read; one narrower than the rows before it (or than
        any row of the table can be) is kept back: it is the cut if the log ends there."""
        self.flush_short()
        self.last = no
        if len(tokens) < max(self.width, section.min_fields):
            self.short = (no, line, tokens)
            return
        self.width = max(self.width, len(tokens))
        section.add_row(line, no, tokens)

    def flush_short(self) -> None:
        """The table goes on after a narrower row: it was not cut, read it as it is."""
        if self.short is not None and self.section is not None:
            no, line, tokens = self.short
            self.short = None
            self.section.add_row(line, no, tokens)

    def comment(self, line: str, no: int) -> None:
        """A ``#`` line: a run's start, its header, its ranks, its checks and its footer."""
        # each pattern below needs its words in the line: test them first, it is cheaper
        m = _STARTING.match(line) if "Collective test starting:" in line else None
        if m:
            self.pending_op = _op_name(m.group(1))
            return
        if line.lstrip("# ").startswith("nThread"):
            if self.section is not None and self.section.records:
                raise ParseError(
                    TOOL, "a new run starts before the previous one printed its footer", no
                )
            self.section = Section(op=self.pending_op, start=no)
            self.pending_op = None
            return
        if "Reducing maxBytes" in line:
            self.notes.append(Note(TOOL, line.lstrip("# ").strip(), line=no))
            return
        names = line.lstrip("#").split() if "busbw" in line else []
        is_header = "size" in names and "busbw" in names
        if self.section is None and is_header:
            # the head of the log (# nThread ...) was cut, as by `tail` or a copy
            # that starts at "# Using devices": the table is still whole
            self.section = Section(op=self.pending_op, start=no)
            self.pending_op = None
        section = self.section
        if section is None:
            return
        if "Rank" in line and _RANK.match(line):
            section.ranks += 1
        elif is_header:
            section.set_header(names, no)
            self.tables += 1
            section.run, self.last, self.width = self.tables, no, 0
        elif m := (_OOB.match(line) if "Out of bounds values" in line else None):
            self.flush_short()
            _out_of_bounds(section, m, line, no)
        elif m := (_AVG.match(line) if "Avg bus bandwidth" in line else None):
            self.flush_short()
            self._close(section, m, line, no)

    def _close(self, section: Section, m: re.Match[str], line: str, no: int) -> None:
        """The footer ``# Avg bus bandwidth``: the run's records are complete."""
        avg = _footer(section, m.group(1), no)
        self.out.append((section.run, [*section.records, *([avg] if avg else [])]))
        if m.group(2) == "FAILED":
            section.failures.append((no, line.lstrip("# ").strip()))
        if section.failures:
            self.failed_runs.append(section)
        self.section = None

    def _records(self, open_table: bool) -> list[Record]:
        """Every record read: the runs read whole, the complete rows of the run being
        read (``open_table``), the notes."""
        runs = [*self.out]
        if open_table and self.section is not None:
            runs.append((self.section.run, self.section.records))
        return [*_numbered(runs, self.tables), *self.notes]

    def _failures(self, open_table: bool) -> list[tuple[int, str]]:
        """The failed checks of the runs read whole and (``open_table``) of the run being
        read, each labelled with its run."""
        runs = [*self.failed_runs]
        if open_table and self.section is not None and self.section.failures:
            runs.append(self.section)
        return [f for s in runs for f in _label(s, s.run if self.tables > 1 else 0)]

    def failed(self, words: str, no: int) -> ToolFailure:
        """The tool (or its launcher) says the run failed or was stopped: what was read so
        far is the partial result, with the failed checks read before."""
        why = [(no, words), *self._failures(open_table=True)]
        return ToolFailure(TOOL, _reasons(why), line=no, partial=[*self._records(open_table=True)])

    def outcome(self) -> list[Record]:
        """The records of every run and the notes; a ToolFailure (with them) if a check
        failed or the log ends inside a table; a ParseError if it holds no table."""
        section = self.section
        if section is not None and section.columns is not None:
            if self.short is not None:
                at, where = self.short[0], f"at line {self.short[0]} (a row cut short)"
            else:
                at, where = self.last, f"after line {self.last}"
            name = section.op or (f"table {section.run}" if self.tables > 1 else "")
            cut = (
                f"the results table was cut {where}: the log ends before its 'Avg bus "
                f"bandwidth' footer; its {section.rows} complete rows are kept"
            )
            cut = f"{name}: {cut}" if name else cut
            why = [(at, cut), *self._failures(open_table=True)]
            raise ToolFailure(TOOL, _reasons(why), line=at, partial=[*self._records(True)])
        if not self.tables:
            raise ParseError(
                TOOL, "no nccl-tests results table (no header line with 'size' and 'busbw')"
            )
        if section is not None:  # a run started (# nThread) and the log ends before its table
            why = [
                (
                    section.start,
                    f"the run started at line {section.start} printed no "
                    "results table: the log ends before it",
                ),
                *self._failures(False),
            ]
            raise ToolFailure(
                TOOL, _reasons(why), line=section.start, partial=[*self._records(False)]
            )
        failures = self._failures(open_table=False)
        records = self._records(open_table=False)
        if failures:
            raise ToolFailure(TOOL, _reasons(failures), line=failures[0][0], partial=[*records])
        return records


def _out_of_bounds(section: Section, m: re.Match[str], line: str, no: int) -> None:
    """``# Out of bounds values : N OK|FAILED``: how many values were wrong is kept beside
    the failure."""
    if int(m.group(1)) > 0:
        oob = FrozenDims({"op": section.op} if section.op else {})
        section.records.append(Measurement(TOOL, "oob_values", int(m.group(1)), "count", oob))
    if int(m.group(1)) > 0 or m.group(2) == "FAILED":
        section.failures.append((no, line.lstrip("# ").strip()))


def _label(section: Section, run: int) -> list[tuple[int, str]]:
    """A run's failed checks as one to three reasons: the elements its data check found
    wrong (``#wrong`` above 0: data corruption), its first failed row (and how many more)
    and its footer's verdict, each named by the run's collective when known, and by its
    table's number (``run``, 0 for the only table) in a log of several."""
    failures, op = section.failures, section.op
    if not failures:
        return []
    name = f"{op} (table {run})" if op and run else op or (f"table {run}" if run else "")
    rows = [f for f in failures if "Out of bounds" not in f[1] and "Avg bus" not in f[1]]
    footers = [f for f in failures if f not in rows]
    out = []
    if section.wrong_rows:
        counted = (
            f"the data check found {section.wrong_elements:.0f} wrong elements "
            f"(data corruption, #wrong above 0) in {section.wrong_rows} rows"
        )
        out.append((rows[0][0], counted))
    if rows:
        more = f" (and {len(rows) - 1} more failed checks)" if len(rows) > 1 else ""
        out.append((rows[0][0], rows[0][1] + more))
    out += footers
    return [(no, f"{name}: {why}" if name else why) for no, why in out]


def _reasons(failures: list[tuple[int, str]]) -> str:
    shown = [why for _, why in failures[:6]]
    rest = len(failures) - len(shown)
    return "; ".join(shown) + (f"; and {rest} more" if rest else "")


def _numbered(runs: list[tuple[int, list[Measurement]]], tables: int) -> list[Measurement]:
    """The records of ``runs``; with several results tables in one log, each record gets
    its table's number (dim ``run``): runs whose collective the log does not name (before
    2.17) stay told apart, their ``avg_busbw`` included."""
    if tables < 2:
        return [r for _, records in runs for r in records]
    out: list[Measurement] = []
    for run, records in runs:
        shared: dict[FrozenDims, FrozenDims] = {}  # a row's records share their dims
        for r in records:
            dims = shared.get(r.dims)
            if dims is None:
                dims = shared[r.dims] = FrozenDims({**r.dims, "run": run})
            out.append(replace(r, dims=dims))
    return out


def _footer(section: Section, value: str, no: int) -> Measurement | None:
    avg = number(value)
    if avg is None:
        return None  # "nan": no rows were timed
    check_average(section.busbw, avg, half_ulp_g(avg), no)
    dims = {"op": section.op} if section.op else {}
    return Measurement(tool=TOOL, metric="avg_busbw", value=avg, unit="GB/s", dims=FrozenDims(dims))


def _parse_json(text: str) -> list[Measurement]:
    doc, first = json_document(TOOL, text)
    if not isinstance(doc, dict) or not isinstance(doc.get("results"), list):
        raise ParseError(TOOL, "JSON document has no 'results' list", first)
    args = doc.get("args")
    op = _op_name(str(args[0])) if isinstance(args, list) and args else None
    section = Section(op=op, start=first)
    out: list[Measurement] = []
    for i, row in enumerate(doc["results"]):
        if not isinstance(row, dict):
            raise ParseError(TOOL, f"results[{i}] is not an object", first)
        section.add_json_row(row, i, first)
    out.extend(section.records)
    failures = _label(section, 0)
    oob = doc.get("out_of_bounds")
    if isinstance(oob, dict) and (_int(oob.get("count")) or oob.get("okay") == "false"):
        failures.append((first, f"Out of bounds values : {oob.get('count')} FAILED"))
    avg_doc = doc.get("average_bus_bandwidth")
    if isinstance(avg_doc, dict) and "bandwidth" in avg_doc:
        bw = avg_doc["bandwidth"]
        avg = number(str(bw)) if isinstance(bw, str | int | float) else None
        if avg is not None:
            check_average(section.busbw, avg, 5e-7, first)
            dims = {"op": op} if op else {}
            out.append(
                Measurement(
                    tool=TOOL, metric="avg_busbw", value=avg, unit="GB/s", dims=FrozenDims(dims)
                )
            )
        if avg_doc.get("okay") == "false":
            failures.append((first, f"Avg bus bandwidth : {bw} FAILED"))
    if failures:
        raise ToolFailure(TOOL, _reasons(failures), line=first, partial=[*out])
    return out


def _int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    return int(value) if math.isfinite(value) else 0


# What says a log is RCCL-tests' (same tables): its version line or an RCCL banner, the
# library, an AMD device name, or the "Device 738c" that HIP prints for an unnamed GPU.
_RCCL = re.compile(
    r"rccl-tests|\bRCCL\b|librccl|AMD Instinct|\bRadeon\b|\] Device [0-9a-f]{4}\b", re.I
)


def rccl_marked(text: str) -> bool:
    return _RCCL.search(text[:20000]) is not None


def detect(text: str) -> bool:
    return _table_log(text) and not rccl_marked(text)


def _table_log(text: str) -> bool:
    """An NCCL-tests (or RCCL-tests) log or JSON result file."""
    head = text[:20000]
    if "# nThread" in head and ("busbw" in head or "Using devices" in head):
        return True
    if "out-of-place" in head and "algbw" in head and "busbw" in head:
        return True  # the head (# nThread ...) was cut
    return head.lstrip().startswith("{") and '"nccl_version"' in head and '"results"' in head


PARSER = Parser(
    name=TOOL,
    parse=parse,
    detect=detect,
    description=(
        "nccl-tests *_perf text logs (pre-2.13 to 2.19) and -J JSON: "
        "time, algbw, busbw, #wrong per row, avg busbw per run"
    ),
)
