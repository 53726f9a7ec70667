"""nvbandwidth (NVIDIA/nvbandwidth): copy bandwidth matrices, from ``nvbandwidth -j`` (JSON)
or the plain text output.

JSON (``-j``, nvbandwidth 0.5+): ``{"nvbandwidth": {"version", "Driver Version", "GPU
Device list", "testcases": [{"name", "status", "bandwidth_description",
"bandwidth_matrix": [["26.03", "N/A", ...], ...], "sum"}, ...], "error"?}}``; matrix cells
are strings, ``N/A`` where a pair was not measured. Text: ``Running <testcase>.``, the
description line, a header of column indices, one row per source, then ``SUM <testcase>
<value>``; ``Waived:`` lines for tests that do not apply. Tested on the text of v0.6
(GH200) and v0.10; the JSON layout is the one of json_output.cpp (no public capture of it
was found; the fixtures of that form are marked constructed).

Emitted per measured cell: ``bw`` (GB/s, nvbandwidth divides bytes by 10^9) or, for the
latency tests (description ending in ``(ns)``), ``latency`` (ns); dims ``testcase``,
``row`` and ``column`` (and ``part``: read1 | read2 | write1 | write2 | total, for the three
matrices a bidirectional device-to-device testcase of 0.7+ prints, each with its own
``SUM <testcase>_<part>``) (what the row and the column are, CPU or GPU and the direction, is in
the testcase's name and its description). Per testcase: ``bw_sum`` (GB/s) for bandwidth
tests. ``Waived`` testcases are left out (they do not apply to the system).

Failures: a testcase whose status is neither ``Passed`` nor ``Waived`` (``Error``, ``Not
Found``), a top-level ``error`` and an ``ERROR``/``Error`` line of the text output are a
ToolFailure with the cells read as ``partial``; a testcase that started (``Running X.``)
and has no matrix is a ToolFailure (cut short).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from aibench.errors import ParseError, ToolFailure
from aibench.model import FrozenDims, Measurement, Scalar
from aibench.parsers import Parser

TOOL = "nvbandwidth"
_RUNNING = re.compile(r"^Running (\S+?)\.?$")
_SUM = re.compile(r"^SUM (\S+) (\S+)$")
_ERROR = re.compile(r"^(?:ERROR|Error|error)\b")


def parse(text: str) -> list[Measurement]:
    if text.lstrip().startswith("{"):
        return _parse_json(text)
    return _parse_text(text)


def _cells(
    testcase: str, description: str, rows: list[list[str]], line: int | None, part: str = ""
) -> list[Measurement]:
    latency = description.rstrip().endswith("(ns)")
    metric, unit = ("latency", "ns") if latency else ("bw", "GB/s")
    out = []
    for r, row in enumerate(rows):
        for c, cell in enumerate(row):
            if cell == "N/A":
                continue
            try:
                v = float(cell)
            except ValueError:
                raise ParseError(
                    TOOL, f"{testcase}: cell ({r}, {c}) is not a number: {cell!r}", line
                ) from None
            d: dict[str, Scalar] = {"testcase": testcase, "row": r, "column": c}
            if part:
                d["part"] = part
            out.append(Measurement(TOOL, metric, v, unit, FrozenDims(d)))
    return out


def _parse_json(text: str) -> list[Measurement]:
    try:
        doc: Any = json.loads(text)
    except json.JSONDecodeError as e:
        raise ParseError(TOOL, f"not JSON (cut short?): {e.msg}", e.lineno) from None
    root = doc.get("nvbandwidth") if isinstance(doc, dict) else None
    if not isinstance(root, dict):
        raise ParseError(TOOL, "no 'nvbandwidth' object")
    out: list[Measurement] = []
    problems: list[str] = []
    cases = root.get("testcases", [])
    if not isinstance(cases, list):
        raise ParseError(TOOL, "'testcases' is not a list")
    for i, case in enumerate(cases):
        if not isinstance(case, dict) or not isinstance(case.get("name"), str):
            raise ParseError(TOOL, f"testcases[{i}] has no name")
        name, status = case["name"], case.get("status")
        if status == "Waived":
            continue
        if status != "Passed":
            problems.append(f"{name}: {status} {case.get('error', '')}".strip())
            continue
        rows = case.get("bandwidth_matrix")
        if not isinstance(rows, list) or not all(isinstance(r, list) for r in rows):
            raise ParseError(TOOL, f"testcases[{i}] ({name}) has no bandwidth_matrix")
        desc = str(case.get("bandwidth_description", ""))
        out += _cells(name, desc, [[str(c) for c in r] for r in rows], None)
        total = case.get("sum")
        if isinstance(total, int | float) and not desc.rstrip().endswith("(ns)"):
            out.append(Measurement(TOOL, "bw_sum", total, "GB/s", FrozenDims({"testcase": name})))
    if root.get("error"):
        problems.insert(0, str(root["error"]))
    if problems:
        raise ToolFailure(TOOL, " | ".join(problems), None, [*out])
    if not out:
        raise ParseError(TOOL, "no testcase with a result")
    return out


# the matrices of a bidirectional testcase (0.7+): "... <-> GPU(column) Read1 bandwidth (GB/s)",
# "Read2", then "Total" (or Write1/Write2/Total), each with its own "SUM <testcase>_<part>"
_PART = re.compile(r"\b(Read1|Read2|Write1|Write2|Total) (?:bandwidth|latency)\b")


@dataclass
class _Case:
    """A testcase of the text output being read: its matrices (part -> is a bandwidth
    matrix) and the parts whose SUM line was read."""

    name: str
    line: int
    matrices: dict[str, bool] = field(default_factory=dict)
    sums: set[str] = field(default_factory=set)
    orphans: list[str] = field(default_factory=list)  # SUM lines without their matrix

    def problem(self) -> str | None:
        if self.orphans:
            return " | ".join(self.orphans)
        if not self.matrices:
            return f"{self.name}: no result (cut short)"
        if set(self.matrices) - self.sums:
            return f"{self.name}: no SUM line (cut short)"
        if set(self.matrices) - {""} and "total" not in self.matrices:
            return f"{self.name}: no Total matrix after {sorted(self.matrices)} (cut short)"
        return None


def _matrix(lines: list[str], i: int) -> tuple[list[list[str]], int]:
    """The rows under the header at ``lines[i]`` (a line of column indices), and the index
    of the line after them; no rows when ``lines[i]`` is not such a header."""
    head = lines[i].split() if i < len(lines) else []
    if not head or not all(h.isdigit() for h in head):
        return [], i
    rows: list[list[str]] = []
    j = i + 1
    while j < len(lines) and lines[j].strip():
        cells = lines[j].split()
        if not cells[0].isdigit():
            break
        rows.append(cells[1:])
        j += 1
    return rows, j


def _sum(case: _Case, name: str, raw: str, n: int) -> Measurement | None:
    """A ``SUM <testcase>[_<part>] <value>`` line of the open testcase."""
    part = "" if name == case.name else name[len(case.name) + 1 :]
    if part not in case.matrices:
        case.orphans.append(f"{name}: SUM without a matrix")
        return None
    try:
        total = float(raw)
    except ValueError:
        raise ParseError(TOOL, f"SUM is not a number: {raw!r}", n) from None
    case.sums.add(part)
    if not case.matrices[part]:
        return None  # a latency matrix's sum is not a bandwidth
    dims: dict[str, Scalar] = {"testcase": case.name, **({"part": part} if part else {})}
    return Measurement(TOOL, "bw_sum", total, "GB/s", FrozenDims(dims))


def _parse_text(text: str) -> list[Measurement]:
    out: list[Measurement] = []
    problems: list[str] = []
    lines = text.splitlines()
    case: _Case | None = None
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        m = _RUNNING.match(line)
        s = _SUM.match(line)
        rows, j = _matrix(lines, i + 1) if case is not None and line else ([], i)
        if m:
            if case is not None and (p := case.problem()):
                problems.append(p)
            case = _Case(m.group(1), i + 1)
        elif case is not None and rows:
            pm = _PART.search(line)
            part = pm.group(1).lower() if pm else ""
            case.matrices[part] = not line.endswith("(ns)")
            out += _cells(case.name, line, rows, i + 1, part)
            i = j
            continue
        elif s and case is not None and (s.group(1) + "_").startswith(case.name + "_"):
            rec = _sum(case, s.group(1), s.group(2), i + 1)
            out += [rec] if rec else []
        elif _ERROR.match(line):
            problems.append(line)
        i += 1
    if case is not None and (p := case.problem()):
        problems.append(p)
    if problems:
        raise ToolFailure(TOOL, " | ".join(problems), None, [*out])
    if not out:
        raise ParseError(TOOL, "no 'Running <testcase>.' block with a matrix")
    return out


def _detect(text: str) -> bool:
    return '"nvbandwidth"' in text or ("Running " in text and "memcpy " in text and "SUM " in text)


PARSER = Parser(
    "nvbandwidth", parse, "nvbandwidth copy bandwidth matrices (-j JSON or text)", _detect
)
