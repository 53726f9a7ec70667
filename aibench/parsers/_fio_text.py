"""fio's normal text output (``--output-format=normal``), fio 3.x style (and 2.x).

Tested on real 3.x output only (the 3.0-era HOWTO examples, 3.25, 3.28 and 3.33
captures). 2.x text: read by the same code, no real 2.x capture tested.

Read per job report (``NAME: (groupid=G, jobs=N): err= E: pid=...``):

* 3.x direction lines ``read: IOPS=6407, BW=25.0MiB/s (26.2MB/s)(50.1MiB/2001msec)``,
  2.x ``read : io=2932.0KB, bw=292KB/s, iops=73, runt= 10016msec`` (2.x prints KB for
  KiB: fio's default ``kb_base=1024``);
* ``slat``/``clat``/``lat`` lines (``(nsec)``, ``(usec)`` or ``(msec)``; each line picks
  its own unit), ``clat percentiles``, and the ``fsync/fdatasync/sync_file_range:``
  section (direction ``sync``);
* the options header ``NAME: (g=0): rw=..., bs=..., ioengine=..., iodepth=...`` for the
  dims ``rw``, ``bs``, ``ioengine`` and ``iodepth``.

Latencies are converted to one unit per output: ``ns`` for fio 3.x, ``us`` for 2.x (the
JSON schema of the same generation). The text prints rounded numbers (three significant
digits for BW and the io size), so values are less precise than the JSON's.

Several runs appended to one log are told apart by :func:`_run_starts`; their records
carry the dim ``run`` (1, 2 ...).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from fractions import Fraction

from aibench.errors import ParseError, ToolFailure
from aibench.model import Measurement, Scalar
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
_GROUP = re.compile(r"^Run status group \d+")
_GROUP_DIR3 = re.compile(
    rf"^\s+(?P<dir>READ|WRITE|TRIM): bw=(?P<bw>{_NUM})(?P<bwu>(?:[KMGT]i?)?B/s) .*?"
    rf"io=(?P<io>{_NUM})(?P<iou>(?:[KMGT]i?)?B)\b"
)
_GROUP_DIR2 = re.compile(
    rf"^\s+(?P<dir>READ|WRITE|TRIM): io=(?P<io>{_NUM})(?P<iou>[KMGT]?B), "
    rf"aggrb=(?P<bw>{_NUM})(?P<bwu>[KMGT]?B/s)"
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
    in_group = False
    for line in text.splitlines():
        if _GROUP.match(line):
            in_group = True
            continue
        if not in_group:
            continue
        m = _GROUP_DIR3.match(line) or _GROUP_DIR2.match(line)
        if m:
            d = m["dir"].lower()
            bw, io = out.get(d, (0.0, 0.0))
            out[d] = (bw + _rate(m["bw"], m["bwu"]), io + _size(m["io"], m["iou"]))
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
    lat_unit = "ns" if fio3 else "us"
    starts = _run_starts(lines)
    next_run = iter(starts[1:])
    run_at = next(next_run, -1)  # 0-based index of the line that starts the next run
    run: dict[str, Scalar] = {"run": 1} if len(starts) > 1 else {}
    options: dict[str, dict[str, Scalar]] = {}
    bs_by_job: dict[str, dict[str, str]] = {}
    jobs: list[_Job] = []
    errors: list[str] = []
    job: _Job | None = None
    direction = ""
    dims: dict[str, Scalar] = {}
    fdims = frozen(dims)  # dims as a FrozenDims, built once per direction
    pct: tuple[str, str] | None = None
    for no, line in enumerate(lines, 1):
        if no - 1 == run_at:  # the next run of a log of several
            run = {"run": int(run["run"]) + 1}
            run_at = next(next_run, -1)
            options, bs_by_job, job, direction, pct = {}, {}, None, "", None
        if not line:
            pct = None
            continue
        if pct is not None:
            if line.lstrip().startswith("|"):
                assert job is not None
                src, table = _LAT_UNITS[pct[1]], percentile_table(fdims)
                num, den = _factor(src, lat_unit)
                for p, v in _PCT_ITEM.findall(line):
                    # v is digits: convert()'s integer branch, inline, for whole factors
                    value = float(int(v) * num) if den == 1 else convert(v, src, lat_unit)
                    pdims = with_percentile(fdims, float(p), table)
                    job.records.append(Measurement(TOOL, "clat_percentile", value, lat_unit, pdims))
                continue
            pct = None
        # cheap tests first: most lines of a report are none of the ones read here
        if line[0] != " ":
            if line.startswith("fio: "):
                errors.append(line.strip())
            elif ": (g=" in line and (m := _OPTS.match(line)):
                options[m["name"]] = {
                    "rw": m["rw"],
                    "ioengine": m["ioengine"],
                    "iodepth": int(m["iodepth"]),
                }
                bs_by_job[m["name"]] = _split_bs(m["bs"])
            elif ": (groupid=" in line and (m := _JOB.match(line)):
                job = _Job(m["name"], no, int(m["err"]), m["msg"] or "")
                jobs.append(job)
                direction = ""
            elif line.startswith("Run status group"):
                job = None
            continue
        if job is None:
            continue
        s = line.lstrip()
        if s.startswith(("read", "write", "trim")):
            m = _DIR3.match(line) or _DIR2.match(line)
            if not m:
                continue
            direction = m["dir"]
            dims = {"job": job.name, "direction": direction, **options.get(job.name, {}), **run}
            bs = bs_by_job.get(job.name, {}).get(direction)
            if bs:
                dims["bs"] = bs
            fdims = frozen(dims)
            iops = float(m["iops"]) * _X[m["iopsx"]]
            job.records += [
                Measurement(TOOL, "bw", _rate(m["bw"], m["bwu"]), "KiB/s", fdims),
                Measurement(TOOL, "iops", iops, "IOPS", fdims),
                Measurement(TOOL, "io_bytes", _size(m["io"], m["iou"]), "B", fdims),
                Measurement(TOOL, "runtime", float(m["run"]), "ms", fdims),
            ]
        elif s.startswith("fsync/fdatasync/sync_file_range:"):
            direction = "sync"
            dims = {"job": job.name, "direction": "sync", **options.get(job.name, {}), **run}
            bs = bs_by_job.get(job.name, {}).get("write")
            if bs:
                dims["bs"] = bs
            fdims = frozen(dims)
        elif not direction:
            continue
        elif s.startswith(("slat (", "clat (", "lat (", "sync (")):
            m = _LAT.match(line)
            if not m:
                continue
            key = "lat" if m["key"] == "sync" else m["key"]
            unit = _LAT_UNITS[m["unit"]]
            job.records.append(
                Measurement(TOOL, f"{key}_mean", convert(m["avg"], unit, lat_unit), lat_unit, fdims)
            )
            if key == "lat":
                stdev = convert(m["stdev"], unit, lat_unit)
                job.records.append(Measurement(TOOL, "lat_stdev", stdev, lat_unit, fdims))
        elif "percentiles (" in s and (m := _PCT_HEAD.match(line)) and m["key"] in ("clat", "sync"):
            pct = (m["key"], m["unit"])
    if not jobs:
        raise ParseError(TOOL, "no job report (NAME: (groupid=..., jobs=...): err=...) found")
    records = [r for j in jobs for r in j.records]
    failed = [j for j in jobs if j.err != 0]
    if failed:
        reason = "; ".join(
            errors
            + [f"job {j.name!r} err={j.err}" + (f" ({j.msg})" if j.msg else "") for j in failed]
        )
        raise ToolFailure(TOOL, reason, line=failed[0].line, partial=list(records))
    return records
