"""nvidia-smi query loop: ``nvidia-smi --query-gpu=<fields> --format=csv[,nounits] -lms MS``
(or ``-l S``), the CSV that nvidia-smi keeps printing, one row per GPU per interval.

The header names the fields (with their unit in brackets unless ``nounits``); values may
carry the unit (``83.92 W``, ``26 %``, ``1320 MHz``) or be ``[N/A]``/``[Not Supported]``
(left out: not measured is not 0). A header repeated mid-stream (a restarted loop) is
skipped. GPUs are told apart by ``index`` (else ``pci.bus_id``, else ``uuid``); a row is the
n-th *sample* of its GPU. Tested on driver 520.56.06 (a 1-GPU loop under load) and
590.48.01 (H100, every field).

Emitted per sample (dims ``gpu`` and ``sample``; plus ``t``, seconds since the first row,
when the ``timestamp`` field is queried), for the fields present: ``temp_gpu``,
``temp_memory`` (C), ``power`` (W; the first of ``power.draw``, ``power.draw.average``
and ``power.draw.instant`` in the header), ``power_limit`` (W), ``clock_sm``, ``clock_graphics``,
``clock_memory`` (MHz), ``util_gpu``, ``util_memory``, ``fan`` (%), ``memory_used`` (MiB),
``ecc_corrected``, ``ecc_uncorrected`` (count, volatile totals) and ``clocks_event_mask``
(count: the ``clocks_event_reasons.active`` / ``clocks_throttle_reasons.active`` bitmask as
an integer; :func:`aibench.parsers.nvidia_smi.decode_clock_events` names its bits).
Other fields are ignored. Driver failures are a ToolFailure as for the other nvidia-smi
parsers.
"""

from __future__ import annotations

import csv
import io
import re
from datetime import datetime

from aibench.errors import ParseError, ToolFailure
from aibench.model import FrozenDims, Measurement
from aibench.parsers import Parser

TOOL = "nvidia-smi"
FIELDS: dict[str, tuple[str, str]] = {
    "temperature.gpu": ("temp_gpu", "C"),
    "temperature.memory": ("temp_memory", "C"),
    "power.draw": ("power", "W"),
    "power.draw.instant": ("power", "W"),
    "power.draw.average": ("power", "W"),
    "power.limit": ("power_limit", "W"),
    "clocks.current.sm": ("clock_sm", "MHz"),
    "clocks.sm": ("clock_sm", "MHz"),
    "clocks.current.graphics": ("clock_graphics", "MHz"),
    "clocks.gr": ("clock_graphics", "MHz"),
    "clocks.current.memory": ("clock_memory", "MHz"),
    "clocks.mem": ("clock_memory", "MHz"),
    "utilization.gpu": ("util_gpu", "%"),
    "utilization.memory": ("util_memory", "%"),
    "fan.speed": ("fan", "%"),
    "memory.used": ("memory_used", "MiB"),
    "ecc.errors.corrected.volatile.total": ("ecc_corrected", "count"),
    "ecc.errors.uncorrected.volatile.total": ("ecc_uncorrected", "count"),
    "clocks_event_reasons.active": ("clocks_event_mask", "count"),
    "clocks_throttle_reasons.active": ("clocks_event_mask", "count"),
}
_KEYS = ("index", "pci.bus_id", "uuid")
_UNIT = re.compile(r"\s*\[[^\]]*\]$")
_NUMBER = re.compile(r"^(-?[0-9]+(?:\.[0-9]+)?)(?:\s*(?:W|%|MHz|MiB|C))?$")
_FAILED = ("NVIDIA-SMI has failed", "No devices were found", "Failed to initialize NVML")
_ABSENT = ("N/A", "Not Supported", "Unknown Error", "Requested functionality has been deprecated")


def _header(line: str) -> list[str]:
    return [_UNIT.sub("", h.strip()) for h in next(csv.reader([line], skipinitialspace=True))]


