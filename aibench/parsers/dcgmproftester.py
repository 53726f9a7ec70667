"""dcgmproftester: the targeted load generator of DCGM (``dcgmproftester12
--no-dcgm-validation -t FIELD_ID -d SECONDS``), its per-second worker lines.

Two line forms are read. DCGM 3.x: ``Worker G:I[FIELD]: Name: generated X/Y, dcgm M:{ GPU:
a, GI: b, CI: c } at T seconds.`` (G the GPU, I the worker on it, FIELD the profiling field
id, e.g. 1001 graphics activity, 1004 tensor activity, 1007 FP32 activity); DCGM 4.x:
``Worker G:I[FIELD]: Name: target T, dcgm V``; DCGM 3.1: ``... generated ???, dcgm V (N
gflops).``. A ``gflops N`` or ``(N gflops)`` on a worker line (versions up to 3.1 print it
for the FP tests; numbers may be in exponent form, ``1.2e+04``, and the tensor test of the
DCGM 3.3.5 container prints ``Worker 0:0 [1004]: ... dcgm 0 (1.89e+05 gflops).`` with a
space before the field id) is read too. Lines before
the workers (DCGM's own messages, as a Kubernetes pod log opens with) are skipped unless
they report an error. Tested on the outputs of DCGM 3.1.3, 3.2 (CUDA 12) and 4.2.3.

Emitted per (dims ``gpu``, ``worker``, ``field_id``, ``field``): ``activity_mean`` and
``activity_max`` (ratio, what DCGM read back over the run), ``samples`` (count, lines
read) and, when printed, ``gflops`` (Gflop/s, the last value).

Failures: output without one worker line (``CacheManager Init Failed. Error: -29`` when not
run as root) and any line with ``Error``/``failed`` are a ToolFailure with the tool's words.
"""

from __future__ import annotations

import re

from aibench.errors import ToolFailure
from aibench.model import FrozenDims, Measurement, Scalar
from aibench.parsers import Parser

TOOL = "dcgmproftester"
# "Worker 0:0[1004]: ..." or, in the DCGM 3.3 images' pod logs, "Worker 0:0 [1004]: ..."
_WORKER = re.compile(r"^Worker (\d+):(\d+) ?\[(\d+)\]: (\w+): (.*)$")
_V3 = re.compile(r"dcgm M:\{ GPU: ([0-9]+(?:\.[0-9]+)?)")
_NUM = r"([0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)"
_V4 = re.compile(r"(?:target|generated) [^,]+, dcgm " + _NUM)
# "gflops 1.2e+04" (older lines) or "(12238.2 gflops)" (DCGM 3.1)
_GFLOPS = re.compile(r"gflops " + _NUM + r"|\(" + _NUM + r" gflops\)", re.IGNORECASE)
_BAD = re.compile(r"\b(Error|error|failed|Failed|FAILED)\b")


def parse(text: str) -> list[Measurement]:
    series: dict[tuple[int, int, int, str], list[float]] = {}
    gflops: dict[tuple[int, int, int, str], float] = {}
    problems: list[str] = []
    for line in text.splitlines():
        m = _WORKER.match(line.strip())
        if not m:
            if _BAD.search(line):
                problems.append(line.strip())
            continue
        key = (int(m.group(1)), int(m.group(2)), int(m.group(3)), m.group(4))
        rest = m.group(5)
        v = _V3.search(rest) or _V4.search(rest)
        if v:
            series.setdefault(key, []).append(float(v.group(1)))
        g = _GFLOPS.search(rest)
        if g:
            gflops[key] = float(g.group(1) or g.group(2))
        if _BAD.search(rest):
            problems.append(line.strip())
    out: list[Measurement] = []
    for key in sorted(series.keys() | gflops.keys()):
        gpu, worker, fid, name = key
        d: dict[str, Scalar] = {"gpu": gpu, "worker": worker, "field_id": fid, "field": name}
        dims = FrozenDims(d)
        values = series.get(key, [])
        if values:
            out.append(Measurement(TOOL, "activity_mean", sum(values) / len(values), "ratio", dims))
            out.append(Measurement(TOOL, "activity_max", max(values), "ratio", dims))
            out.append(Measurement(TOOL, "samples", len(values), "count", dims))
        if key in gflops:
            out.append(Measurement(TOOL, "gflops", gflops[key], "Gflop/s", dims))
    if problems:
        raise ToolFailure(TOOL, " | ".join(problems[:5]), None, [*out])
    if not out:
        first = next((ln.strip() for ln in text.splitlines() if ln.strip()), "(no output)")
        raise ToolFailure(TOOL, f"no worker line: {first[:200]}", None, [*out])
    return out


def _detect(text: str) -> bool:
    return "CacheManager Init Failed" in text or bool(
        re.search(r"^Worker \d+:\d+\[\d+\]: ", text, re.MULTILINE)
    )


PARSER = Parser(
    "dcgmproftester", parse, "dcgmproftester targeted load: DCGM activity per worker", _detect
)
