"""GPU probes of AMD and Ascend nodes: their tool run every interval by a fixed loop.

``nvidia-smi`` streams its own samples (:mod:`aibench.telemetry.gpu`); ``amd-smi`` and
``npu-smi`` print one reading per call, so a fixed shell loop (``sh -c SCRIPT sh INTERVAL
TOOL ARGS...``; no inventory value enters it) runs the tool each interval and frames each
reading with ``@@ <epoch seconds> <tool>``. The loop stops at once when the tool is not on
the node, so that the sampler tries the next probe. :class:`VendorParser` reads each whole
frame with the tool's own parser (``amd-smi-metric``, ``npu-smi-info``) and keeps the
figures the telemetry rows judge, under the names the NVIDIA probe gives them:

==============  =========================  ==================
telemetry       amd-smi metric --json      npu-smi info
==============  =========================  ==================
``temp_gpu``    ``temp_hotspot`` (C)       ``temp`` (C)
``power``       ``power_socket`` (W)       ``power`` (W)
``util_gpu``    ``gfx_activity`` (%)       ``aicore_usage`` (%)
``ecc_...``     ``ecc_uncorrectable_total``
==============  =========================  ==================

Neither tool prints a clocks-event mask like NVIDIA's: the throttle row reads nothing of
them, and a node that declares GPUs is MISSING on it rather than passed.
"""

from __future__ import annotations

from collections.abc import Mapping

from aibench import parsers
from aibench.errors import OutputError
from aibench.model import Fact
from aibench.telemetry.store import Sample

SCRIPT = r"""
i=$1; shift
command -v "$1" >/dev/null 2>&1 || { echo "$1: not found" >&2; exit 127; }
while :; do
  echo "@@ $(date +%s.%N) $1"
  "$@" 2>&1
  sleep "$i"
done
"""

# tool -> (argv of one reading, its parser, fact name -> telemetry metric)
PROBES: Mapping[str, tuple[tuple[str, ...], str, Mapping[str, str]]] = {
    "amd-smi": (
        ("amd-smi", "metric", "--json"),
        "amd-smi-metric",
        {
            "temp_hotspot": "temp_gpu",
            "power_socket": "power",
            "gfx_activity": "util_gpu",
            "ecc_uncorrectable_total": "ecc_uncorrected",
        },
    ),
    "npu-smi": (
        ("npu-smi", "info"),
        "npu-smi-info",
        {"temp": "temp_gpu", "power": "power", "aicore_usage": "util_gpu"},
    ),
}


def argv(interval: float, tool: str) -> tuple[str, ...]:
    """The loop that reads ``tool`` every ``interval`` seconds."""
    return ("sh", "-c", SCRIPT, "sh", f"{max(interval, 0.5):g}", *PROBES[tool][0])


def argvs(interval: float) -> list[tuple[str, ...]]:
    return [argv(interval, tool) for tool in PROBES]


class VendorParser:
    """Turns whole frames of the loop into samples; a frame still being written waits."""

    def __init__(self, node: str) -> None:
        self.node = node
        self.rest = ""

    def feed(self, text: str) -> list[Sample]:
        data = self.rest + text
        frames = data.split("@@ ")
        self.rest = "@@ " + frames[-1] if len(frames) > 1 else frames[-1]
        out: list[Sample] = []
        for frame in frames[1:-1]:
            out += self._frame(frame)
        return out

    def _frame(self, frame: str) -> list[Sample]:
        head, _, body = frame.partition("\n")
        parts = head.split()
        if len(parts) < 2 or parts[1] not in PROBES:
            return []
        try:
            t = float(parts[0])
        except ValueError:
            return []
        _, parser, names = PROBES[parts[1]]
        try:
            recs = parsers.parse(parser, body)
        except OutputError:
            return []
        return [s for r in recs if (s := self._sample(t, r, names)) is not None]

    def _sample(self, t: float, r: object, names: Mapping[str, str]) -> Sample | None:
        if not isinstance(r, Fact) or r.name not in names:
            return None
        if not isinstance(r.value, int | float) or isinstance(r.value, bool):
            return None
        index = r.dims.get("gpu", r.dims.get("npu"))
        key = f"gpu{index}" + (f".{r.dims['chip']}" if r.dims.get("chip") else "")
        return Sample(t, self.node, "gpu", names[r.name], key, r.unit or "", float(r.value))


class AnyGpuParser:
    """The parser of whichever GPU probe started on the node: NVIDIA's CSV stream, or the
    loop of another vendor's tool (its frames start with ``@@``)."""

    def __init__(self, node: str) -> None:
        from aibench.telemetry.gpu import GpuParser

        self.nvidia = GpuParser(node)
        self.vendor = VendorParser(node)
        self.chosen: GpuParser | VendorParser | None = None

    def feed(self, text: str) -> list[Sample]:
        if self.chosen is None:
            if not text.strip():
                return []
            self.chosen = self.vendor if text.lstrip().startswith("@@ ") else self.nvidia
        return self.chosen.feed(text)
