"""rados-bench: the text output of Ceph's ``rados bench -p POOL SECONDS write|seq|rand``.

One output may hold several runs one after another (a write, then seq and rand reads of
what it wrote), each introduced by its command line: the line ``$ rados bench ...`` that
aibench's rados-bench runner prints before each run, or a shell prompt line pasted with
the output (``root@host:~# rados bench -p bench 60 seq``). The run's mode is the ``write``,
``seq`` or ``rand`` word of that line; a run with no command line before it is ``write``
(its summary says ``Total writes made``) or ``read`` (``Total reads made``: seq and rand
print the same summary).

A run ends with its summary: ``Total time run:``, ``Total writes made:`` / ``Total reads
made:``, ``Write size:`` / ``Read size:``, ``Object size:``, ``Bandwidth (MB/sec):``,
(writes) ``Stddev Bandwidth:``, ``Max bandwidth (MB/sec):``, ``Min bandwidth (MB/sec):``,
``Average IOPS:``, ``Stddev IOPS:``, ``Max IOPS:``, ``Min IOPS:``, ``Average Latency(s):``,
(writes) ``Stddev Latency(s):``, ``Max latency(s):``, ``Min latency(s):``. Ceph 0.80
(firefly) printed no IOPS lines and no object size, and its latency lines had no
``(s)``: both forms are read. Tested on Ceph 16.2.15 (captured here), a cephadm cluster
of 2023 and Ceph 0.80 (public outputs, see the fixtures' SOURCES.md). The per-second
table before the summary is not read.

A run shorter than a second has no per-second sample: rados then prints ``Max bandwidth
(MB/sec): 0`` and ``Min bandwidth (MB/sec): 1.79769e+308`` (its "no sample yet" values);
the bandwidth's stddev, max and min of such a run are not emitted.

``MB/sec`` is rados bench's own word for bytes / 2^20 per second (it divides by 1024 *
1024): it is emitted as ``MiB/s``.

Emitted per run (dims ``mode`` = write | seq | rand | read, ``op_size_bytes`` and, where
printed, ``object_size_bytes``): ``bandwidth`` (MiB/s, dim ``stat`` = mean | stddev | max
| min), ``iops`` (IOPS, ``stat`` = mean | stddev | max | min), ``latency`` (s, ``stat`` =
mean | stddev | max | min), ``ops`` (count: objects written or read) and ``runtime`` (s).

Failures: an error line of rados (``error opening pool ...``, ``Must write data before
running a read benchmark!``, ``error during benchmark: ...``) or a run whose table began
and whose summary never came (cut short) is a ToolFailure with the runs read before it as
``partial``; an output with no summary at all is a ParseError naming what was looked for.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from aibench.errors import ParseError, ToolFailure
from aibench.model import FrozenDims, Measurement
from aibench.parsers import Parser

TOOL = "rados-bench"
UNITS = {"bandwidth": "MiB/s", "iops": "IOPS", "latency": "s", "ops": "count", "runtime": "s"}
MODES = ("write", "seq", "rand")
NO_SAMPLE = 1e300  # rados's minimum before any per-second sample: DBL_MAX
_FIELD = re.compile(r"^\s*([A-Za-z][A-Za-z ()/]*?):\s+(\S+)\s*$")
# summary label -> (metric, stat); the sizes and counts are read apart
_SUMMARY = {
    "Bandwidth (MB/sec)": ("bandwidth", "mean"),
    "Stddev Bandwidth": ("bandwidth", "stddev"),
    "Max bandwidth (MB/sec)": ("bandwidth", "max"),
    "Min bandwidth (MB/sec)": ("bandwidth", "min"),
    "Average IOPS": ("iops", "mean"),
    "Stddev IOPS": ("iops", "stddev"),
    "Max IOPS": ("iops", "max"),
    "Min IOPS": ("iops", "min"),
    "Average Latency(s)": ("latency", "mean"),
    "Stddev Latency(s)": ("latency", "stddev"),
    "Max latency(s)": ("latency", "max"),
    "Min latency(s)": ("latency", "min"),
    "Average Latency": ("latency", "mean"),  # 0.80
    "Stddev Latency": ("latency", "stddev"),
    "Max latency": ("latency", "max"),
    "Min latency": ("latency", "min"),
}
_COUNTS = {
    "Total time run": "runtime",
    "Total writes made": "ops",
    "Total reads made": "ops",
    "Write size": "op_size_bytes",
    "Read size": "op_size_bytes",
    "Object size": "object_size_bytes",
}
_ERROR = re.compile(r"^(error .*|Must write data before running a read benchmark.*|failed to .*)$")
_TABLE_ROW = re.compile(r"^\s*\d+\s+\d+\s+\d+\s+\d+\s+[0-9.]+\s+[0-9.]+\s")


@dataclass
class _Run:
    mode: str
    line: int
    table: bool = False  # its per-second table began
    fields: dict[str, float] = field(default_factory=dict)
    summary: dict[tuple[str, str], float] = field(default_factory=dict)
    writes: bool | None = None

    @property
    def done(self) -> bool:
        return "runtime" in self.fields and ("bandwidth", "mean") in self.summary


def command_mode(line: str) -> str | None:
    """The mode of a ``rados bench`` command line (``write``, ``seq``, ``rand``), or None
    when the line is not one."""
    words = line.split()
    if "rados" not in [w.rsplit("/", 1)[-1] for w in words] or "bench" not in words:
        return None
    after = words[words.index("bench") + 1 :]
    for i, w in enumerate(after):
        if w in MODES and (i == 0 or after[i - 1] not in ("-p", "--pool")):
            return w
    return None


def parse(text: str) -> list[Measurement]:
    runs: list[_Run] = []
    current: _Run | None = None
    for n, line in enumerate(text.splitlines(), 1):
        mode = command_mode(line)
        if mode is not None:
            _close(current, runs, text)
            current = _Run(mode, n)
            continue
        if _ERROR.match(line.strip()):
            raise ToolFailure(TOOL, line.strip(), line=n, partial=list[object](_records(runs)))
        if _TABLE_ROW.match(line):
            current = current or _Run("", n)
            current.table = True
            continue
        m = _FIELD.match(line)
        if m is None or (m[1] not in _SUMMARY and m[1] not in _COUNTS):
            continue
        if current is None or (current.done and m[1] == "Total time run"):
            _close(current, runs, text)
            current = _Run("", n)
        _field(current, m[1], m[2], n)
    _close(current, runs, text)
    if not runs:
        raise ParseError(TOOL, "no rados bench summary (Total time run:, Bandwidth (MB/sec):)")
    return _records(runs)


def _field(run: _Run, label: str, cell: str, n: int) -> None:
    try:
        value = float(cell)
    except ValueError:
        raise ParseError(TOOL, f"line {n}: {label} is not a number: {cell!r}", line=n) from None
    if label in _COUNTS:
        run.fields[_COUNTS[label]] = value
        if label.startswith("Total "):
            run.writes = run.writes or label == "Total writes made"
    else:
        run.summary[_SUMMARY[label]] = value


def _close(run: _Run | None, runs: list[_Run], text: str) -> None:
    """End ``run``: kept when its summary is whole; a run cut short is a ToolFailure."""
    if run is None or (not run.table and not run.fields and not run.summary):
        return
    if not run.done:
        what = "summary" if not run.fields and not run.summary else "complete summary"
        raise ToolFailure(
            TOOL,
            f"the {run.mode or 'rados bench'} run of line {run.line} was cut short: no {what}",
            line=run.line,
            partial=list[object](_records(runs)),
        )
    if not run.mode:
        run.mode = "write" if run.writes else "read"
    if run.summary.get(("bandwidth", "min"), 0.0) >= NO_SAMPLE:
        for stat in ("stddev", "max", "min"):
            run.summary.pop(("bandwidth", stat), None)
    runs.append(run)


def _records(runs: list[_Run]) -> list[Measurement]:
    out: list[Measurement] = []
    for run in runs:
        dims: dict[str, str | int | float] = {"mode": run.mode}
        for key in ("op_size_bytes", "object_size_bytes"):
            if key in run.fields:
                dims[key] = int(run.fields[key])
        for (metric, stat), value in run.summary.items():
            d = FrozenDims({**dims, "stat": stat})
            out.append(Measurement(TOOL, metric, value, UNITS[metric], d))
        for metric in ("ops", "runtime"):
            if metric in run.fields:
                out.append(
                    Measurement(TOOL, metric, run.fields[metric], UNITS[metric], FrozenDims(dims))
                )
    return out


def detect(text: str) -> bool:
    """A summary, the per-second table's header, or a ``rados bench`` command line."""
    if "Total time run:" in text and ("Total writes made:" in text or "Total reads made:" in text):
        return True
    head = text[:4000]
    if re.search(r"sec\s+Cur ops\s+started\s+finished\s+avg MB/s", head):
        return True
    return any(command_mode(line) is not None for line in head.splitlines())


PARSER = Parser(
    TOOL, parse, "rados bench: bandwidth, IOPS and latency per write/seq/rand run", detect
)
