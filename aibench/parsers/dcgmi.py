"""dcgmi diag: the DCGM diagnostic's verdicts from ``dcgmi diag -r LEVEL`` (table output, or
the ``-j`` JSON document: :mod:`aibench.parsers._dcgmi_json`, into the same facts).

Reads the box table that ``dcgmi diag`` prints: section rows (Metadata, Deployment,
Integration, Hardware, Stress) and one row per test; a cell wrapped over several lines is
joined again (DCGM cuts words at the cell width, so the pieces are concatenated as they
are). Tested on DCGM 3.3.8 (``dcgmi diag --run 3 --fail-early``, 8x H100, driver 560.35.03)
and DCGM 3.1.8 (``dcgmi diag -r 1``, 8x H200, a Persistence Mode failure with its Error
row). A test's result is the worst of the results its cell lines start with, so a result
wrapped per GPU (``Pass - GPU: 1`` then ``Fail - GPU: 0``; DCGM 4's ``GPU0: Pass`` lines)
is a fail when one GPU failed. The Metadata section is optional (DCGM 3.0 has none).

Facts, source ``"dcgmi"``: ``version`` (DCGM Version), ``driver_version`` (Driver Version
Detected), ``gpu_device_ids``; per test (dims ``test``, e.g. ``GPU Memory``, and
``section``): ``result`` (``pass`` | ``fail`` | ``warn`` | ``skip``, the first word in lower
case) and ``result_text`` (as printed, e.g. ``Fail - All``); ``error``, ``warning`` and
``info`` (the joined text; dims ``test``, ``section`` and ``n``, the position among that
test's messages) for the Error / Warning / Info rows that follow a test (an Error row
holds the text of a failed test, e.g. DCGM 3.1's "Persistence mode for GPU 0 is
currently disabled ..." under a failed Persistence Mode); ``overall`` (``fail`` when any
test failed, else ``warn`` when any warned, else ``pass``) and ``failed_tests`` (count).

A DCGM error instead of a table ("Error: unable to establish a connection ...") is a
:class:`ToolFailure` with DCGM's words.
"""

from __future__ import annotations

import re

from aibench.errors import ParseError, ToolFailure
from aibench.model import Fact, FrozenDims
from aibench.parsers import Parser
from aibench.parsers._dcgmi_json import ROOTS, parse_json

SOURCE = "dcgmi"
_SECTION = re.compile(r"^[|+]-+\s+(\w[\w ]*?)\s+-+\+")
_ROW = re.compile(r"\|([^|]*)\|([^|]*)\|\s*")
_META = {
    "DCGM Version": "version",
    "Driver Version Detected": "driver_version",
    "GPU Device IDs Detected": "gpu_device_ids",
}


_DIMS: dict[tuple[str, str, int], FrozenDims] = {}


def _dims(test: str, section: str, n: int = 0) -> FrozenDims:
    """The dims of a test (``n`` 0) or of its n-th message; memoized, as every node's
    report names the same tests."""
    key = (test, section, n)
    found = _DIMS.get(key)
    if found is None:
        if len(_DIMS) > 4096:
            _DIMS.clear()
        d: dict[str, str | int] = {"test": test, "section": section}
        if n:
            d["n"] = n
        found = _DIMS[key] = FrozenDims(d)
    return found


def _rows(text: str) -> list[tuple[int, str, str, str, list[str]]]:
    """(line, section, name, value, pieces): wrapped cells joined, and the cell's pieces
    as printed (one per table line)."""
    rows: list[tuple[int, str, str, list[str]]] = []  # the value's pieces, joined at the end
    section = ""
    for lineno, line in enumerate(text.splitlines(), 1):
        m = _SECTION.match(line) if line.startswith(("|-", "+-")) else None
        if m:
            section = m.group(1).strip()
            continue
        cells = _ROW.fullmatch(line)  # "| name | value |": two cells, then only blanks
        if cells is None:
            continue
        name, value = cells[1].strip(), cells[2]
        if name == "Diagnostic" and value.strip() == "Result":
            continue
        piece = value[1:-2] if len(value) > 3 else value.strip()
        if not name:
            if not rows:
                raise ParseError(SOURCE, "a continuation line before any row", line=lineno)
            rows[-1][3].append(piece)
            continue
        rows.append((lineno, section, name, [piece]))
    return [(ln, sec, nm, " ".join("".join(val).split()), val) for ln, sec, nm, val in rows]


# a result at the start of a cell line: "Pass", "Fail - GPU: 0", DCGM 4's "GPU0: Pass"
_RESULT = re.compile(r"\s*(?:GPU\s*\d+:\s*)?(Pass|Fail|Warn|Skip)\b", re.IGNORECASE)
_WORST = ("fail", "warn", "pass", "skip")


def _result(pieces: list[str]) -> str | None:
    """The test's result: the worst of the results its cell lines start with (a test run
    on several GPUs prints ``Pass - GPU: 1`` and ``Fail - GPU: 0`` on two lines); None
    when the first line starts with none."""
    found = [m[1].lower() for p in pieces if (m := _RESULT.match(p))]
    if not found or not _RESULT.match(pieces[0]):
        return None
    return min(found, key=_WORST.index)


def parse(text: str) -> list[Fact]:
    if text.lstrip().startswith("{") or any(f'"{k}"' in text[:4096] for k in ROOTS):
        return parse_json(text)
    for lineno, line in enumerate(text.splitlines() if "Error:" in text else (), 1):
        if line.strip().startswith("Error:"):
            raise ToolFailure(SOURCE, line.strip(), line=lineno)
    rows = _rows(text)
    if not rows:
        raise ParseError(SOURCE, "no diagnostic table in the output")
    out: list[Fact] = []
    test: tuple[str, str] | None = None
    messages: dict[tuple[str, str], int] = {}
    results: list[str] = []
    for lineno, section, name, value, pieces in rows:
        if name in _META:
            out.append(Fact(SOURCE, _META[name], value))
            continue
        if name in ("Warning", "Info", "Error"):
            if test is None:
                raise ParseError(SOURCE, f"{name} row before any test", line=lineno)
            n = messages.get(test, 0) + 1
            messages[test] = n
            out.append(Fact(SOURCE, name.lower(), value, dims=_dims(test[1], test[0], n)))
            continue
        word = _result(pieces) if value else None
        if word is None:
            raise ParseError(SOURCE, f"{name}: unknown result {value!r}", line=lineno)
        test = (section, name)
        dims = _dims(name, section)
        out.append(Fact(SOURCE, "result", word, dims=dims))
        out.append(Fact(SOURCE, "result_text", value, dims=dims))
        results.append(word)
    if not results:
        raise ParseError(SOURCE, "the table has no test rows")
    failed = results.count("fail")
    overall = "fail" if failed else ("warn" if "warn" in results else "pass")
    out.append(Fact(SOURCE, "overall", overall))
    out.append(Fact(SOURCE, "failed_tests", failed, "count"))
    return out


def _detect(text: str) -> bool:
    head = text[:4096]
    return ("| Diagnostic" in text and "| Result" in text) or any(f'"{k}"' in head for k in ROOTS)


PARSER = Parser(
    "dcgmi-diag", parse, "DCGM diagnostic results from dcgmi diag", _detect, emits="facts"
)
