"""nvidia-smi dmon: ``nvidia-smi dmon [-s pucm...] [-d SECS] [-c COUNT] [-i IDS]``, the
device monitor's table, one row per GPU per interval.

Two comment lines head the table: the column names (``# gpu pwr gtemp mtemp sm mem enc
dec [jpg ofa] mclk pclk [fb bar1 ...]``, with ``#Date Time`` first under ``-o DT``) and
their units (``# Idx W C C % % ...``); dmon prints them again every so many rows, and each
pair seen holds for the rows after it. A value ``-`` is not measured (memory temperature on
most boards): left out, never 0. A row is the n-th *sample* of its GPU (``Idx``). Tested on
the default columns of a 2022 driver (one GPU from idle to load) and on ``-s pucm`` of a
driver with the JPEG/OFA engines (two A100-SXM4-80GB).

Emitted per sample (dims ``gpu`` and ``sample``), for the columns present: ``power`` (W),
``temp_gpu``, ``temp_memory`` (C), ``util_sm``, ``util_memory``, ``util_enc``,
``util_dec``, ``util_jpg``, ``util_ofa`` (%), ``clock_memory`` and ``clock_graphics``
(``mclk``, ``pclk``; MHz). The other columns (frame buffer, BAR1, PCIe, violations, ECC)
are not read. An output that is the driver's refusal ("NVIDIA-SMI has failed ...",
"Failed to initialize NVML ...") is a ToolFailure; a row whose number of values is not
its header's, or a value that is no number, a ParseError.
"""

from __future__ import annotations

from aibench.errors import ParseError, ToolFailure
from aibench.model import FrozenDims, Measurement
from aibench.parsers import Parser

TOOL = "nvidia-smi-dmon"
# column -> (metric, the unit dmon prints on its units line, which the metric is in)
COLUMNS: dict[str, tuple[str, str]] = {
    "pwr": ("power", "W"),
    "gtemp": ("temp_gpu", "C"),
    "mtemp": ("temp_memory", "C"),
    "sm": ("util_sm", "%"),
    "mem": ("util_memory", "%"),
    "enc": ("util_enc", "%"),
    "dec": ("util_dec", "%"),
    "jpg": ("util_jpg", "%"),
    "ofa": ("util_ofa", "%"),
    "mclk": ("clock_memory", "MHz"),
    "pclk": ("clock_graphics", "MHz"),
}
_FAILED = ("NVIDIA-SMI has failed", "No devices were found", "Failed to initialize NVML")


def _names(line: str) -> list[str]:
    """The column names of a ``# gpu ...`` / ``#Date Time gpu ...`` line."""
    return line.lstrip("#").split()


def parse(text: str) -> list[Measurement]:
    names: list[str] | None = None
    units: list[str] | None = None
    out: list[Measurement] = []
    samples: dict[int, int] = {}
    for n, line in enumerate(text.splitlines(), 1):
        st = line.strip()
        if not st:
            continue
        if st.startswith(_FAILED):
            raise ToolFailure(TOOL, st, n, [*out])
        if st.startswith("#"):
            cols = _names(st)
            if "gpu" in cols:
                names, units = cols, None
            elif names is not None and "Idx" in cols and len(cols) == len(names):
                units = cols
            continue
        if names is None or units is None:
            raise ParseError(TOOL, "a row before the column names and their units", n)
        out += _row(st.split(), names, units, samples, n)
    if not out:
        raise ParseError(TOOL, "no sample: the table has no row")
    return out


def _row(
    cells: list[str], names: list[str], units: list[str], samples: dict[int, int], n: int
) -> list[Measurement]:
    """The measurements of one row: one per known column with a value."""
    if len(cells) != len(names):
        raise ParseError(TOOL, f"{len(cells)} values for {len(names)} columns (cut short?)", n)
    raw_gpu = cells[names.index("gpu")]
    if not raw_gpu.isdigit():
        raise ParseError(TOOL, f"not a GPU index: {raw_gpu!r}", n)
    gpu = int(raw_gpu)
    dims = FrozenDims({"gpu": gpu, "sample": samples.get(gpu, 0)})
    samples[gpu] = samples.get(gpu, 0) + 1
    out = []
    for name, unit, cell in zip(names, units, cells, strict=True):
        spec = COLUMNS.get(name)
        if spec is None or cell == "-":
            continue
        metric, want = spec
        if unit != want:
            raise ParseError(TOOL, f"{name} is in {unit}, not {want}", n)
        try:
            value = float(cell)
        except ValueError:
            raise ParseError(TOOL, f"{name} is not a number: {cell!r}", n) from None
        out.append(Measurement(TOOL, metric, value, unit, dims))
    return out


def _detect(text: str) -> bool:
    head = [ln.lstrip("#").split() for ln in text.lstrip().splitlines()[:2]]
    return (
        len(head) == 2
        and "gpu" in head[0]
        and "pid" not in head[0]  # nvidia-smi pmon
        and any(c in COLUMNS for c in head[0])
        and "Idx" in head[1]
    )


PARSER = Parser(
    "nvidia-smi-dmon",
    parse,
    "nvidia-smi dmon: per-GPU samples of power, temperatures, utilization and clocks",
    _detect,
)
