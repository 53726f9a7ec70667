"""iperf3 ``-J`` documents (and the events of ``--json-stream``) to Measurements."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

from aibench.errors import OutputError, ParseError, ToolFailure
from aibench.model import FrozenDims, Measurement, Scalar

TOOL = "iperf3"
_DOC_START = re.compile(r"^[ \t]*\{", re.MULTILINE)
NO_DATAGRAMS = "the UDP receiver counted 0 datagrams: nothing arrived, so there is no loss figure"


def _num(obj: Mapping[str, Any], key: str, what: str, line: int | None) -> float:
    value = obj.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ParseError(TOOL, f"{what}.{key} is not a number: {value!r}", line=line)
    f = float(value)
    if not math.isfinite(f):
        raise ParseError(TOOL, f"{what}.{key} is not finite", line=line)
    return f


def _m(metric: str, value: float, unit: str, dims: Mapping[str, Scalar]) -> Measurement:
    return Measurement(tool=TOOL, metric=metric, value=value, unit=unit, dims=FrozenDims(dims))


def test_dims(start: Any, line: int | None) -> dict[str, Scalar]:
    """``protocol``, ``streams``, ``reverse`` (and ``bidir``) from ``start.test_start``."""
    if not isinstance(start, Mapping):
        return {}
    ts = start.get("test_start")
    if not isinstance(ts, Mapping):
        return {}
    dims: dict[str, Scalar] = {}
    proto = ts.get("protocol")
    if isinstance(proto, str):
        dims["protocol"] = proto.lower()
    if "num_streams" in ts:
        dims["streams"] = int(_num(ts, "num_streams", "start.test_start", line))
    if "reverse" in ts:
        dims["reverse"] = bool(_num(ts, "reverse", "start.test_start", line))
    if "bidir" in ts:
        dims["bidir"] = bool(_num(ts, "bidir", "start.test_start", line))
    return dims


def _sum_records(
    s: Mapping[str, Any],
    side: str,
    dims: Mapping[str, Scalar],
    udp: bool,
    what: str,
    line: int | None,
) -> list[Measurement]:
    d = {**dims, "side": side}
    out = [_m("throughput", _num(s, "bits_per_second", what, line), "bit/s", d)]
    if "bytes" in s:
        out.append(_m("bytes", _num(s, "bytes", what, line), "B", d))
    if "retransmits" in s and side == "sender":
        out.append(_m("retransmits", _num(s, "retransmits", what, line), "count", d))
    if udp and side == "receiver":
        for key, metric, unit in (
            ("jitter_ms", "jitter", "ms"),
            ("lost_packets", "lost_packets", "count"),
            ("packets", "packets", "count"),
            ("lost_percent", "lost_percent", "%"),
        ):
            if key in s:
                out.append(_m(metric, _num(s, key, what, line), unit, d))
    elif udp and "packets" in s:
        out.append(_m("packets", _num(s, "packets", what, line), "count", d))
    return out


def end_records(doc: Mapping[str, Any], line: int | None) -> list[Measurement]:
    """The records of a finished test: the ``end`` object's sums and per-stream rates."""
    dims = test_dims(doc.get("start"), line)
    end = doc.get("end")
    if end is None:
        return []
    if not isinstance(end, Mapping):
        raise ParseError(TOOL, '"end" is not an object', line=line)
    udp = dims.get("protocol") == "udp" or "sum" in end
    start = doc.get("start")
    server = isinstance(start, Mapping) and "accepted_connection" in start
    bidir = bool(dims.get("bidir")) or "sum_sent_bidir_reverse" in end
    if bidir:
        dims["bidir"] = True
    out = _sum_records_of(end, dims, udp, server, bidir, line)
    if udp and any(
        r.metric == "packets" and r.dims.get("side") == "receiver" and r.value == 0 for r in out
    ):
        # iperf3 writes lost_percent 0 when it received nothing: that is no loss figure
        partial: list[object] = [r for r in out if r.metric != "lost_percent"]
        raise ToolFailure(TOOL, NO_DATAGRAMS, line=line, partial=partial)
    out.extend(_cpu_records(end, dims, server, line))
    out.extend(_stream_records(end, dims, server, bidir, line))
    return out


