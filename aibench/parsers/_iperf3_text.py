"""iperf3's normal text output (client or server), from its final summary lines.

The summary follows the last ``- - -`` separator: one line per stream and, with ``-P``,
a ``[SUM]`` line, each ending in ``sender`` or ``receiver``. In a ``--bidir`` test each
line carries a role (``[TX-C]`` the client sends, ``[RX-C]`` it receives; ``-S`` on the
server). Rates are printed with three significant digits (``18.6 Gbits/sec``), so text
numbers are less precise than ``-J``'s. The Transfer column of each line is ``stream_bytes``
(a stream's, the receiver's ``RX-C`` lines of a bidir test included) or ``bytes`` (a total),
in bytes (iperf3's KBytes/MBytes/GBytes are powers of 1024).
"""

from __future__ import annotations

import re
from fractions import Fraction

from aibench.errors import ParseError, ToolFailure
from aibench.model import FrozenDims, Measurement, Scalar
from aibench.parsers._iperf3_json import NO_DATAGRAMS
from aibench.units import factor

TOOL = "iperf3"

_RATE_UNITS = {
    "bits/sec": "bit/s",
    "Kbits/sec": "kbit/s",
    "Mbits/sec": "Mbit/s",
    "Gbits/sec": "Gbit/s",
    "Tbits/sec": "Tbit/s",
}
# iperf3's byte units are powers of 1024
_BYTE_UNITS = {"Bytes": "B", "KBytes": "KiB", "MBytes": "MiB", "GBytes": "GiB", "TBytes": "TiB"}
_NUM = r"\d+(?:\.\d+)?"
_SUMMARY = re.compile(
    rf"^\[\s*(?P<id>\d+|SUM)\](?:\[(?P<role>[A-Z]{{2}}-[A-Z])\])?\s+"
    rf"(?P<t0>{_NUM})-\s*(?P<t1>{_NUM})\s+sec\s+"
    rf"(?P<xfer>{_NUM})\s+(?P<xunit>[KMGT]?Bytes)\s+"
    rf"(?P<rate>{_NUM})\s+(?P<runit>[KMGT]?bits/sec)\s*"
    rf"(?P<rest>.*?)\s*(?P<side>sender|receiver)\s*$"
)
_UDP_REST = re.compile(
    rf"^(?P<jitter>{_NUM})\s+ms\s+(?P<lost>\d+)/\s*(?P<total>\d+)\s+\((?P<pct>[-+0-9.e]+|nan)%\)$"
)
_TCP_REST = re.compile(r"^(?P<retr>\d+)?$")


def convert(value: str, src: str, dst: str) -> float:
    return float(Fraction(value) * factor(src, dst))


def _m(metric: str, value: float, unit: str, dims: dict[str, Scalar]) -> Measurement:
    return Measurement(tool=TOOL, metric=metric, value=value, unit=unit, dims=FrozenDims(dims))


def parse_text(text: str) -> list[Measurement]:
    lines, udp, reverse, summary_start = _scan(text)
    rows: list[tuple[int, re.Match[str]]] = []
    for no in range(summary_start + 1, len(lines) + 1):
        mt = _SUMMARY.match(lines[no - 1])
        if mt:
            rows.append((no, mt))
    if not rows:
        raise ParseError(TOOL, "no summary lines (ending in sender/receiver) in the output")
    return _summary_records(rows, _base_dims(rows, udp, reverse), udp)


def _scan(text: str) -> tuple[list[str], bool, bool, int]:
    """The client's lines (a server's report appended by --get-server-output left out),
    whether the test is UDP, whether it is reversed, and the line of the separator that
    opens the summary. An error line is a ToolFailure; two summaries a ParseError."""
    lines = text.splitlines()
    udp = False
    reverse = False
    summary_start = 0
    summaries: list[int] = []  # the separator line before each block of summary lines
    for no, line in enumerate(lines, 1):
        if line.startswith("iperf3: error") or line.startswith("iperf3: interrupt"):
            raise ToolFailure(TOOL, line.split(":", 1)[1].strip(), line=no, partial=[])
        if line.startswith("Server output:"):
            # --get-server-output: the server's own report follows the client's
            lines = lines[: no - 1]
            break
        if line.startswith("Reverse mode"):
            reverse = True
        if "Jitter" in line and "Lost/Total" in line:
            udp = True
        if line.startswith("- - - -"):
            summary_start = no
        elif (
            line.rstrip().endswith(("sender", "receiver"))
            and (not summaries or summaries[-1] != summary_start)
            and _SUMMARY.match(line)
        ):
            summaries.append(summary_start)
            if len(summaries) > 1:
                raise ParseError(
                    TOOL,
                    f"summary lines after line {summaries[0]} and again after line "
                    f"{summaries[1]}: the output holds more than one iperf3 run; parse each "
                    "run's output alone",
                    line=no,
                )
    return lines, udp, reverse, summary_start


