"""iperf2 (``iperf``, 2.0.x and 2.1.x): network throughput, text and CSV output.

Reads the output of ``iperf -c HOST`` and ``iperf -s`` in the classic text format, the
enhanced format (``-e``: ``Write/Err Rtry Cwnd/RTT`` for TCP clients, latency columns for
UDP servers), and the CSV format (``-y C``: 9 fields for TCP, 14 for UDP). Tested on
iperf 2.0.5-2.0.9 output, a 2.1.x client whose server received nothing, and iperf 2.1.8
captured on loopback.

iperf2 prints interval lines and, per stream, a final line covering the whole test
(``0.0-10.0 sec``); with ``-P`` also ``[SUM]`` lines (CSV: stream id -1). Only the final
lines are read: a stream without one (output cut after an interval) is a ParseError.

Emitted:

* ``throughput`` (bit/s): the ``[SUM]`` final line, or the single stream's; with several
  streams and no SUM line (iperf 2.1 CSV), the sum of the streams' final rates;
* ``bytes`` (B): the Transfer of the ``[SUM]`` final line, or the single stream's, or the
  sum of the streams'; ``stream_throughput`` (bit/s, dim ``stream`` = iperf's stream id)
  and ``stream_bytes`` (B); iperf's KBytes/MBytes are powers of 1024;
* enhanced TCP client (``-e``), per stream: ``stream_writes`` and ``stream_write_errors``
  (count, the ``Write/Err`` column), ``stream_rtt`` (us, the ``Cwnd/RTT`` column's RTT) and
  ``stream_netpwr`` (score, the ``NetPwr`` column of 2.0.10+);
* ``retransmits`` (count, enhanced TCP client: the ``Rtry`` column, summed over streams
  when there is no SUM line);
* UDP: ``packets`` (sender: "Sent N datagrams"; receiver: Total), and for the receiver
  (a server's output, or the "Server Report" a client prints) ``jitter`` (ms),
  ``lost_packets`` (count), ``lost_percent`` (%).

Dims: ``protocol`` (tcp | udp), ``streams`` (int), ``side`` (sender for a client's own
lines, receiver for a server's and for a Server Report; omitted for TCP CSV, which does
not say which end wrote it). Text rates are iperf's rounded figures (three significant
digits); CSV rates are exact integers. iperf2's ``Kbits``/``Mbits`` are powers of 1000.

Errors such as ``tcp connect failed: Connection refused`` are a ToolFailure in iperf's
words, whose partial is what the rest of the output measured: a dual test (``-d``) or
tradeoff (``-r``) whose own listener could not bind (``listener bind failed: Address
already in use``, 2.0.4's ``bind failed``) still ran its forward stream, and keeps it (tested
on iperf 2.0.4 and 2.1.8). So is a UDP
receiver report that counted no datagram (``0/0``, or iperf 2.1's ``-nan bits/sec ...
N/0 (inf%)``): nothing arrived, and there is no loss figure (never 0 %); what the sender
reported is kept as the partial records. ``N datagrams received out-of-order`` lines are
not report lines.

A test that runs both ways (``-d``/``--dualtest``, ``-r``/``--tradeoff``, and iperf 2.1's
``--full-duplex``, whose second direction is the stream ``[ *N]``) gives one record set per
direction, each with its ``side`` as seen from the host whose output it is: a stream this
host accepted on the port it listens on (``Server listening on ... port L`` and a
``local ... port L connected with`` line) is ``receiver``, one it opened to the port it
connects to is ``sender``, and ``*N`` without a line of its own is the other side of
``N``. The ``[SUM]`` line of such a test adds both directions and is not read. Tested on
iperf 2.1.8 client and server outputs of all three, captured on loopback.

The enhanced TCP client columns ``Write/Err Rtry Cwnd/RTT`` are read whatever the
congestion window (``-1K/98 us`` when the kernel gave none); a row whose columns start
like them but cannot be read is a ParseError, never a silently missing ``retransmits``.
iperf's remarks about the run (``MSS and MTU size unknown ...``, ``WARNING ...`` lines)
are returned as Notes.

iperf 2 prints nothing when it is interrupted: a client stopped by SIGINT or a timeout
prints its final line for the part that ran (``0.0000-2.5081 sec`` of a 10 s test), which
reads as a complete result (tested on iperf 2.1.8); only the step's status (timeout, exit
code) can tell.

A server's output (``iperf -s``, opening no connection of its own) in which a client
connects after the clients before it ended (or reuses a stream id, as 2.0.x servers do) holds
several clients' reports: each is read on its own, and its records carry the dims ``peer``
and ``port`` (the address and source port of its first connection). Tested on 2.1.8
servers (TCP with ``-P 2`` then one stream, UDP) and a 2.1.x server of a real LAN that
served three clients. A server that served one client keeps the records without them.

Any other output is one run. A log holding several (a second ``Client connecting to`` or
``Server listening on`` banner, a stream id that connects twice (on one side), or a
stream whose lines from 0 go back in time, e.g. ``0.0-10.0`` then ``0.0-1.0``; in CSV
also a stream id seen between other ports) is a ParseError that says so, rather than the
last run's numbers.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from fractions import Fraction

from aibench.errors import OutputError, ParseError, ToolFailure
from aibench.model import FrozenDims, Measurement, Note, Scalar
from aibench.parsers import Parser, Record
from aibench.traits import Traits
from aibench.units import factor

TOOL = "iperf2"

_NUM = r"\d+(?:\.\d+)?"
_LINE = re.compile(
    rf"^\[\s*(?P<id>\*?\d+|SUM)\]\s+(?P<t0>{_NUM})\s*-\s*(?P<t1>{_NUM})\s+sec\s+"
    rf"(?P<xfer>{_NUM})\s+(?P<xunit>[KMGT]?Bytes)\s+"
    rf"(?P<rate>{_NUM}|-?nan|-?inf)\s+(?P<runit>[KMGT]?bits/sec)(?P<rest>.*)$"
)
# A report line: interval and transfer (not "N datagrams received out-of-order").
_HEAD = re.compile(
    rf"^\[\s*(?P<id>\*?\d+|SUM)\]\s+(?P<t0>{_NUM})\s*-\s*(?P<t1>{_NUM})\s+sec\s+{_NUM}\s+[KMGT]?Bytes\s"
)
_UDP_REST = re.compile(rf"^\s+(?P<jitter>{_NUM})\s+ms\s+(?P<lost>-?\d+)/\s*(?P<total>\d+)\s+\(")
# an enhanced TCP client's Write/Err Rtry Cwnd/RTT[(var)] [NetPwr]; iperf 2.1 prints the RTT's
# variance in parentheses, 2.0.9 no NetPwr
_TCP_E_REST = re.compile(
    r"^\s+(?P<writes>\d+)/(?P<errs>\d+)\s+(?P<rtry>\d+)\s+(?P<cwnd>-?\d+)K/(?P<rtt>\d+)"
    rf"(?:\(\d+\))?\s*us(?:\s+(?P<netpwr>{_NUM}))?"
)
# iperf 2's byte units are powers of 1024 (its bit rates powers of 1000)
_BYTE_UNITS = {"Bytes": "B", "KBytes": "KiB", "MBytes": "MiB", "GBytes": "GiB", "TBytes": "TiB"}
# the start of an enhanced TCP client's columns (Write/Err Rtry): then Cwnd/RTT must follow
_TCP_E_START = re.compile(r"^\s+\d+/\d+\s+\d+\s+(?!pps\b)")  # not a UDP client's Write/Err PPS
_SENT = re.compile(r"^\[\s*(?P<id>\d+)\]\s+Sent\s+(?P<n>\d+)\s+datagrams")
_ERROR = re.compile(
    r"(?:^|\s)(?:connect|write|read|bind|listen|recv|send)\S* failed:|^iperf: error"
)
_RATE_UNITS = {
    "bits/sec": "bit/s",
    "Kbits/sec": "kbit/s",
    "Mbits/sec": "Mbit/s",
    "Gbits/sec": "Gbit/s",
    "Tbits/sec": "Tbit/s",
}
_CSV = re.compile(r"^\d{14},[^,]*,\d+,[^,]*,\d+,-?\d+,")
NO_DATAGRAMS = (
    "the UDP receiver counted 0 datagrams (Lost/Total 0/0): nothing arrived, so there is "
    "no loss figure"
)


class _NewRun(ParseError):
    """A connection after the test before it ended: another run (or, in a server's output,
    another client). ``at``: the text offset of its connection line."""

    def __init__(self, reason: str, line: int | None, at: int) -> None:
        super().__init__(TOOL, reason, line)
        self.at = at


@dataclass(frozen=True)
class _Row:
    line: int
    section: str  # unused by the text path ("")
    stream: str  # id, or "SUM"
    t0: float
    t1: float
    rate: float  # bit/s
    jitter: float | None = None
    lost: int | None = None
    total: int | None = None
    rtry: int | None = None
    xfer: float | None = None  # bytes
    enhanced: tuple[int, int, int, float | None] | None = None  # writes, errors, rtt, netpwr


def _m(metric: str, value: float, unit: str, dims: dict[str, Scalar]) -> Measurement:
    return Measurement(tool=TOOL, metric=metric, value=value, unit=unit, dims=FrozenDims(dims))


Ends = dict[str, tuple[float, int]]  # stream -> (latest interval end, its line)


def _see(ends: Ends, stream: str, t1: float, line: int) -> None:
    prev = ends.get(stream)
    if prev is None or t1 >= prev[0]:
        ends[stream] = (t1, line)


def _finals(rows: list[_Row], ends: Ends) -> dict[str, _Row]:
    """Per stream, the line covering the whole test (from 0 to the stream's latest end);
    ParseError when one is missing. ``rows`` holds the lines that start at 0."""
    out: dict[str, _Row] = {}
    for r in rows:
        if r.t1 == ends[r.stream][0]:
            out[r.stream] = r
    for sid, (end, line) in ends.items():
        if sid not in out:
            raise ParseError(
                TOOL, f"stream {sid} has no final 0-{end:g} sec line (output cut?)", line=line
            )
    return out


def _records(
    rows: list[_Row], ends: Ends, side: str | None, udp: bool, sent: dict[str, int]
) -> list[Measurement]:
    if not ends:
        return []
    finals = _finals(rows, ends)
    streams = {k: v for k, v in finals.items() if k != "SUM"}
    base: dict[str, Scalar] = {"protocol": "udp" if udp else "tcp", "streams": max(len(streams), 1)}
    if side:
        base["side"] = side
    out: list[Measurement] = []
    total = finals.get("SUM")
    if total is None and len(streams) == 1:
        total = next(iter(streams.values()))
    if total is not None:
        out.append(_m("throughput", total.rate, "bit/s", base))
    else:
        out.append(_m("throughput", sum(r.rate for r in streams.values()), "bit/s", base))
    rtry = total.rtry if total is not None and total.rtry is not None else None
    if rtry is None and streams and all(r.rtry is not None for r in streams.values()):
        rtry = sum(r.rtry or 0 for r in streams.values())
    if rtry is not None:
        out.append(_m("retransmits", float(rtry), "count", base))
    xfer = total.xfer if total is not None else None
    if xfer is None and streams and all(r.xfer is not None for r in streams.values()):
        xfer = sum(r.xfer or 0.0 for r in streams.values())
    if xfer is not None:
        out.append(_m("bytes", xfer, "B", base))
    parts = [r for r in streams.values() if r.total is not None]
    if udp and side != "sender" and ((total is not None and total.total is not None) or parts):
        if total is not None and total.total is not None:
            lost, tot, at = total.lost or 0, total.total, total.line
        else:
            lost, tot = sum(r.lost or 0 for r in parts), sum(r.total or 0 for r in parts)
            at = max(r.line for r in parts)
        if total is not None and total.jitter is not None:
            out.append(_m("jitter", total.jitter, "ms", base))
        out.append(_m("lost_packets", float(lost), "count", base))
        out.append(_m("packets", float(tot), "count", base))
        if tot == 0:
            raise ToolFailure(TOOL, NO_DATAGRAMS, line=at, partial=list(out))
        out.append(_m("lost_percent", 100.0 * lost / tot, "%", base))
    elif udp and sent:
        out.append(_m("packets", float(sum(sent.values())), "count", base))
    for sid in sorted(streams, key=int):
        out += _stream_records(streams[sid], {**base, "stream": int(sid)})
    return out


def _stream_records(r: _Row, dims: dict[str, Scalar]) -> list[Measurement]:
    """A stream's final line: ``stream_throughput``, ``stream_bytes`` and the enhanced
    client's ``stream_writes``, ``stream_write_errors``, ``stream_rtt`` (us) and
    ``stream_netpwr`` (iperf's network power, throughput over RTT)."""
    out = [_m("stream_throughput", r.rate, "bit/s", dims)]
    if r.xfer is not None:
        out.append(_m("stream_bytes", r.xfer, "B", dims))
    if r.enhanced is not None:
        writes, errors, rtt, netpwr = r.enhanced
        out.append(_m("stream_writes", float(writes), "count", dims))
        out.append(_m("stream_write_errors", float(errors), "count", dims))
        out.append(_m("stream_rtt", float(rtt), "us", dims))
        if netpwr is not None:
            out.append(_m("stream_netpwr", netpwr, "score", dims))
    return out


_TO_BITS = {u: factor(c, "bit/s") for u, c in _RATE_UNITS.items()}


def _rate(value: str, unit: str) -> float:
    f = _TO_BITS[unit]  # whole numbers: powers of 1000
    if value.isdigit():
        return float(int(value) * f.numerator)
    return float(Fraction(value) * f)


_HEAD_M = re.compile(_HEAD.pattern, re.MULTILINE)
_LINE_M = re.compile(_LINE.pattern, re.MULTILINE)
_SENT_M = re.compile(_SENT.pattern, re.MULTILINE)
_REPORT_M = re.compile(r"^\[\s*\d+\]\s+Server Report:", re.MULTILINE)
_START_M = re.compile(r"^(?:Client connecting to|Server listening on)[^\n]*", re.MULTILINE)
_CONNECTED_M = re.compile(
    r"\[\s*(?P<id>\*?\d+)\] local \S+ port (?P<lport>\d+) connected with \S+ port (?P<rport>\d+)"
)
_PEER_M = re.compile(r"connected with (?P<peer>\S+) port (?P<port>\d+)")
_LISTEN_PORT_M = re.compile(r"^Server listening on (?:TCP|UDP) port (\d+)", re.MULTILINE)
_CONNECT_PORT_M = re.compile(r"^Client connecting to \S+, (?:TCP|UDP) port (\d+)", re.MULTILINE)
# iperf's remarks about a run that qualify its numbers (kept as Notes, never dropped)
_NOTE_M = re.compile(
    r"^(?:\[\s*\*?\d+\]\s+)?(?P<text>MSS and MTU size unknown[^\n]*|WARNING[: ][^\n]*)$",
    re.MULTILINE,
)
_UDP_HEAD_M = re.compile(r"^\[ ID\][^\n]*Jitter[^\n]*Lost/Total", re.MULTILINE)


def _section(text: str, start: int, stop: int) -> tuple[list[_Row], Ends]:
    """The final lines and, per stream, the latest end (as a text offset).

    One regex pass over the text (an interval line costs one match); only the last line
    starting at 0 of each stream is read in full."""
    ends: Ends = {}
    zero: dict[str, tuple[float, int]] = {}  # stream -> latest line starting at 0
    for h in _HEAD_M.finditer(text, start, stop):
        sid, t1 = h["id"], float(h["t1"])
        prev = ends.get(sid)
        if prev is None or t1 >= prev[0]:
            ends[sid] = (t1, h.start())
            if h["t0"].strip("0.") == "":
                zero[sid] = (t1, h.start())
        elif h["t0"].strip("0.") == "" and sid in zero and t1 < zero[sid][0]:
            # a stream's lines from 0 only grow (0-1, then 0-10): it started again
            raise ParseError(TOOL, _runs(f"stream {sid} starts again at 0 sec"), line=h.start())
    rows: list[_Row] = []
    for sid, (t1, pos) in zero.items():
        m = _LINE_M.match(text, pos, stop)
        if not m or t1 != ends[sid][0]:
            continue
        rest = m["rest"]
        jitter = lost = total = rtry = None
        enhanced: tuple[int, int, int, float | None] | None = None
        if u := _UDP_REST.match(rest):
            jitter, lost, total = float(u["jitter"]), int(u["lost"]), int(u["total"])
        elif t := _TCP_E_REST.match(rest):
            rtry = int(t["rtry"])
            netpwr = float(t["netpwr"]) if t["netpwr"] else None
            enhanced = (int(t["writes"]), int(t["errs"]), int(t["rtt"]), netpwr)
        elif _TCP_E_START.match(rest):
            raise ParseError(
                TOOL, f"enhanced columns not read (Write/Err Rtry Cwnd/RTT): {rest.strip()!r}", pos
            )
        if m["rate"].lstrip("-") in ("nan", "inf"):
            if total == 0:  # iperf 2.1 prints "0.000 Bytes -nan bits/sec ... N/0 (inf%)"
                raise ToolFailure(TOOL, NO_DATAGRAMS, line=pos)
            raise ParseError(TOOL, f"rate {m['rate']} bits/sec is not a number", line=pos)
        rate = _rate(m["rate"], m["runit"])
        xfer = float(Fraction(m["xfer"]) * factor(_BYTE_UNITS[m["xunit"]], "B"))
        rows.append(_Row(pos, "", sid, 0.0, t1, rate, jitter, lost, total, rtry, xfer, enhanced))
    return rows, ends


def _parse_text(text: str) -> list[Record]:
    """The records of one iperf output: a ToolFailure keeping what ran when iperf reports
    an error, the clients of a server one by one."""
    if "failed" in text or "iperf: " in text:
        _errors(text)
    try:
        return _parse_run(text)
    except _NewRun as exc:
        starts = _line_starts(text, " connected with ", anywhere=True)
        # split only a server's output, and only where a connection comes after another
        # (each part then holds less of the output: the split ends)
        if not _server_only(text) or not starts or not starts[0] < exc.at:
            raise
        return _by_client(text, starts[0], exc.at)


def _errors(text: str) -> None:
    """iperf's error lines (``connect failed``, ``listener bind failed`` ...) are a
    ToolFailure in its words; what the rest of the output measured is its partial (a dual
    test whose listener could not bind still ran its forward stream)."""
    lines = text.splitlines(keepends=True)
    bad = [no for no, line in enumerate(lines, 1) if _ERROR.search(line)]
    if not bad:
        return
    partial: list[Record] = []
    try:
        partial = _parse_text("".join(ln for no, ln in enumerate(lines, 1) if no not in bad))
    except ToolFailure as exc:
        partial = [r for r in exc.partial if isinstance(r, Measurement | Note)]
    except ParseError:
        pass
    first = lines[bad[0] - 1].strip()
    more = f" (and {len(bad) - 1} more error lines)" if len(bad) > 1 else ""
    raise ToolFailure(TOOL, first + more, line=bad[0], partial=[*partial])


def _server_only(text: str) -> bool:
    """A server's output that opens no connection of its own (no dual test, no tradeoff)."""
    first = _START_M.search(text)
    return bool(first and first[0].startswith("Server")) and "Client connecting to" not in text


def _by_client(text: str, first: int, at: int) -> list[Record]:
    """A server that served several clients: each client's report read alone (the banner,
    then its connections and lines), its records with the dims ``peer`` and ``port`` (the
    address and port its first connection came from). ``first``: where the first
    connection line starts; ``at``: where the next client's does."""
    head = text[:first]
    shift = text.count("\n", 0, at) - head.count("\n")  # line in the rest -> in ``text``
    out: list[Record] = []
    for part, offset in ((text[:at], 0), (head + text[at:], shift)):
        peer = _PEER_M.search(part, len(head))
        try:
            records = _parse_text(part)
        except OutputError as exc:
            raise _moved(exc, offset) from None
        for r in records:
            if isinstance(r, Note):
                if offset == 0 or (r.line or 0) > head.count("\n"):
                    out.append(replace(r, line=(r.line or 0) + offset))
            elif isinstance(r, Measurement) and peer and "peer" not in r.dims:
                dims = {**r.dims, "peer": peer["peer"], "port": int(peer["port"])}
                out.append(replace(r, dims=FrozenDims(dims)))
            else:
                out.append(r)
    return out


def _moved(exc: OutputError, offset: int) -> OutputError:
    """``exc`` with its line counted in the whole output."""
    line = exc.line + offset if exc.line is not None else None
    if isinstance(exc, ToolFailure):
        return ToolFailure(TOOL, exc.reason, line=line, partial=exc.partial)
    return ParseError(TOOL, exc.reason, line=line)


def _first_banner(text: str) -> tuple[str | None, bool]:
    """The side the run's first banner names (sender, receiver or None) and whether it is UDP."""
    first = _START_M.search(text)
    udp = _UDP_HEAD_M.search(text) is not None
    if not first:
        return None, udp
    side = "sender" if first[0].startswith("Client") else "receiver"
    return side, udp or "UDP port" in first[0]


def _no_second_banner(text: str) -> None:
    """Raise ParseError at a second client or server banner: a log of several runs."""
    for banner in ("Client connecting to", "Server listening on"):
        again = _line_starts(text, banner)[1:2]
        if again:
            no = text.count("\n", 0, again[0]) + 1
            line = text[again[0] :].partition("\n")[0].strip()
            raise ParseError(TOOL, _runs(f"a second {line!r}"), line=no)


def _connected(text: str) -> dict[str, int]:
    """Stream -> offset of its "connected with" line (a stream connecting twice: a new run)."""
    connected: dict[str, int] = {}
    for pos in _line_starts(text, " connected with ", anywhere=True):
        c = _CONNECTED_M.match(text, pos)
        if not c:
            continue
        if c["id"] in connected:
            no = text.count("\n", 0, pos) + 1
            raise _NewRun(_runs(f"stream {c['id']} connects a second time"), no, pos)
        connected[c["id"]] = pos
    return connected


def _notes(text: str) -> list[Note]:
    """iperf's warnings (MSS and MTU, WARNING lines) as notes, with their line."""
    if "MSS and MTU" not in text and "WARNING" not in text:
        return []
    return [
        Note(TOOL, m["text"].strip(), line=text.count("\n", 0, m.start()) + 1)
        for m in _NOTE_M.finditer(text)
    ]


def _parse_run(text: str) -> list[Record]:
    side, udp = _first_banner(text)
    _no_second_banner(text)
    connected = _connected(text)
    report = _REPORT_M.search(text)
    split = report.start() if report else len(text)
    sent = {m["id"]: int(m["n"]) for m in _SENT_M.finditer(text, 0, split)}
    out: list[Record] = []
    try:
        own_rows, own_ends = _section(text, 0, split)
        sides = _sides(text, own_ends, connected, side)
        if set(sides.values()) - {side} or any(k.startswith("*") for k in own_ends):
            # both ways, a reversed test (-R) or iperf 2.1's *N streams: by the sides found
            out = [*_two_way(text, own_rows, own_ends, connected, sides, udp, sent)]
        else:
            _one_test(text, own_rows, connected)
            out = [*_records(own_rows, own_ends, side, udp, sent)]
        rep_ends: Ends = {}
        if report:
            rep_rows, rep_ends = _section(text, split, len(text))
            out += _records(rep_rows, rep_ends, "receiver", udp, {})
    except OutputError as exc:  # its line is a text offset here
        no = text.count("\n", 0, exc.line or 0) + 1
        if isinstance(exc, ToolFailure):
            raise ToolFailure(TOOL, exc.reason, line=no, partial=out + exc.partial) from None
        if isinstance(exc, _NewRun):
            raise _NewRun(exc.reason, no, exc.at) from None
        raise ParseError(TOOL, exc.reason, line=no) from None
    if not own_ends and not rep_ends:
        raise ParseError(TOOL, "no report lines ([ID] interval sec transfer bandwidth)")
    return out + _notes(text)


def _sides(text: str, ends: Ends, connected: dict[str, int], default: str | None) -> dict[str, str]:
    """Per stream id, the side of this host: ``sender`` for a stream it sends, ``receiver``
    for one it receives.

    A stream whose ``connected with`` line has a local port this output listens on was
    accepted here (receiver); one whose remote port is the port this output connects to
    was opened from here (sender); a connection marked ``(reverse)`` (``-R``) carries the
    other way, unless its data lines are the ``*N`` of iperf 2.1, which already stand for
    the reversed direction. ``*N`` without a line of its own (``-R`` on the client,
    ``--full-duplex``) is the other side of connection ``N``. Otherwise the side of the
    output's first banner. A stream whose side cannot be told is left out (the caller
    decides)."""
    listen = {int(p) for p in _LISTEN_PORT_M.findall(text)}
    connect = {int(p) for p in _CONNECT_PORT_M.findall(text)}
    other = {"sender": "receiver", "receiver": "sender"}
    by_ports: dict[str, str] = {}
    reverse: set[str] = set()
    for sid, pos in connected.items():
        c = _CONNECTED_M.match(text, pos)
        if c is None:
            continue
        if int(c["lport"]) in listen:
            by_ports[sid] = "receiver"
        elif int(c["rport"]) in connect:
            by_ports[sid] = "sender"
        if "(reverse)" in text[c.end() : text.find("\n", c.end())]:
            reverse.add(sid)
    out: dict[str, str] = {}
    for sid in ends:
        if sid == "SUM":
            continue
        side: str | None
        if sid in connected:
            side = by_ports.get(sid, default)
            if side is not None and sid in reverse and not sid.startswith("*"):
                side = other[side]
        elif sid.startswith("*"):
            twin = by_ports.get(sid[1:], default)
            side = other[twin] if twin is not None else None
        else:
            side = default
        if side is not None:
            out[sid] = side
    return out


def _two_way(
    text: str,
    rows: list[_Row],
    ends: Ends,
    connected: dict[str, int],
    sides: dict[str, str],
    udp: bool,
    sent: dict[str, int],
) -> list[Measurement]:
    """Records per direction of a test that ran both ways (``-d``/``--dualtest``,
    ``-r``/``--tradeoff``, ``--full-duplex``), or of iperf 2.1's ``-R`` whose streams are
    ``*N`` or whose connection is marked ``(reverse)``: each side its own throughput,
    streams and retransmits. The ``[SUM]`` line of a test both ways adds the two
    directions: not read (it is, for a test that ran one way)."""
    unknown = sorted(k for k in ends if k != "SUM" and k not in sides)
    if unknown:
        raise ParseError(
            TOOL,
            f"stream {unknown[0]}: cannot tell whether this host sent or received it "
            "(no banner, no connection line)",
            line=ends[unknown[0]][1],
        )
    out: list[Measurement] = []
    one_way = len(set(sides.values())) == 1
    for side in ("sender", "receiver"):
        names = {k: k.lstrip("*") for k, v in sides.items() if v == side}
        if not names:
            continue
        if one_way and "SUM" in ends:
            names["SUM"] = "SUM"  # one direction only (-R -P N): its SUM is its total
        if len(set(names.values())) != len(names):
            raise ParseError(
                TOOL, f"streams {sorted(names)} of the {side} side share a number", line=None
            )
        s_rows = [replace(r, stream=names[r.stream]) for r in rows if r.stream in names]
        s_ends = {names[k]: v for k, v in ends.items() if k in names}
        s_conn = {names[k]: v for k, v in connected.items() if k in names}
        _one_test(text, s_rows, s_conn)
        s_sent = {k.lstrip("*"): v for k, v in sent.items() if k in names}
        out += _records(s_rows, s_ends, side, udp, s_sent if side == "sender" else {})
    return out


def _one_test(text: str, rows: list[_Row], connected: dict[str, int]) -> None:
    """Parallel streams (-P) all connect before any of them ends; a server that served
    one client after another prints a connection after an earlier stream's final line."""
    if not rows or not connected:
        return
    first_end = min(rows, key=lambda r: r.line)
    late = [(pos, sid) for sid, pos in connected.items() if pos > first_end.line]
    if late:
        pos, sid = min(late)
        why = _runs(f"stream {sid} connects after stream {first_end.stream}'s final line")
        raise _NewRun(why, pos, pos)


def _line_starts(text: str, needle: str, anywhere: bool = False) -> list[int]:
    """Offsets of the lines that start with ``needle`` (or hold it, ``anywhere``); a
    plain substring search: these lines are few, the text may be megabytes."""
    out: list[int] = []
    i = text.find(needle)
    while i >= 0:
        start = text.rfind("\n", 0, i) + 1
        if anywhere or start == i:
            out.append(start)
        i = text.find(needle, i + len(needle))
    return out


def _runs(what: str) -> str:
    return f"{what}: the output holds more than one iperf run; parse each run's output alone"


def _parse_csv(lines: Iterable[tuple[int, str]]) -> list[Measurement]:
    rows: list[_Row] = []
    ends: Ends = {}
    udp_sender = False
    udp = False
    zero_end: dict[str, tuple[float, str]] = {}  # stream -> its latest line from 0: end, ends
    for no, line in lines:
        f = line.strip().split(",")
        if len(f) not in (9, 14):
            raise ParseError(
                TOOL, f"CSV line has {len(f)} fields, expected 9 (TCP) or 14 (UDP)", line=no
            )
        t0, sep, t1 = f[6].partition("-")
        try:
            sid = "SUM" if int(f[5]) < 0 else str(int(f[5]))
            start, end, rate, xfer = float(t0), float(t1), float(int(f[8])), float(int(f[7]))
            jitter = lost = total = None
            if len(f) == 14 and start == 0:
                udp = True
                jitter, lost, total = float(f[9]), int(f[10]), int(f[11])
        except ValueError:
            raise ParseError(TOOL, "CSV line with a field that is not a number", line=no) from None
        if not sep:
            raise ParseError(TOOL, f"CSV interval {f[6]!r} is not START-END", line=no)
        udp = udp or len(f) == 14
        if total is not None and total < 0:
            udp_sender = True  # a client's own UDP line: the receiver's counts are unknown (-1)
            jitter = lost = total = None
        if start == 0:
            # a stream's lines from 0 only grow (0-1, then 0-10), between the same two ends
            conn = " ".join(sorted((f"{f[1]}:{f[2]}", f"{f[3]}:{f[4]}")))
            if sid in zero_end and (end < zero_end[sid][0] or conn != zero_end[sid][1]):
                raise ParseError(TOOL, _runs(f"stream {f[5]} starts again at 0 sec"), line=no)
            zero_end[sid] = (end, conn)
        _see(ends, sid, end, no)
        if start == 0:
            rows.append(_Row(no, "own", sid, start, end, rate, jitter, lost, total, xfer=xfer))
    side = ("sender" if udp_sender else "receiver") if udp else None
    return _records(rows, ends, side, udp, {})


def parse(text: str) -> list[Record]:
    lines = text.splitlines()
    if any(_CSV.match(ln) for ln in lines[:50]):
        if "failed" in text or "iperf: " in text:
            for no, ln in enumerate(lines, 1):
                if _ERROR.search(ln):
                    raise ToolFailure(TOOL, ln.strip(), line=no)
        return [*_parse_csv([(no, ln) for no, ln in enumerate(lines, 1) if _CSV.match(ln)])]
    return _parse_text(text)


_DETECT = re.compile(
    r"^Client connecting to \S+, (?:TCP|UDP) port|^Server listening on (?:TCP|UDP) port", re.M
)


def detect(text: str) -> bool:
    head = text[:65536]
    if _DETECT.search(head):
        return True
    first = head.splitlines()[0] if head.strip() else ""
    return bool(_CSV.match(first))


PARSER = Parser(
    name="iperf2",
    parse=parse,
    traits=Traits(
        units={"throughput": "bit/s"},
        lower_is_better=frozenset({"lost_packets", "lost_percent"}),
        title="iperf2 (TCP/UDP bandwidth)",
    ),
    description="iperf 2 text (classic and -e enhanced) and -y C CSV output",
    detect=detect,
)
