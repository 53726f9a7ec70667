"""GPU probe: ``nvidia-smi --query-gpu=... --format=csv -lms MS`` on the node, read by the
``nvidia-smi-loop`` parser as it streams.

Fields: timestamp, index, temperature.gpu, power.draw, clocks.sm, clocks_event_reasons
.active (clocks_throttle_reasons.active before driver 535, tried when the first is refused:
the bitmask of why clocks are held down; bit names in
:data:`aibench.parsers.nvidia_smi.CLOCK_EVENT_BITS`), fan.speed, utilization.gpu and
ecc.errors.uncorrected.volatile.total. Samples: source ``gpu``, key ``gpu<index>``.
"""

from __future__ import annotations

from datetime import datetime

from aibench import parsers
from aibench.errors import OutputError
from aibench.model import Measurement
from aibench.telemetry.store import Sample

FIELDS = (
    "timestamp,index,temperature.gpu,power.draw,clocks.sm,{reasons},"
    "fan.speed,utilization.gpu,ecc.errors.uncorrected.volatile.total"
)
# drivers since 535 name the bitmask clocks_event_reasons, older ones clocks_throttle_reasons
REASONS = ("clocks_event_reasons.active", "clocks_throttle_reasons.active")


def argv(interval: float, binary: str = "nvidia-smi", reasons: str = REASONS[0]) -> tuple[str, ...]:
    ms = max(100, int(interval * 1000))
    fields = FIELDS.format(reasons=reasons)
    return (binary, f"--query-gpu={fields}", "--format=csv", "-lms", str(ms))


def argvs(interval: float, binary: str = "nvidia-smi") -> list[tuple[str, ...]]:
    """The loop's command for new drivers, then for old ones (the first that starts wins)."""
    return [argv(interval, binary, r) for r in REASONS]


class GpuParser:
    """Keeps the CSV header and the line being written; turns whole rows into samples."""

    def __init__(self, node: str) -> None:
        self.node = node
        self.header = ""
        self.rest = ""
        self.t0: float | None = None

    def feed(self, text: str) -> list[Sample]:
        data = self.rest + text
        lines = data.split("\n")
        self.rest = lines[-1]
        rows = [ln for ln in lines[:-1] if ln.strip()]
        if not self.header and rows:
            self.header, rows = rows[0], rows[1:]
        if not rows:
            return []
        try:
            recs = parsers.parse("nvidia-smi-loop", "\n".join([self.header, *rows]))
        except OutputError:
            return []
        out = []
        stamps = {}
        for i, row in enumerate(rows):
            first = row.split(",", 1)[0].strip()
            try:
                stamps[i] = datetime.strptime(first, "%Y/%m/%d %H:%M:%S.%f").timestamp()
            except ValueError:
                continue
        for r in recs:
            if not isinstance(r, Measurement):
                continue
            gpu, sample = r.dims.get("gpu"), int(r.dims.get("sample", 0))
            # sample n of a GPU is the n-th row of that GPU in this chunk: find its time
            t = _time_of(rows, gpu, sample, stamps)
            if t is None:
                continue
            out.append(Sample(t, self.node, "gpu", r.metric, f"gpu{gpu}", r.unit, r.value))
        return out


def _time_of(rows: list[str], gpu: object, sample: int, stamps: dict[int, float]) -> float | None:
    seen = -1
    for i, row in enumerate(rows):
        cells = [c.strip() for c in row.split(",")]
        if len(cells) > 1 and cells[1] == str(gpu):
            seen += 1
            if seen == sample:
                return stamps.get(i)
    return None