def _time(raw: str, n: int) -> datetime:
    for fmt in ("%Y/%m/%d %H:%M:%S.%f", "%Y/%m/%d %H:%M:%S"):
        try:
            return datetime.strptime(raw.strip(), fmt)
        except ValueError:
            continue
    raise ParseError(TOOL, f"timestamp not read: {raw!r}", n)


def _cell_value(field: str, metric: str, cell: str, n: int) -> float | None:
    """The number in one cell (a hex mask for the clock events); None when not measured."""
    raw = cell.strip().strip("[]").strip()
    if raw in _ABSENT or not raw:
        return None
    if metric == "clocks_event_mask":
        try:
            return float(int(raw, 16))
        except ValueError:
            raise ParseError(TOOL, f"{field} is not a hex mask: {cell!r}", n) from None
    m = _NUMBER.match(raw)
    if not m:
        raise ParseError(TOOL, f"{field} is not a number: {cell!r}", n)
    return float(m.group(1))


def _row(header: list[str], cells: list[str], dims: FrozenDims, n: int) -> list[Measurement]:
    """One GPU's sample: a measurement per known field (the first of the power fields)."""
    out = []
    seen: set[str] = set()
    for field, cell in zip(header, cells, strict=True):
        spec = FIELDS.get(field)
        if spec is None or spec[0] in seen:
            continue
        metric, unit = spec
        value = _cell_value(field, metric, cell, n)
        if value is None:
            continue
        seen.add(metric)
        out.append(Measurement(TOOL, metric, value, unit, dims))
    return out


def parse(text: str) -> list[Measurement]:
    header: list[str] | None = None
    out: list[Measurement] = []
    samples: dict[str, int] = {}
    t0: datetime | None = None
    key_col = -1
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        if any(line.strip().startswith(f) for f in _FAILED):
            raise ToolFailure(TOOL, line.strip(), n, [*out])
        if header is None or line.split(",", 1)[0].strip() == header[0]:
            h = _header(line)
            if header is not None and h != header:
                raise ParseError(TOOL, "a second header with other fields", n)
            header = h
            key_col = next((h.index(k) for k in _KEYS if k in h), -1)
            continue
        cells = next(csv.reader(io.StringIO(line), skipinitialspace=True))
        if len(cells) != len(header):
            raise ParseError(TOOL, f"{len(cells)} values for {len(header)} fields (cut short?)", n)
        gpu_raw = cells[key_col].strip() if key_col >= 0 else "0"
        gpu: int | str = int(gpu_raw) if gpu_raw.isdigit() else gpu_raw
        sample = samples.get(gpu_raw, 0)
        samples[gpu_raw] = sample + 1
        d: dict[str, str | int | float] = {"gpu": gpu, "sample": sample}
        if "timestamp" in header:
            t = _time(cells[header.index("timestamp")], n)
            t0 = t0 or t
            d["t"] = round((t - t0).total_seconds(), 3)
        out += _row(header, cells, FrozenDims(d), n)
    if header is None:
        raise ParseError(TOOL, "empty output")
    if key_col < 0 and sum(samples.values()) > 1:
        raise ParseError(TOOL, "several rows but no index, pci.bus_id or uuid to tell GPUs apart")
    return out


def repeats_a_gpu(text: str) -> bool:
    """Whether a --query-gpu CSV lists some GPU twice (a loop), by its first column."""
    rows = [ln.split(",", 1)[0].strip() for ln in text.strip().splitlines()[1:] if ln.strip()]
    return len(rows) > len(set(rows)) > 0


def _detect(text: str) -> bool:
    first = text.lstrip().split("\n", 1)[0]
    known = any(f in first for f in ("temperature.gpu", "power.draw", "clocks."))
    return known and first.split(",", 1)[0].strip() in _KEYS and repeats_a_gpu(text)


PARSER = Parser(
    "nvidia-smi-loop",
    parse,
    "nvidia-smi --query-gpu CSV loop (-lms): per-GPU time series",
    _detect,
)
