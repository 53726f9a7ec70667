"""metadata-failover: a metadata server stopped under a metadata workload, as run by
aibench's metadata-failover runner (``aibench/runners/metadata_failover.py``).

The text is the workload's output on the client node followed by the output of the stop
process on the metadata server's host (the runner's ``collect`` puts them together):

* ``aibench-mdload start T``: the create loop began (T: seconds since the epoch);
* ``aibench-mdload bins T C0 C1 ...``: operations completed in each second from T on;
* ``aibench-mdload gap FROM TO``: the longest intervals without a completed operation
  (at most five, longest first; the first may start at the start of the loop);
* ``aibench-mdload errno NAME N``: operations that failed, by errno;
* ``aibench-mdload end T ops N errors E last TL blocked yes|no``: the loop's end, its
  totals, its last completed operation, and whether an operation was still blocked;
* ``aibench-failover stop T rc R``: when the stop command ran on the MDS host, its exit
  code (its own output, if any, comes before).

Emitted: ``stall`` (s): the longest interval without a completed operation that ends
after the stop; ``takeover`` (s): from the stop to the end of that interval (the first
operation the standby served); ``ops_rate`` (ops/s, dim ``phase`` = before | after: the
whole seconds up to five before the stop and after the takeover); ``ops`` and ``errors``
(count). ``takeover`` compares the MDS host's clock with the client's: on two hosts it is
as good as their time synchronisation.

Failures (ToolFailure, what was read in ``partial``): no stop line (the stop never ran),
a stop command that failed, no operation completed before the stop (the workload started
too late), no operation completed after it (the file system never served again while the
workload ran), no end line (the workload was cut short).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from aibench.errors import ParseError, ToolFailure
from aibench.model import FrozenDims, Measurement
from aibench.parsers import Parser

TOOL = "metadata-failover"
UNITS = {"stall": "s", "takeover": "s", "ops_rate": "ops/s", "ops": "count", "errors": "count"}
WINDOW = 5  # seconds of rate before the stop and after the takeover
_NUM = r"([0-9]+(?:\.[0-9]+)?)"
_START = re.compile(rf"^aibench-mdload start {_NUM}$")
_BINS = re.compile(rf"^aibench-mdload bins {_NUM}((?: \d+)*)$")
_GAP = re.compile(rf"^aibench-mdload gap {_NUM} {_NUM}$")
_ERRNO = re.compile(r"^aibench-mdload errno (\S+) (\d+)$")
_END = re.compile(
    rf"^aibench-mdload end {_NUM} ops (\d+) errors (\d+) last {_NUM} blocked (yes|no)$"
)
_STOP = re.compile(rf"^aibench-failover stop {_NUM} rc (-?\d+)$")


@dataclass
class _End:
    t: float
    ops: int
    errors: int
    last: float  # the last completed operation
    blocked: bool


@dataclass
class _Got:
    """What the lines of one run say."""

    start: float | None = None
    bins: tuple[float, list[int]] | None = None
    gaps: list[tuple[float, float]] = field(default_factory=list)
    end: _End | None = None
    stop: tuple[float, int] | None = None  # when, exit code


def parse(text: str) -> list[Measurement]:
    got = _read(text)
    if got.start is None:
        raise ParseError(TOOL, "no workload start line (aibench-mdload start ...)")
    if got.end is None:
        raise ToolFailure(TOOL, "the metadata workload was cut short (no end line)")
    end = got.end
    counts = [
        Measurement(TOOL, "ops", float(end.ops), "count", FrozenDims({})),
        Measurement(TOOL, "errors", float(end.errors), "count", FrozenDims({})),
    ]
    t_stop = _stop_time(got, end, counts)
    after = [g for g in got.gaps if g[1] > t_stop]
    if not after:
        raise ParseError(TOOL, "no interval between operations ends after the stop")
    g_from, g_to = max(after, key=lambda g: g[1] - g[0])
    out = [
        Measurement(TOOL, "stall", g_to - g_from, "s", FrozenDims({})),
        Measurement(TOOL, "takeover", g_to - t_stop, "s", FrozenDims({})),
    ]
    return out + _rates(got.bins, t_stop, g_to, end.t) + counts


def _stop_time(got: _Got, end: _End, counts: list[Measurement]) -> float:
    """When the stop ran; a ToolFailure (``counts`` as partial) when it did not run, failed,
    came before the workload, or was never followed by a completed operation."""
    partial = list[object](counts)
    if got.stop is None:
        why = "the stop command never ran (no aibench-failover stop line)"
        raise ToolFailure(TOOL, why, partial=partial)
    t_stop, rc = got.stop
    if rc != 0:
        raise ToolFailure(TOOL, f"the stop command failed (exit {rc})", partial=partial)
    if got.start is not None and got.start >= t_stop:
        why = "the stop came before the workload's first operation: raise stop_after"
        raise ToolFailure(TOOL, why, partial=partial)
    if end.last <= t_stop:
        why = f"no metadata operation completed after the stop ({end.t - t_stop:.1f} s)"
        raise ToolFailure(TOOL, why, partial=partial)
    return t_stop


def _read(text: str) -> _Got:
    got = _Got()
    for n, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if m := _START.match(line):
            got.start = float(m[1])
        elif m := _BINS.match(line):
            got.bins = (float(m[1]), [int(c) for c in m[2].split()])
        elif m := _GAP.match(line):
            got.gaps.append((float(m[1]), float(m[2])))
        elif m := _END.match(line):
            got.end = _End(float(m[1]), int(m[2]), int(m[3]), float(m[4]), m[5] == "yes")
        elif m := _STOP.match(line):
            got.stop = (float(m[1]), int(m[2]))
        elif line.startswith(("aibench-mdload ", "aibench-failover stop")) and not _ERRNO.match(
            line
        ):
            raise ParseError(TOOL, f"line {n}: not a line of the failover workload: {line!r}", n)
    return got


def _rates(
    bins: tuple[float, list[int]] | None, t_stop: float, t_back: float, t_end: float
) -> list[Measurement]:
    """ops/s over the whole seconds (up to WINDOW) before the stop and after the takeover
    (a second cut by the stop, the takeover or the loop's end is left out)."""
    if bins is None:
        return []
    t0, counts = bins
    whole = [(t0 + i, c) for i, c in enumerate(counts) if t0 + i + 1 <= t_end]
    before = [c for t, c in whole if t_stop - WINDOW <= t and t + 1 <= t_stop]
    after = [c for t, c in whole if t_back <= t][:WINDOW]
    out = []
    for phase, window in (("before", before), ("after", after)):
        if window:
            rate = sum(window) / len(window)
            out.append(Measurement(TOOL, "ops_rate", rate, "ops/s", FrozenDims({"phase": phase})))
    return out


def detect(text: str) -> bool:
    return "aibench-mdload start " in text[:2000]


PARSER = Parser(TOOL, parse, "metadata-server failover: client stall and takeover time", detect)
