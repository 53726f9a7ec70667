"""s5cmd: S3 load as run by aibench's s5cmd driver (``aibench/runners/s5cmd.py``), or a
plain ``s5cmd --json`` log.

The driver's output: ``aibench-s5cmd phase NAME start T objects N size B streams S``,
``... phase NAME end T``, then per stream ``aibench-s5cmd stream I start T``, its s5cmd
``--json`` result lines each prefixed by the time it arrived (``T {json}``; bash's
``$EPOCHREALTIME``, seconds with microseconds) and ``aibench-s5cmd stream I rc R end T``.
A result line is ``{"operation":"cp","success":true,"source":...,"destination":...,
"object":{"size":B}}``; a failure is ``{"operation":"cp","command":"cp ...","error":"..."}``
(s5cmd prints it on stderr, which the driver merges). Tested with s5cmd 2.3.0 against
Ceph 16.2 RADOS gateway, captured here.

Emitted per phase (dims ``op`` = put | get, ``object`` = large | small, ``size_bytes``):
``throughput`` (MB/s: bytes of the operations that succeeded over the phase's wall time),
``ops_rate`` (ops/s, the same over the operations), ``ops`` and ``errors`` (count),
``latency`` (ms, dim ``stat`` = mean | p50 | p90 | p99 | max) and ``wall_time`` (s).

Latency: s5cmd runs the commands of one batch file with at least two at once (its worker
pool has a floor of two, whatever ``--numworkers`` says), so each stream is a closed loop
of two: its k-th command starts when its (k-2)-th result line arrives (the first two at
the stream's start), and its latency runs from then to its own result line; the command's
place is its object number. The first two of each stream also carry s5cmd's start-up
(its first connection) and are left out of the latency figures (they count for
throughput).

Failures: any failed operation, a stream with a non-zero exit code, a phase with fewer
results than objects, or no phase at all is a ToolFailure naming the counts and the first
error; the records measured so far (errors included) travel as ``partial``.

A plain ``s5cmd --json`` log (no driver lines) gives ``ops`` and ``errors`` per
``operation`` (dim ``op``, e.g. ``cp``) and fails the same way when an operation failed.
A ``--stat`` summary (the text table or its ``--json`` lines, see
:mod:`aibench.parsers._s5cmd_stat`; s5cmd 2.3.0 against Ceph RGW captured here and a 2.0.0
table from s5cmd's issue tracker) gives ``commands`` and ``command_errors`` per operation:
counts of s5cmd commands, a wildcard copy of many objects being one; any failed command is
a ToolFailure with the records and s5cmd's first ``ERROR`` line.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from aibench.errors import ParseError, ToolFailure
from aibench.model import FrozenDims, Measurement
from aibench.parsers import Parser
from aibench.parsers._s5cmd_stat import stat_counts

TOOL = "s5cmd"
UNITS = {
    "throughput": "MB/s",
    "ops_rate": "ops/s",
    "ops": "count",
    "errors": "count",
    "latency": "ms",
    "wall_time": "s",
    "commands": "count",
    "command_errors": "count",
}
IN_FLIGHT = 2  # s5cmd's worker floor: commands of one batch at once
_PHASE = re.compile(
    r"^aibench-s5cmd phase (\S+) (start|end) ([0-9.]+)(?: objects (\d+) size (\d+))?"
)
_STREAM = re.compile(r"^aibench-s5cmd stream (\d+) (?:start ([0-9.]+)|rc (\d+) end ([0-9.]+))$")
_ERROR_LINE = re.compile(r'^ERROR (".*)$', re.MULTILINE)
_STAMPED = re.compile(r"^([0-9]+\.[0-9]+) (\{.*\})\s*$")
_OBJECT = re.compile(r"/(large|small)/(\d+)(?:\s|\"|$)")
_PHASE_NAME = re.compile(r"^(put|get)-(large|small)$")
STATS = ("mean", "p50", "p90", "p99", "max")


@dataclass
class _Stream:
    start: float
    rc: int | None = None
    results: list[tuple[float, int, bool]] = field(default_factory=list)  # time, object, ok


@dataclass
class _Phase:
    name: str
    start: float
    objects: int
    size: int
    end: float | None = None
    streams: list[_Stream] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    general: list[str] = field(default_factory=list)  # errors of s5cmd tied to no object


def parse(text: str) -> list[Measurement]:
    if "aibench-s5cmd phase " not in text:
        return _plain(text)
    phases = _read(text)
    out: list[Measurement] = []
    problems: list[str] = []
    for ph in phases:
        ms, why = _phase_records(ph)
        out += ms
        if why:
            problems.append(why)
    if not phases:
        raise ParseError(TOOL, "no phase of the s5cmd driver in the output")
    if problems:
        raise ToolFailure(TOOL, "; ".join(problems), partial=list(out))
    return out


def _read(text: str) -> list[_Phase]:
    phases: list[_Phase] = []
    cur: _Phase | None = None
    for n, line in enumerate(text.splitlines(), 1):
        m = _PHASE.match(line)
        if m:
            if m.group(2) == "start":
                if not _PHASE_NAME.match(m.group(1)) or m.group(4) is None:
                    raise ParseError(TOOL, f"line {n}: unknown phase: {line[:120]}")
                t = _time(m.group(3), n)
                cur = _Phase(m.group(1), t, int(m.group(4)), int(m.group(5)))
                phases.append(cur)
            elif cur is not None:
                cur.end = _time(m.group(3), n)
            continue
        if cur is None:
            continue
        s = _STREAM.match(line)
        if s:
            if s.group(2) is not None:
                cur.streams.append(_Stream(_time(s.group(2), n)))
            elif cur.streams:
                cur.streams[-1].rc = int(s.group(3))
            continue
        r = _STAMPED.match(line)
        if r and cur.streams:
            _result(cur, float(r.group(1)), _json(r.group(2), n), n)
    return phases


def _time(text: str, n: int) -> float:
    """A time stamp of the driver script (``date +%s.%N``): digits and one point."""
    try:
        return float(text)
    except ValueError:
        raise ParseError(TOOL, f"line {n}: not a time stamp: {text[:40]!r}") from None


def _json(text: str, n: int) -> dict[str, Any]:
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ParseError(TOOL, f"line {n}: invalid JSON ({exc.msg})") from None
    if not isinstance(doc, dict):
        raise ParseError(TOOL, f"line {n}: not a JSON object")
    return doc


def _result(ph: _Phase, t: float, doc: dict[str, Any], n: int) -> None:
    ok = doc.get("success") is True
    where = " ".join(str(doc.get(k, "")) for k in ("destination", "source", "command"))
    m = _OBJECT.search(where + " ")
    if m is None and "error" in doc and "operation" not in doc:  # s5cmd's own, no object
        ph.general.append(str(doc["error"]).replace("\n", " ")[:120])
        return
    if m is None:
        raise ParseError(TOOL, f"line {n}: no object number in the result: {where[:120]}")
    if not ok:
        ph.errors.append(str(doc.get("error", "failed"))[:120])
    ph.streams[-1].results.append((t, int(m.group(2)), ok))


def _phase_records(ph: _Phase) -> tuple[list[Measurement], str]:
    op, obj = _PHASE_NAME.match(ph.name).groups()  # type: ignore[union-attr]
    dims = {"op": op, "object": obj, "size_bytes": ph.size}
    ok = sum(1 for s in ph.streams for r in s.results if r[2])
    failed = len(ph.errors)
    silent = ph.objects - ok - failed
    errors = failed + max(silent, 0)
    out = [_m("ops", ok, dims), _m("errors", errors, dims)]
    problems = []
    if ph.end is not None and ph.end > ph.start:
        wall = ph.end - ph.start
        out += [
            _m("wall_time", wall, dims),
            _m("throughput", ok * ph.size / wall / 1e6, dims),
            _m("ops_rate", ok / wall, dims),
        ]
    else:
        problems.append(f"{ph.name}: the phase never ended")
    lat = _latencies(ph)
    if lat:
        out += [_m("latency", v * 1e3, {**dims, "stat": k}) for k, v in _stats(lat).items()]
    if failed:
        problems.append(f"{ph.name}: {failed} of {ph.objects} operations failed ({ph.errors[0]})")
    elif ph.general:
        problems.append(f"{ph.name}: {ph.general[0]}")
    if silent > 0:
        problems.append(f"{ph.name}: {silent} of {ph.objects} operations never reported")
    bad_rc = [str(i) for i, s in enumerate(ph.streams) if s.rc != 0]
    if bad_rc and not failed:
        problems.append(f"{ph.name}: stream(s) {', '.join(bad_rc)} exited non-zero or never ended")
    return out, "; ".join(problems)


def _latencies(ph: _Phase) -> list[float]:
    """Seconds per successful operation after the first IN_FLIGHT of each stream."""
    out: list[float] = []
    for s in ph.streams:
        order = sorted(r[1] for r in s.results)  # the stream's objects in command order
        rank = {obj: k for k, obj in enumerate(order)}
        times = sorted(r[0] for r in s.results)
        for t, obj, ok in s.results:
            k = rank[obj]
            if ok and k >= IN_FLIGHT:
                out.append(t - times[k - IN_FLIGHT])
    return out


def _stats(values: list[float]) -> dict[str, float]:
    xs = sorted(values)

    def pct(p: float) -> float:  # nearest rank
        return xs[max(0, math.ceil(p / 100 * len(xs)) - 1)]

    return {
        "mean": sum(xs) / len(xs),
        "p50": pct(50),
        "p90": pct(90),
        "p99": pct(99),
        "max": xs[-1],
    }


def _m(metric: str, value: float, dims: dict[str, Any]) -> Measurement:
    return Measurement(TOOL, metric, float(value), UNITS[metric], FrozenDims(dims))


def _plain(text: str) -> list[Measurement]:
    ok, bad, first = _json_results(text)
    stats = stat_counts(text)
    if not ok and not bad and not stats:
        raise ParseError(TOOL, "no s5cmd --json result line and no --stat table in the output")
    out = [
        _m(metric, count[op], {"op": op})
        for op in sorted(set(ok) | set(bad))
        for metric, count in (("ops", ok), ("errors", bad))
    ]
    for op, (done, failed) in sorted(stats.items()):
        out += [_m("commands", done, {"op": op}), _m("command_errors", failed, {"op": op})]
    failures = [f"{sum(bad.values())} operations failed"] if bad else []
    failures += [f"{f} {op} commands failed" for op, (_d, f) in sorted(stats.items()) if f]
    if failures:
        first = first or next((m.group(1) for m in _ERROR_LINE.finditer(text)), "")
        why = "; ".join(failures) + (f" ({first[:200]})" if first else "")
        raise ToolFailure(TOOL, why, partial=list[object](out))
    return out


def _json_results(text: str) -> tuple[Counter[str], Counter[str], str]:
    """Per operation, the ``--json`` result lines that succeeded and failed; the first error."""
    ok: Counter[str] = Counter()
    bad: Counter[str] = Counter()
    first = ""
    for n, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line.startswith("{"):
            continue
        doc = _json(line, n)
        op = str(doc.get("operation", ""))
        if isinstance(doc.get("success"), bool) or ("error" in doc and "command" in doc):
            if doc.get("success") is True:
                ok[op] += 1
            else:
                bad[op] += 1
                first = first or str(doc.get("error", ""))[:200]
    return ok, bad, first


def detect(text: str) -> bool:
    head = text[:4000]
    return "aibench-s5cmd " in head or bool(
        re.search(r'^\{"operation":"(cp|mb|rm|mv)","(success|command)"', head, re.M)
        or re.search(r"^Operation\tTotal\tError\tSuccess\t?$", text, re.M)
    )


PARSER = Parser(TOOL, parse, "s5cmd S3 load: throughput, ops/s, latency, errors", detect)
