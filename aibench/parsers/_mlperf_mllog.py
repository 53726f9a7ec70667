"""Reading MLPerf log lines, shared by the MLPerf training and inference-detail parsers.

Two line forms are read:

* ``:::MLLOG {json}`` (MLPerf Training v0.7 and later, LoadGen detail logs since about
  v1.0): a JSON object with ``key``, ``value``, ``time_ms``, ``event_type``,
  ``namespace`` and ``metadata`` (some v0.7 loggers wrote ``time_s`` in seconds instead
  of ``time_ms``: read exactly, as ms);
* ``:::MLL <seconds> <key>: {json}`` (MLPerf Training v0.6): the timestamp is in seconds
  and the JSON object carries ``value`` and ``metadata``.

Anything before the marker on a line (``0: ``, ``[1,0]<stdout>:``, a timestamp from a
job scheduler) is ignored, and so are the lines without a marker (shell noise, framework
output). A JSON object that does not end on its line is continued on the following lines
(a value with a raw newline in it, a launcher that wrapped a long line); raw control
characters inside strings are accepted. Two records glued onto one line (processes that
share an output stream) are read as two.

Why not ``mlperf_logging.compliance_checker.mlp_parser``: it reads files by name, numbers
only the marked lines (so a problem cannot be pointed at a line of the file), raises
``KeyError`` on an object without ``time_ms`` or ``key``, and reads neither continued
lines nor, in one pass, both forms. Its rules are the same: strip everything before the
marker, decode the JSON that follows.

A line that cannot be read is not fatal here: it is returned as a :class:`Problem`
beside the events (STYLE principle 4 for line logs), and each parser decides what that
means for its output.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

MLLOG_MARK = ":::MLLOG"
_MLLOG = re.compile(r":::MLLOG[ \t]*(\{.*)$")
_MLL06 = re.compile(r":::MLL[ \t]+([0-9]+(?:\.[0-9]*)?)[ \t]+([A-Za-z0-9_.]+)[ \t]*:[ \t]*(.*)$")
_MAX_CONTINUATION = 64  # lines a JSON object may be continued on
_DECODER = json.JSONDecoder(strict=False)


@dataclass(frozen=True)
class Event:
    """One decoded log line."""

    line: int  # 1-based line number in the text
    key: str
    value: Any
    time_ms: Decimal | None  # None when the line carries no usable time
    metadata: Mapping[str, Any] = field(default_factory=dict)
    event_type: str = ""
    form: str = "MLLOG"  # or "MLL" (v0.6)


@dataclass(frozen=True)
class Problem:
    line: int
    reason: str


def _time(raw: Any, scale: int) -> Decimal | None:
    """An exact Decimal time in ms from a JSON number or a numeric string."""
    if isinstance(raw, bool) or raw is None:
        return None
    try:
        # repr() of a float is the shortest text that reads back to it: exact enough
        # for subtraction without binary floating point error.
        d = Decimal(raw if isinstance(raw, str) else repr(raw))
    except (InvalidOperation, ValueError):
        return None
    if not d.is_finite():
        return None
    return d * scale


def _decode(lines: list[str], i: int, start: str) -> tuple[Any, int] | None:
    """Decode the JSON object that starts with ``start`` on line ``i``.

    Returns (object, index of the last line used), or None if it cannot be decoded.
    """
    buf = start
    for j in range(i, min(len(lines), i + _MAX_CONTINUATION)):
        if j > i:
            nxt = lines[j]
            if MLLOG_MARK in nxt or ":::MLL " in nxt:
                return None  # the next record began: this one was cut
            buf += "\n" + nxt
        try:
            obj, _end = _DECODER.raw_decode(buf)
        except json.JSONDecodeError as exc:
            if exc.pos >= len(buf) - 1 or "Unterminated" in exc.msg:
                continue  # may go on on the next line
            return None
        return obj, j
    return None


def _segments(text: str) -> tuple[list[str], list[int]]:
    """The lines of ``text``, with a line holding several records split at each marker.

    Returns the pieces and, for each, its 1-based line number in ``text`` (processes that
    share one output stream sometimes glue two records onto one line).
    """
    pieces: list[str] = []
    numbers: list[int] = []
    for n, line in enumerate(text.splitlines(), start=1):
        if line.count(MLLOG_MARK) > 1:
            head, *rest = line.split(MLLOG_MARK)
            pieces.append(head + MLLOG_MARK + rest[0])
            numbers.append(n)
            for part in rest[1:]:
                pieces.append(MLLOG_MARK + part)
                numbers.append(n)
        else:
            pieces.append(line)
            numbers.append(n)
    return pieces, numbers


def read(text: str) -> tuple[list[Event], list[Problem], int]:
    """All events in ``text``, the problems met, and the number of marked lines."""
    lines, numbers = _segments(text)
    events: list[Event] = []
    problems: list[Problem] = []
    marked = 0
    i = 0
    while i < len(lines):
        got = _record(lines, i, numbers[i]) if ":::MLL" in lines[i] else None
        if got is None:
            i += 1
            continue
        marked += 1
        record, last = got
        if isinstance(record, Problem):
            problems.append(record)
        else:
            events.append(record)
        i = last + 1
    return events, problems, marked


def _record(lines: list[str], i: int, line: int) -> tuple[Event | Problem, int] | None:
    """The event (or the problem) of the record marked on ``lines[i]`` (file line ``line``)
    and the index of its last line; None when no marker of either form begins there."""
    m = _MLLOG.search(lines[i])
    if m is None and MLLOG_MARK in lines[i]:
        return Problem(line, ":::MLLOG without a JSON object"), i
    if m is not None:
        got = _decode(lines, i, m.group(1))
        if got is None:
            return Problem(line, "invalid or cut :::MLLOG JSON"), i
        return _mllog_event(got[0], line), got[1]
    m6 = _MLL06.search(lines[i])
    if m6 is None:
        return None
    got = _decode(lines, i, m6.group(3))
    if got is None:
        return Problem(line, "invalid or cut :::MLL JSON"), i
    return _mll06_event(got[0], m6, line), got[1]


def _mll06_event(obj: Any, m6: re.Match[str], line: int) -> Event | Problem:
    """A v0.6 ``:::MLL <seconds> <key>: {json}`` record: time and key from the line."""
    if not isinstance(obj, dict):
        return Problem(line, ":::MLL payload is not a JSON object")
    meta = obj.get("metadata")
    return Event(
        line=line,
        key=m6.group(2),
        value=obj.get("value"),
        time_ms=_time(m6.group(1), 1000),
        metadata=meta if isinstance(meta, dict) else {},
        form="MLL",
    )


def _mllog_event(obj: Any, line: int) -> Event | Problem:
    if not isinstance(obj, dict):
        return Problem(line, ":::MLLOG payload is not a JSON object")
    key = obj.get("key")
    if not isinstance(key, str) or not key:
        return Problem(line, ":::MLLOG object has no key")
    meta = obj.get("metadata")
    et = obj.get("event_type")
    return Event(
        line=line,
        key=key,
        value=obj.get("value"),
        # early v0.7 loggers (Alibaba's) wrote "time_s" (seconds) instead of "time_ms"
        time_ms=_time(obj["time_ms"], 1) if "time_ms" in obj else _time(obj.get("time_s"), 1000),
        metadata=meta if isinstance(meta, dict) else {},
        event_type=et if isinstance(et, str) else "",
    )


def number(value: Any) -> float | None:
    """A finite number from a JSON value (int, float or numeric string), else None.

    Booleans are not numbers here ("True" and true stay what they are).
    """
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        f = float(value)
    elif isinstance(value, str):
        try:
            f = float(value.strip())
        except ValueError:
            return None
    else:
        return None
    if f != f or f in (float("inf"), float("-inf")):
        return None
    return f


def scalar_dims(
    meta: Mapping[str, Any], names: tuple[str, ...]
) -> dict[str, str | int | float | bool]:
    """The metadata entries named in ``names`` whose values are scalars."""
    out: dict[str, str | int | float | bool] = {}
    for n in names:
        v = meta.get(n)
        if isinstance(v, str | int | float | bool):
            if isinstance(v, float) and (v != v or v in (float("inf"), float("-inf"))):
                continue
            out[n] = v
    return out
