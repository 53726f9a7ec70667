"""fio's normal text output in client/server mode (``fio --client=... --output-format=normal``).

The driver prints, per server, ``hostname=H, be=0, 64-bit, ... fio=fio-3.33`` when it
connects, the servers' lines prefixed ``<H> `` (the server's own hostname, not the
address of ``--client``), then each server's report: a line ending ``<H> `` (after the
progress line) followed by that server's job reports, ``Run status group`` and ``Disk
stats`` unprefixed; at the end one ``All clients: (groupid=G, jobs=N): ...`` report, fio's
sum over every client and group, whose bandwidth lacks its ``B/s`` (``BW=1738Mi (1823M)``).
Tested with fio 3.33, servers on loopback addresses in their own UTS namespaces.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field

from aibench.errors import ParseError, ToolFailure
from aibench.model import FrozenDims, Measurement, Note, Scalar
from aibench.parsers import Record
from aibench.parsers._fio_text import convert, parse_text

TOOL = "fio-cluster"
ALL = "All clients"
CLIENT_TEXT = re.compile(
    r"^hostname=\S+, be=\d+, \d+-bit, os=\S+, arch=\S+, fio=fio-|^All clients: \(groupid=",
    re.MULTILINE,
)
_MARK = re.compile(r"<([^<>\s]+)> $")
_PREFIXED = re.compile(r"^<([^<>\s]+)> (\S.*)$")
_REPORT = re.compile(r"^\S.*: \(groupid=\d+, jobs=\d+\): err=")
UNNAMED = (
    "fio's text does not name the server of some reports (their '<host>' marks came "
    "together): those clients are numbered report-N in arrival order; --output-format=json "
    "names every client"
)
_FAILED = re.compile(r"^(?:<[^>]*> )?fio: (.*(?:dropped|failed|error|refused).*)$")
_NUM = r"\d+(?:\.\d+)?"
# "  read: IOPS=2560, BW=2560Mi (2684M)(64.0MiB/25msec)" (the All clients report)
_ALL_DIR = re.compile(
    rf"^\s+(?P<dir>read|write|trim)\s*: IOPS=(?P<iops>{_NUM})(?P<iopsx>[kM]?), "
    rf"BW=(?P<bw>{_NUM})(?P<bwu>[KMGT]i|B)(?:B/s|/s)? \([^)]*\)"
    rf"\((?P<io>{_NUM})(?P<iou>(?:[KMGT]i)?B)/(?P<run>\d+)msec\)"
)
_KEEP = {"bw", "iops", "io_bytes", "runtime", "clat_mean", "clat_percentile"}
_RATES = ("bw", "iops", "io_bytes", "runtime")
_X = {"": 1.0, "k": 1e3, "M": 1e6}


@dataclass
class _Chunk:
    """One server's reports: its job reports, then its ``Run status group`` lines."""

    hosts: list[str]
    lines: list[str] = field(default_factory=list)
    grouped: bool = False  # a "Run status group" line was read: the next report is another's


@dataclass
class _Split:
    chunks: list[_Chunk] = field(default_factory=list)
    totals: list[list[str]] = field(default_factory=list)  # one per All clients report
    problems: list[str] = field(default_factory=list)


def _split(text: str) -> _Split:
    """Cut the text by server. fio prints a server's job reports unprefixed, after a
    ``<H>`` mark that the server's last text message left: a report belongs to H when one
    mark came since the previous server's reports, to no known server when several did."""
    out = _Split()
    pending: list[str] = []
    current: list[str] | None = None
    chunk: _Chunk | None = None
    for line in text.splitlines():
        if m := _FAILED.match(line):
            out.problems.append(m.group(1))
        if m := _MARK.search(line):
            pending.append(m.group(1))
        elif _PREFIXED.match(line):
            continue
        elif line.startswith(f"{ALL}: (groupid="):
            out.totals.append([])
            current = out.totals[-1]
        elif _REPORT.match(line) and (chunk is None or chunk.grouped or current is not chunk.lines):
            chunk = _Chunk(pending)
            pending = []
            out.chunks.append(chunk)
            current = chunk.lines
            current.append(line)
        elif current is not None:
            current.append(line)
            if chunk is not None and line.startswith("Run status group"):
                chunk.grouped = True
    return out