def _sum_records_of(
    end: Mapping[str, Any],
    dims: dict[str, Scalar],
    udp: bool,
    server: bool,
    bidir: bool,
    line: int | None,
) -> list[Measurement]:
    """The test's totals: the ``sum_sent``/``sum_received`` objects (and their
    ``_bidir_reverse`` twins), or the one ``sum`` of an iperf3 < 3.12 UDP test."""
    out: list[Measurement] = []
    sums: list[tuple[str, str, str]] = [
        ("sum_sent", "sender", "forward"),
        ("sum_received", "receiver", "forward"),
    ]
    if bidir:
        sums += [
            ("sum_sent_bidir_reverse", "sender", "reverse"),
            ("sum_received_bidir_reverse", "receiver", "reverse"),
        ]
    found = False
    for key, side, direction in sums:
        s = end.get(key)
        if s is None:
            continue
        if not isinstance(s, Mapping):
            raise ParseError(TOOL, f"end.{key} is not an object", line=line)
        found = True
        if server and _num(s, "bytes", f"end.{key}", line) == 0:
            continue  # the server's JSON holds a zero "sum_sent" when it only received
        d = {**dims, "direction": direction} if bidir else dims
        out.extend(_sum_records(s, side, d, udp, f"end.{key}", line))
    if not found and isinstance(end.get("sum"), Mapping):
        out.extend(_udp_sum_records(end["sum"], dims, line))
    return out


def _udp_sum_records(
    s: Mapping[str, Any], dims: dict[str, Scalar], line: int | None
) -> list[Measurement]:
    """iperf3 < 3.12 UDP: one ``sum`` with the sender's rate and the receiver's losses."""
    sender = {**dims, "side": "sender"}
    out = [_m("throughput", _num(s, "bits_per_second", "end.sum", line), "bit/s", sender)]
    if "bytes" in s:
        out.append(_m("bytes", _num(s, "bytes", "end.sum", line), "B", sender))
    out.extend(
        r
        for r in _sum_records(s, "receiver", dims, True, "end.sum", line)
        if r.metric not in ("throughput", "bytes")
    )
    return out


def _stream_records(
    end: Mapping[str, Any], dims: dict[str, Scalar], server: bool, bidir: bool, line: int | None
) -> list[Measurement]:
    """``stream_throughput`` of each stream of ``end.streams``, per side it reports."""
    out: list[Measurement] = []
    streams = end.get("streams", [])
    if not isinstance(streams, list):
        raise ParseError(TOOL, "end.streams is not a list", line=line)
    for i, st in enumerate(streams):
        if not isinstance(st, Mapping):
            raise ParseError(TOOL, f"end.streams[{i}] is not an object", line=line)
        for side in ("sender", "receiver", "udp"):
            part = st.get(side)
            if part is None:
                continue
            what = f"end.streams[{i}].{side}"
            if not isinstance(part, Mapping):
                raise ParseError(TOOL, f"{what} is not an object", line=line)
            sd: dict[str, Scalar] = {**dims, "stream": int(_num(part, "socket", what, line))}
            if side == "udp":
                # A UDP stream has one object, seen from its sender or its receiver.
                sd["side"] = "sender" if part.get("sender", True) is True else "receiver"
            else:
                sd["side"] = side
            if bidir:
                # In a --bidir test each stream says whether the writer of the
                # document (the client, for -c) sent on it.
                sd["direction"] = "forward" if part.get("sender", True) is True else "reverse"
            if server and _num(part, "bytes", what, line) == 0:
                continue  # a server's half of the exchange that it did not see
            out.append(
                _m("stream_throughput", _num(part, "bits_per_second", what, line), "bit/s", sd)
            )
            out.extend(_stream_extras(part, sd, what, line))
    return out


# A TCP sender's round-trip times (Linux, iperf 3.1+), in microseconds as iperf3 writes them.
_RTT_KEYS = (
    ("mean_rtt", "stream_rtt_mean"),
    ("min_rtt", "stream_rtt_min"),
    ("max_rtt", "stream_rtt_max"),
)


def _stream_extras(
    part: Mapping[str, Any], sd: Mapping[str, Scalar], what: str, line: int | None
) -> list[Measurement]:
    """A stream's ``stream_bytes`` (B) and, on a TCP sender, ``stream_rtt_mean`` /
    ``_min`` / ``_max`` (us)."""
    out = []
    if "bytes" in part:
        out.append(_m("stream_bytes", _num(part, "bytes", what, line), "B", sd))
    for key, metric in _RTT_KEYS:
        if key in part:
            out.append(_m(metric, _num(part, key, what, line), "us", sd))
    return out