def _base_dims(
    rows: list[tuple[int, re.Match[str]]], udp: bool, reverse: bool
) -> dict[str, Scalar]:
    """The dims every record of the test carries: protocol, reverse, streams (bidir)."""
    ids = {mt["id"] for _, mt in rows if mt["id"] != "SUM"}
    roles = {mt["role"] for _, mt in rows if mt["role"]}
    bidir = bool(roles)
    # streams per direction: in a bidir test half of the ids go each way
    nstreams = len(ids) // 2 if bidir else len(ids)
    base: dict[str, Scalar] = {
        "protocol": "udp" if udp else "tcp",
        "reverse": reverse,
        "streams": max(nstreams, 1),
    }
    if bidir:
        base["bidir"] = True
    return base


def _summary_records(
    rows: list[tuple[int, re.Match[str]]], base: dict[str, Scalar], udp: bool
) -> list[Measurement]:
    """Each stream's rate, and of the total of each direction (the ``[SUM]`` line, or the
    one stream's line) its rate and its UDP packets and losses or its TCP retransmits."""
    records: list[Measurement] = []
    has_sum = any(mt["id"] == "SUM" for _, mt in rows)
    per_direction_ids: dict[str, set[str]] = {}
    for _, mt in rows:
        if mt["id"] != "SUM":
            per_direction_ids.setdefault(mt["role"] or "", set()).add(mt["id"])
    for no, mt in rows:
        dims = dict(base)
        side = mt["side"]
        dims["side"] = side
        if mt["role"]:
            dims["direction"] = "forward" if mt["role"].startswith("TX") else "reverse"
        rate = convert(mt["rate"], _RATE_UNITS[mt["runit"]], "bit/s")
        rest = mt["rest"].strip()
        single = len(per_direction_ids.get(mt["role"] or "", set())) == 1
        is_total = mt["id"] == "SUM" or (single and not has_sum)
        xfer = convert(mt["xfer"], _BYTE_UNITS[mt["xunit"]], "B")
        if mt["id"] != "SUM":
            sd = {**dims, "stream": int(mt["id"])}
            records.append(_m("stream_throughput", rate, "bit/s", sd))
            records.append(_m("stream_bytes", xfer, "B", sd))
        if not is_total:
            continue
        records.append(_m("throughput", rate, "bit/s", dims))
        records.append(_m("bytes", xfer, "B", dims))
        if udp:
            _udp_total(records, no, rest, side, dims)
        else:
            _tcp_total(records, no, rest, side, dims)
    return records


def _udp_total(
    records: list[Measurement], no: int, rest: str, side: str, dims: dict[str, Scalar]
) -> None:
    """Appends a UDP total's packets (and, on the receiver, jitter and losses)."""
    u = _UDP_REST.match(rest)
    if not u:
        raise ParseError(TOOL, f"UDP summary without jitter and loss: {rest!r}", line=no)
    total = float(u["total"])
    if side == "receiver":
        records.append(_m("jitter", float(u["jitter"]), "ms", dims))
        records.append(_m("lost_packets", float(u["lost"]), "count", dims))
        records.append(_m("packets", total, "count", dims))
        if total == 0:  # iperf3 prints "0/0 (0%)": no loss figure, not 0 %
            raise ToolFailure(TOOL, NO_DATAGRAMS, line=no, partial=list(records))
        pct = 100.0 * float(u["lost"]) / total
        records.append(_m("lost_percent", pct, "%", dims))
    else:
        records.append(_m("packets", total, "count", dims))


def _tcp_total(
    records: list[Measurement], no: int, rest: str, side: str, dims: dict[str, Scalar]
) -> None:
    """Appends a TCP total's retransmits (the sender's line)."""
    t = _TCP_REST.match(rest)
    if not t:
        raise ParseError(TOOL, f"unexpected columns in a TCP summary: {rest!r}", line=no)
    if side == "sender" and t["retr"] is not None:
        records.append(_m("retransmits", float(t["retr"]), "count", dims))
