"""iperf3: network throughput between two hosts.

Reads ``iperf3 -c HOST -J`` (one JSON document; the client's or the server's),
``--json-stream`` (one JSON event per line: ``start``, ``interval``, ``end``, ``error``)
and the normal text output. Tested on iperf 3.0.7, 3.0.11, 3.9 and 3.12 output.
``--json-stream`` (iperf3 3.17+) is read from its documented event format, tested on
real ``-J`` captures of iperf 3.12 re-expressed as events and on iperf 3.21+ (built from
esnet/iperf) captures: a refused connection (only an ``error`` event and an empty
``end``) and a client interrupted by SIGINT (``error`` "interrupt - the client has
terminated by signal Interrupt(2)", then the ``end`` of the part that ran, kept as
``partial``). An output that is only an ``error`` event is recognized by ``detect``.

Emitted (from the end of the test; intervals are not emitted):

* ``throughput`` (bit/s) with dim ``side`` = sender | receiver: the test's sums, equal to
  ``end.sum_sent`` / ``end.sum_received`` (for UDP before 3.12: ``end.sum``, whose rate is
  the sender's);
* ``bytes`` (B, with ``side``): the bytes each total moved (``sum_sent.bytes``, the text's
  Transfer column);
* ``retransmits`` (count, TCP sender), ``stream_throughput`` (bit/s, per stream, dim
  ``stream`` = the stream's socket id as an int, and ``side``) and ``stream_bytes`` (B);
* ``stream_rtt_mean``, ``stream_rtt_min``, ``stream_rtt_max`` (us, per stream, TCP sender
  on Linux, from ``-J`` only: the text does not print them);
* UDP (receiver side): ``jitter`` (ms), ``lost_packets`` (count), ``packets`` (count),
  ``lost_percent`` (%); ``packets`` also for the sender.

Dims from ``start.test_start`` when present: ``protocol`` (tcp | udp), ``streams``
(int), ``reverse`` (bool), ``bidir`` (bool, 3.7+) and then ``direction`` = forward |
reverse on each record.

iperf3's top-level ``"error"`` is a ToolFailure with iperf3's message; a cut document is
a ParseError with the line where it ends. A UDP receiver that counted no datagram is a
ToolFailure (iperf3 writes ``lost_percent`` 0 and ``0/0 (0%)`` then: that is no loss
figure), with the other records as partial ones.

One output is one test. A log holding several (a second ``-J`` document, a second
``start`` event, a second block of summary lines in text, as in a long-running server's
log or a client log appended to) is a ParseError that says so, not the last test's
numbers. A client's ``--get-server-output`` text is read up to ``Server output:`` (the
client's own summary).
"""

from __future__ import annotations

import re

from aibench.model import Measurement
from aibench.parsers import Parser
from aibench.parsers._iperf3_json import parse_json, parse_stream
from aibench.parsers._iperf3_text import parse_text


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""


def parse(text: str) -> list[Measurement]:
    first = _first_line(text)
    if first.startswith("{") and '"event"' in first:
        return parse_stream(text)
    if first.startswith("{"):
        return parse_json(text)
    return parse_text(text)


_DETECT = re.compile(
    r'"test_start"|"intervals":\s*\[|^\{"event":\s*"(?:start|error)"'
    r"|^iperf3: (?:error|interrupt)|^Connecting to host "
    r"|^Server listening on \d+|^iperf Done\.",
    re.MULTILINE,
)


def detect(text: str) -> bool:
    return _DETECT.search(text[:65536]) is not None


PARSER = Parser(
    name="iperf3",
    parse=parse,
    description="iperf3 -J JSON, --json-stream events and text output",
    detect=detect,
)