def _cpu_records(
    end: Mapping[str, Any], dims: Mapping[str, Scalar], server: bool, line: int | None
) -> list[Measurement]:
    """``cpu_utilization`` (%, dim ``cpu`` = host | remote): iperf3's
    ``cpu_utilization_percent`` totals. A server's document has no figure for its client
    (it writes 0 there), so the remote one is read from a client's document only."""
    cpu = end.get("cpu_utilization_percent")
    if not isinstance(cpu, Mapping):
        return []
    where = "end.cpu_utilization_percent"
    sides = ("host",) if server else ("host", "remote")
    return [
        _m("cpu_utilization", _num(cpu, f"{side}_total", where, line), "%", {**dims, "cpu": side})
        for side in sides
        if f"{side}_total" in cpu
    ]


def parse_document(doc: Any, line: int | None) -> list[Measurement]:
    if not isinstance(doc, Mapping):
        raise ParseError(TOOL, "JSON document is not an object", line=line)
    err = doc.get("error")
    if err is not None:
        partial: list[object] = []
        try:
            partial = list(end_records(doc, line))
        except ToolFailure as exc:
            partial = exc.partial
        except ParseError:
            pass
        raise ToolFailure(TOOL, str(err), line=line, partial=partial)
    if "end" not in doc:
        raise ParseError(TOOL, 'JSON document has no "end" object', line=line)
    recs = end_records(doc, line)
    if not recs:
        raise ParseError(TOOL, '"end" holds no results', line=line)
    return recs


def parse_json(text: str) -> list[Measurement]:
    """One ``-J`` document, after any non-JSON lines; a second document after it (two
    runs appended to one log) is a ParseError, not the first run's numbers."""
    start = text.find("{")
    if start < 0:
        raise ParseError(TOOL, "no JSON object in the output", line=None)
    first = text.count("\n", 0, start) + 1
    decoder = json.JSONDecoder()
    try:
        doc, end = decoder.raw_decode(text, start)
    except json.JSONDecodeError as exc:
        line = text.count("\n", 0, exc.pos) + 1
        raise ParseError(TOOL, f"invalid or truncated JSON: {exc.msg}", line=line) from None
    if second := _DOC_START.search(text, end):
        line = text.count("\n", 0, second.start()) + 1
        raise ParseError(TOOL, _runs(f"a second JSON document starts at line {line}"), line=line)
    return parse_document(doc, first)


def _runs(what: str) -> str:
    return f"{what}: the output holds more than one iperf3 run; parse each run's output alone"


def parse_stream(text: str) -> list[Measurement]:
    """``--json-stream`` (iperf3 3.17+): one ``{"event": ..., "data": ...}`` per line.

    ``start`` carries the document's ``start`` object, ``end`` its ``end`` object and
    ``error`` the message; ``interval`` events are read for validity only. An output
    without an ``end`` event was cut: a ParseError naming its last line. An ``error``
    event is a ToolFailure in iperf3's words; iperf3 3.21 still writes an ``end`` event
    after it (empty when it could not connect; the totals of the part that ran when it
    was interrupted): what that event holds is the ``partial``.
    """
    doc: dict[str, Any] = {}
    last = 0
    records: list[Measurement] = []
    error: tuple[int, str] | None = None
    for no, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line:
            continue
        last = no
        try:
            ev = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ParseError(TOOL, f"invalid JSON event: {exc.msg}", line=no) from None
        if not isinstance(ev, Mapping) or not isinstance(ev.get("event"), str):
            raise ParseError(TOOL, 'a JSON event needs an "event" name', line=no)
        kind, data = ev["event"], ev.get("data")
        if kind == "start":
            if "start" in doc:
                raise ParseError(TOOL, _runs('a second "start" event'), line=no)
            doc["start"] = data
        elif kind == "end":
            doc["end"] = data
            if error is not None:
                records = _partial_end(doc, no)
                continue
            records = end_records(doc, no)
            if not records:
                raise ParseError(TOOL, 'the "end" event holds no results', line=no)
        elif kind == "error":
            if error is None:
                error = (no, str(data))
        elif kind == "interval" and not isinstance(data, Mapping):
            raise ParseError(TOOL, "interval event without data", line=no)
    if error is not None:
        raise ToolFailure(TOOL, error[1], line=error[0], partial=list(records))
    if "end" not in doc:
        raise ParseError(TOOL, 'output ends before the "end" event (cut?)', line=last or None)
    return records


def _partial_end(doc: dict[str, Any], no: int) -> list[Measurement]:
    """The results of an ``end`` event that follows an ``error`` one: none when it is
    empty (the test never ran), and none when it cannot be read (the error is the news)."""
    if not doc.get("end"):
        return []
    try:
        return end_records(doc, no)
    except OutputError:
        return []
