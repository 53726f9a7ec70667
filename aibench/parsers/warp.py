"""warp: MinIO's S3 benchmark (``warp put|get|mixed|... --host ... --duration ...``).

Reads warp's console summary in both of its layouts:

* older (warp 0.x, and ``warp analyze``): ``Operation: PUT. Concurrency: 256. Hosts: 4.``,
  ``* Average: 412.73 MiB/s, 12.90 obj/s (1m48.853s, starting ...)``, an optional
  ``Throughput by host:`` list, then ``Aggregated Throughput, split into N x 1s time
  segments:`` with Fastest / 50% Median / Slowest; the mixed benchmark's ``Operation: GET``
  with `` * 632.28 MiB/s, 354.78 obj/s (...)``;
* newer (warp 1.x): ``Report: PUT. Concurrency: 20. Ran: 4m57s``, ``* Average: ...``,
  ``* Reqs: Avg: 26.1ms, 50%: ..., 90%: ..., 99%: ..., Fastest: ..., Slowest: ...,
  StdDev: ...``, for GET ``* TTFB: Avg: ..., Best: ..., 25th: ..., Median: ..., 75th: ...,
  90th: ..., 99th: ..., Worst: ... StdDev: ...``, ``Throughput, split into N x 1s:``, and
  ``Report: Total.`` for a mixed run; from 1.8 also ``* Reqs: 261, Errs: 0, Objs: 261``.

Tested on public logs of both layouts (warp's own README and k8s guide). Object counts
include objects of 0 bytes (DELETE, STAT have no bandwidth).

Emitted per operation (dim ``op``: put, get, delete, stat, list, putpart, append ...,
``total`` for the sum of a mixed run; dim ``concurrency`` and, in the older layout,
``hosts``): ``throughput`` (MiB/s) and ``ops_rate`` (ops/s, warp's obj/s) with dim ``stat``
= mean | fastest | median | slowest (the Average and the fastest, median and slowest 1 s
segment), and per host (dim ``host``) the host's mean; ``latency`` (ms, dim ``stat`` =
mean | p50 | p90 | p99 | min | max | stdev) and ``ttfb`` (ms, mean | min | p25 | p50 |
p75 | p90 | p99 | max | stdev); ``errors`` (count) where warp prints ``Errs:``.

Failures: ``warp: <ERROR> ...`` lines, ``UI: program was killed`` (a run aborted) and a
report with errors are a ToolFailure carrying the records; output with no report is a
ParseError. warp's ``Skipping PUT too few samples.`` is a Note.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from aibench.errors import ParseError, ToolFailure
from aibench.model import FrozenDims, Measurement, Note, Scalar
from aibench.parsers import Parser, Record
from aibench.parsers._warp_units import duration_ms, rate_mib

TOOL = "warp"
_HEAD = re.compile(r"^(?:-+\s*)?(Report|Operation): ([A-Za-z]+)\b(.*)$")
_NUMBER = r"\d+(?:\.\d+)?"  # what warp prints; ".2.90" is garbled output, not a rate
_RATE = rf"(?:(?P<bw>{_NUMBER})\s*(?P<unit>[KMGT]?i?B)/s, )?(?P<ops>{_NUMBER}) obj/s"
_AVERAGE = re.compile(rf"^\*\s*(?:Average:\s*|Throughput:\s*)?{_RATE}(?:\s|$)")
_SEGMENT = re.compile(rf"^\*\s*(Fastest|50% Median|Slowest): {_RATE}")
_HOST = re.compile(rf"^\*\s*(\S+): Avg: {_RATE}")
_REQS = re.compile(
    r"^\*\s*(?:Reqs: )?Avg: (\S+), 50%: (\S+), 90%: (\S+), 99%: (\S+), "
    r"Fastest: (\S+), Slowest: ([^,\s]+)(?:, StdDev: (\S+))?$"
)
_TTFB = re.compile(
    r"^\*\s*TTFB: Avg: (\S+), Best: (\S+), 25th: (\S+), Median: (\S+), 75th: (\S+), "
    r"90th: (\S+), 99th: (\S+), Worst: (\S+) StdDev: (\S+)$"
)
_COUNTS = re.compile(r"^\*\s*Reqs: (\d+), Errs: (\d+), Objs: (\d+)")
_FAILED = re.compile(r"^(?:warp: )?<ERROR>.*|^UI: program was killed.*")
_SEG_STAT = {"Fastest": "fastest", "50% Median": "median", "Slowest": "slowest"}
_REQ_STATS = ("mean", "p50", "p90", "p99", "min", "max", "stdev")
_TTFB_STATS = ("mean", "min", "p25", "p50", "p75", "p90", "p99", "max", "stdev")


@dataclass
class _State:
    dims: dict[str, Scalar] | None = None
    records: list[Record] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    errors: int = 0


def parse(text: str) -> list[Record]:
    st = _State()
    for n, raw in enumerate(text.splitlines(), 1):
        _line(st, raw.strip(), n)
    if not any(isinstance(r, Measurement) for r in st.records):
        if st.problems:
            raise ToolFailure(TOOL, "; ".join(st.problems), partial=list(st.records))
        raise ParseError(TOOL, "no 'Report: OP.' or 'Operation: OP' summary with an Average")
    if st.errors:
        st.problems.append(f"{st.errors} requests failed")
    if st.problems:
        raise ToolFailure(TOOL, "; ".join(st.problems), partial=list(st.records))
    return st.records


def _line(st: _State, s: str, n: int) -> None:
    if _FAILED.match(s):
        st.problems.append(s)
    elif s.startswith("Skipping ") and s.endswith("too few samples."):
        st.records.append(Note(TOOL, s, line=n))
    elif m := _HEAD.match(s):
        st.dims = _head_dims(m.group(2), m.group(3))
    elif st.dims is None:
        return
    elif m := _SEGMENT.match(s):
        st.records += _rates(m, {**st.dims, "stat": _SEG_STAT[m.group(1)]}, n)
    elif m := _HOST.match(s):
        st.records += _rates(m, {**st.dims, "stat": "mean", "host": m.group(1)}, n)
    elif m := _REQS.match(s):
        st.records += _stats("latency", _REQ_STATS, m.groups(), st.dims, n)
    elif m := _TTFB.match(s):
        st.records += _stats("ttfb", _TTFB_STATS, m.groups(), st.dims, n)
    elif m := _COUNTS.match(s):
        st.errors += int(m.group(2))
        fd = FrozenDims(st.dims)
        st.records.append(Measurement(TOOL, "errors", float(m.group(2)), "count", fd))
    elif m := _AVERAGE.match(s):
        st.records += _rates(m, {**st.dims, "stat": "mean"}, n)


def _head_dims(op: str, rest: str) -> dict[str, Scalar]:
    dims: dict[str, Scalar] = {"op": op.lower()}
    for key, pattern in (("concurrency", r"Concurrency: (\d+)"), ("hosts", r"Hosts: (\d+)")):
        m = re.search(pattern, rest)
        if m:
            dims[key] = int(m.group(1))
    return dims


def _rates(m: re.Match[str], dims: dict[str, Scalar], n: int) -> list[Measurement]:
    fd = FrozenDims(dims)
    out = []
    if m.group("bw") is not None:
        out.append(Measurement(TOOL, "throughput", rate_mib(m["bw"], m["unit"], n), "MiB/s", fd))
    out.append(Measurement(TOOL, "ops_rate", float(m["ops"]), "ops/s", fd))
    return out


def _stats(
    metric: str,
    names: tuple[str, ...],
    cells: tuple[str | None, ...],
    dims: dict[str, Scalar],
    n: int,
) -> list[Measurement]:
    return [
        Measurement(TOOL, metric, duration_ms(c, n), "ms", FrozenDims({**dims, "stat": s}))
        for s, c in zip(names, cells, strict=True)
        if c is not None
    ]


_DETECT = re.compile(
    r"^(?:-+\s*)?(?:Report|Operation): [A-Z]+[. (].*Concurrency: \d+"
    r"|^Aggregated Throughput, split into \d+ x"
    r"|WARP S3 Benchmark Tool by MinIO",
    re.MULTILINE,
)


def detect(text: str) -> bool:
    return _DETECT.search(text[:20000]) is not None


PARSER = Parser(TOOL, parse, "warp S3 benchmark: throughput, ops/s, latency per operation", detect)
