"""fio's normal text output (``--output-format=normal``), fio 3.x style (and 2.x).

Tested on real 3.x output (the 3.0-era HOWTO examples, 3.25, 3.28 and 3.33 captures) and
fio 2.2.10 text (three runs appended to one log).

Read per job report (``NAME: (groupid=G, jobs=N): err= E: pid=...``):

* 3.x direction lines ``read: IOPS=6407, BW=25.0MiB/s (26.2MB/s)(50.1MiB/2001msec)``,
  2.x ``read : io=2932.0KB, bw=292KB/s, iops=73, runt= 10016msec`` (2.x prints KB for
  KiB: fio's default ``kb_base=1024``);
* ``slat``/``clat``/``lat`` lines (``(nsec)``, ``(usec)`` or ``(msec)``; each line picks
  its own unit), ``clat percentiles``, and the ``fsync/fdatasync/sync_file_range:``
  section (direction ``sync``);
* the options header ``NAME: (g=0): rw=..., bs=..., ioengine=..., iodepth=...`` for the
  dims ``rw``, ``bs``, ``ioengine`` and ``iodepth``.

The ``Run status group N`` summary after the jobs, 3.x ``READ: bw=..., MIN-MAX, io=...,
run=MINT-MAXTmsec`` and 2.x ``READ: io=..., aggrb=..., minb=..., maxb=..., mint=...,
maxt=...``, is read by :func:`_group_records` into ``group_*`` records (dims ``group``,
``direction``): the aggregate of the group's jobs, never mixed with a job's ``bw``.

Latencies are converted to one unit per output: ``ns`` for fio 3.x, ``us`` for 2.x (the
JSON schema of the same generation). The text prints rounded numbers (three significant
digits for BW and the io size), so values are less precise than the JSON's.

Several runs appended to one log are told apart by :func:`_run_starts`; their records
carry the dim ``run`` (1, 2 ...).
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from fractions import Fraction

from aibench.errors import ParseError, ToolFailure
from aibench.model import FrozenDims, Measurement, Scalar
from aibench.parsers._fio_common import (
    TOOL,
    frozen,
    normalize_bs,
    percentile_table,
    with_percentile,
)
from aibench.units import factor

_OPTS = re.compile(
    r"^(?P<name>[^\s].*?): \(g=\d+\): rw=(?P<rw>[^,\s]+), bs=(?P<bs>.+?), "
    r"ioengine=(?P<ioengine>[^,\s]+), iodepth=(?P<iodepth>\d+)\s*$"
)
_JOB = re.compile(
    r"^(?P<name>[^\s].*?): \(groupid=\d+, jobs=\d+\): err=\s*(?P<err>\d+)"
    r"(?: \((?P<msg>.*)\))?: pid="
)
_NUM = r"\d+(?:\.\d+)?"
_DIR3 = re.compile(
    rf"^\s+(?P<dir>read|write|trim)\s*: IOPS=(?P<iops>{_NUM})(?P<iopsx>[kM]?), "
    rf"BW=(?P<bw>{_NUM})(?P<bwu>(?:[KMGT]i?)?B/s) \([^)]*\)"
    rf"\((?P<io>{_NUM})(?P<iou>(?:[KMGT]i?)?B)/(?P<run>\d+)msec\)"
)
_DIR2 = re.compile(
    rf"^\s+(?P<dir>read|write|trim)\s*: io=(?P<io>{_NUM})(?P<iou>[KMGT]?B), "
    rf"bw=(?P<bw>{_NUM})(?P<bwu>[KMGT]?B/s), iops=(?P<iops>{_NUM})(?P<iopsx>[kM]?), "
    r"runt=\s*(?P<run>\d+)msec"
)
_LAT = re.compile(
    rf"^\s+(?P<key>slat|clat|lat|sync) \((?P<unit>nsec|usec|msec)\): "
    rf"min=\s*{_NUM}[kKM]?, max=\s*{_NUM}[kKM]?, avg=\s*(?P<avg>{_NUM}), "
    rf"stdev=\s*(?P<stdev>{_NUM})"
)
_PCT_HEAD = re.compile(r"^\s+(?P<key>clat|lat|sync) percentiles \((?P<unit>nsec|usec|msec)\):")
_PCT_ITEM = re.compile(rf"(?P<p>{_NUM})th=\[\s*(?P<v>\d+)\]")
_GROUP = re.compile(r"^Run status group (?P<group>\d+)")
_RATE3 = r"(?:[KMGT]i?)?B/s"
# fio 3.x: ``READ: bw=20.9MiB/s (21.9MB/s), 10.4MiB/s-10.8MiB/s (10.9MB/s-11.3MB/s),
# io=64.0MiB (67.1MB), run=2973-3069msec``
_GROUP_DIR3 = re.compile(
    rf"^\s+(?P<dir>READ|WRITE|TRIM): bw=(?P<bw>{_NUM})(?P<bwu>{_RATE3}) \([^)]*\), "
    rf"(?P<minb>{_NUM})(?P<minbu>{_RATE3})-(?P<maxb>{_NUM})(?P<maxbu>{_RATE3}) \([^)]*\), "
    rf"io=(?P<io>{_NUM})(?P<iou>(?:[KMGT]i?)?B) \([^)]*\), "
    r"run=(?P<mint>\d+)-(?P<maxt>\d+)msec"
)
# fio 2.x: ``READ: io=4096.0MB, aggrb=245438KB/s, minb=245438KB/s, maxb=245438KB/s,
# mint=17089msec, maxt=17089msec`` (KB meaning KiB, as in its job lines)
_GROUP_DIR2 = re.compile(
    rf"^\s+(?P<dir>READ|WRITE|TRIM): io=(?P<io>{_NUM})(?P<iou>[KMGT]?B), "
    rf"aggrb=(?P<bw>{_NUM})(?P<bwu>[KMGT]?B/s), minb=(?P<minb>{_NUM})(?P<minbu>[KMGT]?B/s), "
    rf"maxb=(?P<maxb>{_NUM})(?P<maxbu>[KMGT]?B/s), "
    r"mint=(?P<mint>\d+)msec, maxt=(?P<maxt>\d+)msec"
)

_LAT_UNITS = {"nsec": "ns", "usec": "us", "msec": "ms"}
_X = {"": 1.0, "k": 1e3, "M": 1e6}
# Binary sizes: fio 3.x prints KiB/MiB; fio 2.x prints KB/MB meaning the same (kb_base=1024).
_BIN = {"B": "B", "KiB": "KiB", "MiB": "MiB", "GiB": "GiB", "TiB": "TiB"}
_BIN |= {"KB": "KiB", "MB": "MiB", "GB": "GiB", "TB": "TiB"}


def convert(value: float | str, src: str, dst: str) -> float:
    """Exact conversion of a printed decimal (no binary-float noise such as 8291790.000000001)."""
    num, den = _factor(src, dst)
    text = str(value)
    if den == 1 and text.isdigit():
        return float(int(text) * num)
    whole, dot, frac = text.partition(".")
    if dot and whole.isdecimal() and frac.isdecimal():
        # the correctly rounded quotient that float(Fraction(text) * factor) gives
        scale: int = 10 ** len(frac)
        return int(whole + frac) * num / (scale * den)
    return float(Fraction(text) * Fraction(num, den))


_FACTORS: dict[tuple[str, str], tuple[int, int]] = {}


def _factor(src: str, dst: str) -> tuple[int, int]:
    """The exact factor from ``src`` to ``dst`` as (numerator, denominator)."""
    key = (src, dst)
    found = _FACTORS.get(key)
    if found is None:
        f = factor(src, dst)
        found = _FACTORS[key] = (f.numerator, f.denominator)
    return found


def _size(value: str, unit: str) -> float:
    return convert(value, _BIN[unit], "B")


def _rate(value: str, unit: str) -> float:
    return convert(value, _BIN[unit.removesuffix("/s")] + "/s", "KiB/s")


@dataclass
class _Job:
    name: str
    line: int
    err: int
    msg: str
    records: list[Measurement] = field(default_factory=list)


def _split_bs(raw: str) -> dict[str, str]:
    """bs per direction from the options header: ``(R) 4096B-4096B, (W) ...`` or 2.x
    ``4K-4K/4K-4K/4K-4K`` (read/write/trim)."""
    found = dict(re.findall(r"\(([RWT])\)\s*([^,\s]+)", raw))
    if not found:
        parts = raw.split("/")
        found = dict(zip("RWT", parts, strict=False))
    return {
        d: normalize_bs(found[k])
        for d, k in (("read", "R"), ("write", "W"), ("trim", "T"))
        if k in found
    }


def group_totals(text: str) -> dict[str, tuple[float, float]]:
    """The ``Run status group`` lines: direction -> (bw in KiB/s, io in bytes), summed over
    the groups. Used to cross-check the per-job records."""
    out: dict[str, tuple[float, float]] = {}
    for r in _group_records(text.splitlines()):
        if r.metric in ("group_bw", "group_io_bytes"):
            d = str(r.dims["direction"])
            bw, io = out.get(d, (0.0, 0.0))
            out[d] = (bw + r.value, io) if r.metric == "group_bw" else (bw, io + r.value)
    return out


def _group_records(lines: list[str], run: dict[str, Scalar] | None = None) -> list[Measurement]:
    """The figures of the ``Run status group N`` summaries (either generation's form):
    ``group_bw`` with ``group_bw_min`` / ``group_bw_max`` (KiB/s, the slowest and fastest
    job), ``group_io_bytes`` (B), ``group_runtime_min`` / ``group_runtime_max`` (ms); dims
    ``group`` and ``direction`` (and the ``run`` of a log of several)."""
    out: list[Measurement] = []
    group: int | None = None
    for line in lines:
        if (g := _GROUP.match(line)) is not None:
            group = int(g["group"])
            continue
        if group is None or not line.startswith(" "):
            group = None if line.strip() else group
            continue
        m = _GROUP_DIR3.match(line) or _GROUP_DIR2.match(line)
        if m is None:
            continue
        dims = frozen({"group": group, "direction": m["dir"].lower(), **(run or {})})
        out += [
            Measurement(TOOL, "group_bw", _rate(m["bw"], m["bwu"]), "KiB/s", dims),
            Measurement(TOOL, "group_bw_min", _rate(m["minb"], m["minbu"]), "KiB/s", dims),
            Measurement(TOOL, "group_bw_max", _rate(m["maxb"], m["maxbu"]), "KiB/s", dims),
            Measurement(TOOL, "group_io_bytes", _size(m["io"], m["iou"]), "B", dims),
            Measurement(TOOL, "group_runtime_min", float(m["mint"]), "ms", dims),
            Measurement(TOOL, "group_runtime_max", float(m["maxt"]), "ms", dims),
        ]
    return out


def _run_starts(lines: list[str]) -> list[int]:
    """0-based indexes of the lines where a run of fio starts, for a log of several runs
    appended one after the other: after a job report, an options header (``NAME: (g=0):
    rw=...``) or a version line (``fio-3.33``) starts the next run. One run: ``[0]``.
    (Job reports of one name within a run are ``numjobs`` clones, not a second run.)"""
    starts = [0]
    reported = False
    for i, line in enumerate(lines):
        if not line or line[0] == " ":
            continue
        if ": (groupid=" in line and _JOB.match(line):
            reported = True
        elif reported and (
            line.startswith(("fio-2", "fio-3")) or (": (g=" in line and _OPTS.match(line))
        ):
            starts.append(i)
            reported = False
    return starts


def parse_text(text: str) -> list[Measurement]:
    lines = text.splitlines()
    fio3 = any(ln.startswith("fio-3") or " IOPS=" in ln for ln in lines)
    reader = _Reader("ns" if fio3 else "us")
    starts = _run_starts(lines)
    next_run = iter(starts[1:])
    run_at = next(next_run, -1)  # 0-based index of the line that starts the next run
    if len(starts) > 1:
        reader.run = {"run": 1}
    for no, line in enumerate(lines, 1):
        if no - 1 == run_at:  # the next run of a log of several
            reader.next_run()
            run_at = next(next_run, -1)
        reader.read(no, line)
    bounds = [*starts, len(lines)]
    groups = [
        r
        for i, (a, b) in enumerate(itertools.pairwise(bounds), 1)
        for r in _group_records(lines[a:b], {"run": i} if len(starts) > 1 else None)
    ]
    return _outcome(reader.jobs, reader.errors, groups)


@dataclass
class _Reader:
    """What the text read so far says: the job being read, its direction, the options."""

    lat_unit: str
    run: dict[str, Scalar] = field(default_factory=dict)
    options: dict[str, dict[str, Scalar]] = field(default_factory=dict)
    bs_by_job: dict[str, dict[str, str]] = field(default_factory=dict)
    jobs: list[_Job] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    job: _Job | None = None
    direction: str = ""
    fdims: FrozenDims = field(default_factory=lambda: frozen({}))
    pct: tuple[str, str] | None = None  # (key, unit) of the percentile table being read

    def next_run(self) -> None:
        self.run = {"run": int(self.run["run"]) + 1}
        self.options, self.bs_by_job, self.job, self.direction, self.pct = {}, {}, None, "", None

    def read(self, no: int, line: str) -> None:
        if not line:
            self.pct = None
            return
        if self.pct is not None:
            if line.lstrip().startswith("|"):
                self._percentiles(line, self.pct)
                return
            self.pct = None
        # cheap tests first: most lines of a report are none of the ones read here
        if line[0] != " ":
            self._top_line(no, line)
        elif self.job is not None:
            self._job_line(self.job, line)

    def _top_line(self, no: int, line: str) -> None:
        """An unindented line: an error, an options header, a job report's head, a group."""
        if line.startswith("fio: "):
            self.errors.append(line.strip())
        elif ": (g=" in line and (m := _OPTS.match(line)):
            self.options[m["name"]] = {
                "rw": m["rw"],
                "ioengine": m["ioengine"],
                "iodepth": int(m["iodepth"]),
            }
            self.bs_by_job[m["name"]] = _split_bs(m["bs"])
        elif ": (groupid=" in line and (m := _JOB.match(line)):
            self.job = _Job(m["name"], no, int(m["err"]), m["msg"] or "")
            self.jobs.append(self.job)
            self.direction = ""
        elif line.startswith("Run status group"):
            self.job = None

    def _job_line(self, job: _Job, line: str) -> None:
        """An indented line of a job report."""
        s = line.lstrip()
        if s.startswith(("read", "write", "trim")):
            self._direction(job, line)
        elif s.startswith("fsync/fdatasync/sync_file_range:"):
            self.direction = "sync"
            self.fdims = self._dims(job, "sync", "write")
        elif not self.direction:
            return
        elif s.startswith(("slat (", "clat (", "lat (", "sync (")):
            self._latency(job, line)
        elif "percentiles (" in s and (m := _PCT_HEAD.match(line)) and m["key"] in ("clat", "sync"):
            self.pct = (m["key"], m["unit"])

    def _dims(self, job: _Job, direction: str, bs_of: str) -> FrozenDims:
        """The dims of a direction's records; ``bs_of``: the direction whose bs applies."""
        dims: dict[str, Scalar] = {
            "job": job.name,
            "direction": direction,
            **self.options.get(job.name, {}),
            **self.run,
        }
        bs = self.bs_by_job.get(job.name, {}).get(bs_of)
        if bs:
            dims["bs"] = bs
        return frozen(dims)

    def _direction(self, job: _Job, line: str) -> None:
        """A direction line: bandwidth, IOPS, bytes moved and runtime."""
        m = _DIR3.match(line) or _DIR2.match(line)
        if not m:
            return
        self.direction = m["dir"]
        fdims = self.fdims = self._dims(job, self.direction, self.direction)
        iops = float(m["iops"]) * _X[m["iopsx"]]
        job.records += [
            Measurement(TOOL, "bw", _rate(m["bw"], m["bwu"]), "KiB/s", fdims),
            Measurement(TOOL, "iops", iops, "IOPS", fdims),
            Measurement(TOOL, "io_bytes", _size(m["io"], m["iou"]), "B", fdims),
            Measurement(TOOL, "runtime", float(m["run"]), "ms", fdims),
        ]

    def _latency(self, job: _Job, line: str) -> None:
        """A ``slat``/``clat``/``lat``/``sync`` line: its mean (and the stdev of ``lat``)."""
        m = _LAT.match(line)
        if not m:
            return
        key = "lat" if m["key"] == "sync" else m["key"]
        unit, lat_unit, fdims = _LAT_UNITS[m["unit"]], self.lat_unit, self.fdims
        job.records.append(
            Measurement(TOOL, f"{key}_mean", convert(m["avg"], unit, lat_unit), lat_unit, fdims)
        )
        if key == "lat":
            stdev = convert(m["stdev"], unit, lat_unit)
            job.records.append(Measurement(TOOL, "lat_stdev", stdev, lat_unit, fdims))

    def _percentiles(self, line: str, pct: tuple[str, str]) -> None:
        """A row ``|  1.00th=[  241],  5.00th=[  258], ...`` of a percentile table."""
        job, fdims, lat_unit = self.job, self.fdims, self.lat_unit
        assert job is not None
        src, table = _LAT_UNITS[pct[1]], percentile_table(fdims)
        num, den = _factor(src, lat_unit)
        for p, v in _PCT_ITEM.findall(line):
            # v is digits: convert()'s integer branch, inline, for whole factors
            value = float(int(v) * num) if den == 1 else convert(v, src, lat_unit)
            pdims = with_percentile(fdims, float(p), table)
            job.records.append(Measurement(TOOL, "clat_percentile", value, lat_unit, pdims))


def _outcome(jobs: list[_Job], errors: list[str], groups: list[Measurement]) -> list[Measurement]:
    """The records of every job, then the groups'; a ToolFailure (with them) if a job
    reports an error."""
    if not jobs and not groups:
        raise ParseError(
            TOOL,
            "no job report (NAME: (groupid=..., jobs=...): err=...) and no 'Run status group' "
            "figures found",
        )
    records = [r for j in jobs for r in j.records] + groups
    failed = [j for j in jobs if j.err != 0]
    if failed:
        reason = "; ".join(
            errors
            + [f"job {j.name!r} err={j.err}" + (f" ({j.msg})" if j.msg else "") for j in failed]
        )
        raise ToolFailure(TOOL, reason, line=failed[0].line, partial=list(records))
    return records
