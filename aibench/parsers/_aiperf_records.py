"""AIPerf per-request records (``profile_export.jsonl``) and the failover timeline.

Each line is one request: ``metadata.request_start_ns`` / ``request_end_ns`` (wall clock,
ns since the epoch), ``metrics.request_latency.value`` (ms, successful requests) and, for
a failed one, ``error`` (``code``, ``type``, ``message``). Tested on AIPerf 0.13.0.

``failover_records(requests, stop, start)`` turns them, with the time a backend was
stopped (and started again), into Measurements (tool ``aiperf``):

* ``failover_errors`` (count, dim ``kind``): failed requests that ended after the stop;
* ``failover_error_rate`` (%): failed requests among all requests of the run;
* ``recovery_time`` (s): from the stop to the end of the last failed request after it
  (0 when none failed: the balancer hid the failure);
* ``backend_down_time`` (s): from the stop to the start command, when it ran;
* ``timeline_requests``, ``timeline_errors`` (count) and ``timeline_latency`` (ms, mean
  of the successful requests) per second, dim ``t`` = whole seconds from the stop (by
  the request's start).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

from aibench.errors import ParseError
from aibench.model import FrozenDims, Measurement
from aibench.parsers.aiperf import TOOL, error_kind


@dataclass(frozen=True)
class Request:
    start_s: float
    end_s: float
    latency_ms: float | None  # None for a failed request
    error: str | None  # kind, None when it succeeded


def read_jsonl(text: str) -> list[Request]:
    out: list[Request] = []
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            doc = json.loads(line)
            meta = doc["metadata"]
            start = int(meta["request_start_ns"]) / 1e9
            end = int(meta.get("request_end_ns") or meta["request_start_ns"]) / 1e9
        except (ValueError, KeyError, TypeError) as exc:
            raise ParseError(TOOL, f"not an AIPerf request record ({exc})", line=n) from None
        err = doc.get("error")
        if isinstance(err, dict):
            out.append(Request(start, end, None, error_kind(err)))
            continue
        lat = (doc.get("metrics") or {}).get("request_latency") or {}
        value = lat.get("value")
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise ParseError(TOOL, "a request without error has no request_latency", line=n)
        out.append(Request(start, end, float(value), None))
    return out


def failover_records(
    requests: list[Request], stop: float, start: float | None
) -> list[Measurement]:
    def m(metric: str, value: float, unit: str, **dims: str | int) -> Measurement:
        return Measurement(TOOL, metric, value, unit, FrozenDims(dims))

    failed_after = [r for r in requests if r.error is not None and r.end_s >= stop]
    kinds: dict[str, int] = {}
    for r in failed_after:
        kinds[str(r.error)] = kinds.get(str(r.error), 0) + 1
    out = [m("failover_errors", float(n), "count", kind=k) for k, n in sorted(kinds.items())]
    out.append(m("failover_errors", float(len(failed_after)), "count", kind="all"))
    n_failed = sum(1 for r in requests if r.error is not None)
    rate = 100.0 * n_failed / len(requests) if requests else 0.0
    out.append(m("failover_error_rate", rate, "%"))
    last = max((r.end_s for r in failed_after), default=stop)
    out.append(m("recovery_time", last - stop, "s"))
    if start is not None:
        out.append(m("backend_down_time", start - stop, "s"))
    bins: dict[int, list[Request]] = {}
    for r in requests:
        bins.setdefault(math.floor(r.start_s - stop), []).append(r)
    for t in sorted(bins):
        rs = bins[t]
        ok = [r.latency_ms for r in rs if r.latency_ms is not None]
        out.append(m("timeline_requests", float(len(rs)), "count", t=t))
        out.append(m("timeline_errors", float(len(rs) - len(ok)), "count", t=t))
        if ok:
            out.append(m("timeline_latency", sum(ok) / len(ok), "ms", t=t))
    return out
