"""gpu-burn (wilicc/gpu-burn): the output of ``gpu_burn [-d] [-tc] [-m N%] SECONDS``.

gpu-burn prints a progress line now and then (``P%  proc'd: N (G Gflop/s) - N (G Gflop/s)
...   errors: E - E ...   temps: T C - T C ...``, one field per GPU in device order; the
lines often run together without a newline, or are joined by carriage returns) and, at the
end, ``Tested N GPUs:`` with ``GPU i: OK`` or ``GPU i: FAULTY``. Tested on the outputs of
gpu-burn 2019-2024 (FLOATS and DOUBLES, with and without tensor cores; 1 to 16 GPUs).

Emitted per GPU (dims ``gpu``, the index), from the last progress line: ``gflops``
(Gflop/s), ``iterations`` (count, the ``proc'd`` number), ``errors`` (count, as printed)
and ``temperature`` (C); from the summary: ``faulty`` (count: 1 for FAULTY, 0 for OK).

Failures. gpu-burn exits 0 even when a GPU is FAULTY (issue #12 of its repository), so the
parser is the judge: any FAULTY GPU, a worker marked ``(DIED!)``, ``No clients are alive``,
``Couldn't init a GPU test`` or ``Failure during compute``, output without the ``Tested N
GPUs`` summary (killed or cut short) and a summary without one progress line (nothing
was measured) are each a ToolFailure, with what was read as ``partial``.
"""

from __future__ import annotations

import re

from aibench.errors import ParseError, ToolFailure
from aibench.model import FrozenDims, Measurement
from aibench.parsers import Parser

TOOL = "gpu-burn"

_PROGRESS = re.compile(
    r"(\d+(?:\.\d+)?)%\s+proc'd:\s*(?P<procd>.*?)\s+errors:\s*(?P<errors>.*?)\s+temps:\s*"
    r"(?P<temps>(?:-?\d+ C(?:\s*-\s*)?)+)"
)
_PROCD = re.compile(r"(-?\d+)\s*\((-?\d+(?:\.\d+)?) Gflop/s\)")
_ERROR = re.compile(r"(-?\d+)\s*(\((?:WARNING|DIED)!\))?")
_TEMP = re.compile(r"(-?\d+) C")
_RESULT = re.compile(r"^\s*GPU (\d+): (OK|FAULTY)\s*$")
_TESTED = re.compile(r"^Tested (\d+) GPUs:")
_FATAL = ("No clients are alive", "Couldn't init a GPU test", "Failure during compute")


def _progress(text: str, last: re.Match[str]) -> tuple[list[Measurement], list[int]]:
    """The records of the last progress line, per GPU, and the GPUs whose worker died."""
    procd = _PROCD.findall(last.group("procd"))
    errors = _ERROR.findall(last.group("errors"))
    temps = _TEMP.findall(last.group("temps"))
    if not procd or len(procd) != len(temps) or len(errors) < len(procd):
        line = text.count("\n", 0, last.start()) + 1
        raise ParseError(
            TOOL,
            f"a progress line with {len(procd)} GPUs' work, {len(errors)} error counts "
            f"and {len(temps)} temperatures",
            line,
        )
    out: list[Measurement] = []
    died: list[int] = []
    for gpu, ((n, gflops), (err, mark), temp) in enumerate(zip(procd, errors, temps, strict=False)):
        dims = FrozenDims({"gpu": gpu})
        out.append(Measurement(TOOL, "gflops", float(gflops), "Gflop/s", dims))
        out.append(Measurement(TOOL, "iterations", int(n), "count", dims))
        out.append(Measurement(TOOL, "errors", int(err), "count", dims))
        out.append(Measurement(TOOL, "temperature", int(temp), "C", dims))
        if mark == "(DIED!)":
            died.append(gpu)
    return out, died


def _summary(text: str) -> tuple[bool, dict[int, str]]:
    """Whether the ``Tested N GPUs:`` summary was printed, and its verdict per GPU."""
    results: dict[int, str] = {}
    tested = False
    for row in text.splitlines():
        if _TESTED.match(row):
            tested = True
        elif tested and (r := _RESULT.match(row)):
            results[int(r.group(1))] = r.group(2)
    return tested, results


def parse(text: str) -> list[Measurement]:
    text = text.replace("\r", "\n")
    last = None
    for match in _PROGRESS.finditer(text):
        last = match
    out, died = _progress(text, last) if last is not None else ([], [])
    tested, results = _summary(text)
    for gpu, verdict in sorted(results.items()):
        dims = FrozenDims({"gpu": gpu})
        out.append(Measurement(TOOL, "faulty", int(verdict == "FAULTY"), "count", dims))
    problems = [f for f in _FATAL if f in text]
    if died:
        problems.append("worker died on GPU " + ", ".join(map(str, died)))
    faulty = [g for g, v in sorted(results.items()) if v == "FAULTY"]
    if faulty:
        problems.append("FAULTY: GPU " + ", ".join(map(str, faulty)))
    if not tested:
        problems.append("no 'Tested N GPUs' summary: gpu-burn was killed or cut short")
    elif last is None:
        problems.append("no progress line: nothing was measured")
    if problems:
        raise ToolFailure(TOOL, " | ".join(problems), None, [*out])
    return out


def _detect(text: str) -> bool:
    return ("proc'd:" in text and "Gflop/s" in text) or bool(
        re.search(r"^Tested \d+ GPUs:", text, re.MULTILINE)
    )


PARSER = Parser(
    "gpu-burn", parse, "gpu-burn GEMM stress: per-GPU Gflop/s, errors, OK/FAULTY", _detect
)