def parse_client_text(text: str) -> list[Record]:
    split = _split(text)
    records: list[Record] = []
    unnamed = 0
    for chunk in split.chunks:
        if len(chunk.hosts) == 1:
            host = chunk.hosts[0]
        else:
            unnamed += 1
            host = f"report-{unnamed}"
        try:
            got = parse_text("\n".join(chunk.lines))
        except ToolFailure as exc:
            split.problems.append(f"{host}: {exc.reason}")
            got = [r for r in exc.partial if isinstance(r, Measurement)]
        records += [_client(r, host) for r in got if r.metric in _KEEP]
    if not split.chunks:
        records += _totals_only(split.totals)
    elif len(split.totals) > 1:
        raise ParseError(TOOL, f"{len(split.totals)} '{ALL}' reports beside per-client ones")
    else:
        records += _aggregate(records, split.totals[0] if split.totals else [])
    if not records and not split.problems:
        raise ParseError(TOOL, f"no client report ('<host>' then a job report, or '{ALL}:')")
    if unnamed:
        records.append(Note(TOOL, UNNAMED, kind="info"))
    if split.problems:
        partial: list[object] = list(records)
        raise ToolFailure(TOOL, "; ".join(dict.fromkeys(split.problems)), partial=partial)
    return records


def _client(rec: Measurement, host: str) -> Measurement:
    keep = ("job", "direction", "percentile")
    dims: dict[str, Scalar] = {k: v for k, v in rec.dims.items() if k in keep}
    dims["client"] = host
    return Measurement(TOOL, rec.metric, rec.value, rec.unit, FrozenDims(dims))


def _aggregate(records: list[Record], total: list[str]) -> list[Record]:
    """``client=all``: fio's All clients figures where a direction has one job, else sums."""
    rates = [r for r in records if isinstance(r, Measurement) and r.metric in _RATES]
    jobs: dict[str, set[str]] = defaultdict(set)
    for r in rates:
        jobs[str(r.dims["direction"])].add(str(r.dims["job"]))
    if not total:
        hosts = {r.dims["client"] for r in rates}
        if len(hosts) != 1:
            return []
        return [_as_all(r, r.value) for r in rates]  # one client: fio prints no sum
    fio_sum = _all_clients(total)
    out: list[Record] = []
    for direction, names in jobs.items():
        if len(names) == 1 and direction in fio_sum:
            job = next(iter(names))
            dims = {"job": job, "direction": direction, "client": "all"}
            out += [
                Measurement(TOOL, m, v, u, FrozenDims(dims)) for m, (v, u) in fio_sum[direction]
            ]
        else:
            out += _summed([r for r in rates if r.dims["direction"] == direction])
            why = f"fio's '{ALL}' adds several jobs in {direction}: each job's aggregate is the "
            out.append(Note(TOOL, why + "sum of its clients", kind="info"))
    return out


def _totals_only(totals: list[list[str]]) -> list[Record]:
    """Logs that kept only fio's ``All clients`` reports (several: the dim ``run``)."""
    out: list[Record] = []
    for run, lines in enumerate(totals, 1):
        dims: dict[str, Scalar] = {"client": "all"} | ({"run": run} if len(totals) > 1 else {})
        for direction, figures in _all_clients(lines).items():
            fd = FrozenDims({**dims, "direction": direction})
            out += [Measurement(TOOL, m, v, u, fd) for m, (v, u) in figures]
    return out


def _as_all(rec: Measurement, value: float) -> Measurement:
    dims = FrozenDims({**rec.dims, "client": "all"})
    return Measurement(TOOL, rec.metric, value, rec.unit, dims)


def _summed(rates: list[Measurement]) -> list[Measurement]:
    """Per job, the clients' sums (the longest runtime) of one direction."""
    sums: dict[tuple[str, str, str], float] = defaultdict(float)
    units: dict[str, str] = {}
    for r in rates:
        key = (str(r.dims["job"]), str(r.dims["direction"]), r.metric)
        sums[key] = max(sums[key], r.value) if r.metric == "runtime" else sums[key] + r.value
        units[r.metric] = r.unit
    return [
        Measurement(
            TOOL,
            metric,
            value,
            units[metric],
            FrozenDims({"job": job, "direction": d, "client": "all"}),
        )
        for (job, d, metric), value in sums.items()
    ]


def _all_clients(lines: list[str]) -> dict[str, list[tuple[str, tuple[float, str]]]]:
    out: dict[str, list[tuple[str, tuple[float, str]]]] = {}
    for line in lines:
        m = _ALL_DIR.match(line)
        if not m:
            continue
        bw_unit = "B/s" if m["bwu"] == "B" else m["bwu"] + "B/s"
        out[m["dir"]] = [
            ("bw", (convert(m["bw"], bw_unit, "KiB/s"), "KiB/s")),
            ("iops", (float(m["iops"]) * _X[m["iopsx"]], "IOPS")),
            ("io_bytes", (convert(m["io"], m["iou"], "B"), "B")),
            ("runtime", (float(m["run"]), "ms")),
        ]
    return out
