"""rocm-smi: AMD GPU facts from ``rocm-smi -a`` (text) and ``rocm-smi ... --json``.

rocm-smi is the older ROCm System Management Interface that amd-smi replaces; hosts with
ROCm before 6.x have only this one. Two parsers, both ``emits="facts"``, source
``"rocm-smi"``, the same fact names as :mod:`aibench.parsers.amd_smi` where the meaning is
the same (so a spec can select either source):

``rocm-smi`` (``rocm-smi -a`` / ``--showallinfo``, the text report of
``GPU[N]\\t\\t: <key>: <value>`` lines under ``==== <section> ====`` banners). Tested on
a 4 x MI300X OAM (SR-IOV VF, driver 6.7.0) report and a ROCm 4.1 Vega 10 one.
``rocm-smi-json`` (``rocm-smi --showallinfo --json``: ``{"card0": {<key>: <value>},
"system": {...}}``). Tested on a Radeon RX 6600 report (driver 7.0.0-3-pve). Lines that
say a value is "Not supported" give no fact; in the text forms each is a Note, as is every
other complaint rocm-smi prints beside its numbers (``Exception caught: map::at`` of its
library, ``ERROR:``/``WARNING:`` lines, ``Expected integer value ...``), tested on ROCm
5.7.1, 6.1, 6.x and a rocm-smi-lib 7.0 ``rocm-smi -g`` (current clocks) whose only
complaint is ``map::at``.

Facts: ``driver_version`` (the amdgpu driver, from the system section), ``gpu_count``;
per GPU (dims ``gpu``): ``product_name`` (Card series), ``card_model``, ``card_sku``,
``device_id``, ``target_graphics_version`` (GFX Version), ``vbios_version``, ``bus_id``,
``temp_edge``, ``temp_hotspot`` (the junction sensor), ``temp_mem`` (C), ``power_cap``
(Max Graphics Package Power), ``power_socket`` (W), ``perf_level``, ``gfx_activity`` (%,
GPU use), ``vram_used_percent`` (%), ``vram_vendor``, ``pcie_replay_count`` (count),
the current clocks ``sclk``, ``mclk``, ``fclk``, ``socclk``, ``dcefclk`` (MHz, the
frequency of the level in use: ``sclk clock level: 3: (1138Mhz)``), ``voltage`` (mV, the
"Current voltage" section), ``fan_speed`` (%) and ``fan_rpm`` (RPM),
``compute_partition``, ``memory_partition``, ``firmware_version`` (dims ``fw``: SMC,
SOS, TA XGMI, MEC ... as rocm-smi names the block). A report with no ``GPU[N]`` line
and no card is a :class:`ParseError`.

Plain ``rocm-smi`` (no options) prints the *concise* table under a ``Concise Info``
banner; the ``rocm-smi`` parser reads it too, by the columns of its header line (ROCm
6.x: ``Device Node IDs Temp Power Partitions SCLK MCLK Fan Perf PwrCap VRAM% GPU%`` with
``(Junction)``/``(Socket)`` under them; ROCm 5.x: ``GPU Temp (DieEdge) AvgPwr ...``).
Facts per GPU: ``device_id``, ``temp_hotspot`` or ``temp_edge`` (by the sensor named),
``power_socket`` (W), ``memory_partition``, ``compute_partition``, ``sclk``, ``mclk``
(MHz), ``fan_speed``, ``vram_used_percent``, ``gfx_activity`` (%), ``perf_level``,
``power_cap`` (W); ``N/A``, ``None``, ``Unsupported`` cells give the fact absent with
that word as the reason. rocm-smi's own complaints around the table (``Expected integer
value from monitor, but got ""``, ``GPU[0] : get_power_avg, Unexpected data received``,
``ERROR: ...``) are Notes. Tested on ROCm 5.7.1 (W7900), 6.2.2 and 6.4 (8 x MI300X).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from aibench.errors import ParseError
from aibench.model import Fact, FactValue, FrozenDims, Note
from aibench.parsers import Parser, Record

SOURCE = "rocm-smi"
_LINE = re.compile(r"^GPU\[(\d+)\]\s*:\s*(.*)$")
_FW = re.compile(r"^(.+?) firmware version$", re.IGNORECASE)

# key as rocm-smi prints it (lower case) -> (fact name, kind, unit)
_KEYS: dict[str, tuple[str, str, str | None]] = {
    "card series": ("product_name", "str", None),
    "card model": ("card_model", "str", None),
    "card sku": ("card_sku", "str", None),
    "device id": ("device_id", "str", None),
    "gfx version": ("target_graphics_version", "str", None),
    "vbios version": ("vbios_version", "str", None),
    "pci bus": ("bus_id", "str", None),
    "temperature (sensor edge) (c)": ("temp_edge", "float", "C"),
    "temperature (sensor junction) (c)": ("temp_hotspot", "float", "C"),
    "temperature (sensor memory) (c)": ("temp_mem", "float", "C"),
    "max graphics package power (w)": ("power_cap", "float", "W"),
    "current socket graphics package power (w)": ("power_socket", "float", "W"),
    "average graphics package power (w)": ("power_socket", "float", "W"),
    "performance level": ("perf_level", "str", None),
    "gpu use (%)": ("gfx_activity", "float", "%"),
    "gpu memory use (%)": ("vram_used_percent", "float", "%"),
    "gpu memory allocated (vram%)": ("vram_used_percent", "float", "%"),
    "gpu memory vendor": ("vram_vendor", "str", None),
    "pcie replay count": ("pcie_replay_count", "int", "count"),
    "voltage (mv)": ("voltage", "float", "mV"),
    "fan rpm": ("fan_rpm", "float", "RPM"),
    "compute partition": ("compute_partition", "str", None),
    "memory partition": ("memory_partition", "str", None),
}


# "sclk clock level: S: (137Mhz)" (ROCm 4.1+) or "sclk clock level: 0 (852Mhz)" (older):
# the current clock is the frequency in parentheses; "pcie clock level" is a link speed
_CLOCK_KEY = re.compile(r"^(sclk|mclk|fclk|socclk|dcefclk) clock level$", re.IGNORECASE)
_CLOCK_VALUE = re.compile(r"\((\d+(?:\.\d+)?)\s*Mhz\)\s*$", re.IGNORECASE)
_FAN_LEVEL = re.compile(r"^\d+\s*\((\d+(?:\.\d+)?)%\)$")


def _current(gpu: int, key: str, raw: str) -> Fact | None:
    """The readings whose value needs more than a number: a current clock (``sclk``,
    ``mclk``, ``fclk``, ``socclk``, ``dcefclk``, MHz) and the fan level's percent."""
    k, dims = key.strip(), FrozenDims({"gpu": gpu})
    clock = _CLOCK_KEY.match(k)
    found = _CLOCK_VALUE.search(raw) if clock else _FAN_LEVEL.match(raw.strip())
    if clock is None and k.lower() != "fan level":
        return None
    name, unit = (clock.group(1).lower(), "MHz") if clock else ("fan_speed", "%")
    if found is None:
        raise ParseError(SOURCE, f"GPU[{gpu}] {k}: not a reading: {raw.strip()!r}")
    return Fact(SOURCE, name, float(found.group(1)), unit, dims)


def _value(gpu: int, key: str, raw: str, where: str) -> Fact | None:
    raw = raw.strip()
    low = key.strip().lower()
    dims: dict[str, str | int] = {"gpu": gpu}
    if _CLOCK_KEY.match(key.strip()) or low == "fan level":
        return _current(gpu, key, raw)
    fw = _FW.match(key.strip())
    if fw and low not in _KEYS:
        name, kind, unit = "firmware_version", "str", None
        dims["fw"] = fw.group(1).strip()
    elif low in _KEYS:
        name, kind, unit = _KEYS[low]
    else:
        return None
    if raw in ("N/A", "", "unknown") or "not supported" in raw.lower():
        return Fact(
            SOURCE, name, None, unit, FrozenDims(dims), reason=f"{key.strip()}: {raw or 'empty'}"
        )
    value: FactValue = raw
    if kind != "str":
        try:
            num = float(raw)
        except ValueError:
            raise ParseError(
                SOURCE, f"GPU[{gpu}] {key.strip()}: not a number: {raw!r}", line=None
            ) from None
        value = int(num) if kind == "int" else num
    return Fact(SOURCE, name, value, unit, FrozenDims(dims))


def parse_text(text: str) -> list[Fact]:
    out: list[Fact] = []
    gpus: set[int] = set()
    driver: Fact | None = None
    seen: set[tuple[str, tuple[tuple[str, Any], ...]]] = set()
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if line.lower().startswith("driver version:"):
            driver = Fact(SOURCE, "driver_version", line.split(":", 1)[1].strip())
            continue
        m = _LINE.match(line)
        if not m:
            continue
        gpu = int(m.group(1))
        gpus.add(gpu)
        body = m.group(2)
        if ":" not in body:
            continue
        key, value = body.split(":", 1)
        try:
            fact = _value(gpu, key, value, f"line {lineno}")
        except ParseError as exc:
            raise ParseError(SOURCE, exc.reason, line=lineno) from None
        if fact is None:
            continue
        ident = (fact.name, tuple(sorted(fact.dims.to_dict().items())))
        if ident in seen:  # the same key in two sections (power): the first one counts
            continue
        seen.add(ident)
        out.append(fact)
    if not gpus:
        raise ParseError(SOURCE, "no GPU[N] lines: not a rocm-smi report")
    head = [Fact(SOURCE, "gpu_count", len(gpus), "count")]
    if driver is not None:
        head.insert(0, driver)
    return head + out


def parse_json(text: str) -> list[Fact]:
    start = text.find("{")
    if start < 0:
        raise ParseError(SOURCE, "no JSON object in the output")
    try:
        doc, _ = json.JSONDecoder().raw_decode(text, start)
    except json.JSONDecodeError as exc:
        raise ParseError(
            SOURCE, f"invalid or truncated JSON: {exc.msg}", line=text.count("\n", 0, exc.pos) + 1
        ) from None
    if not isinstance(doc, Mapping):
        raise ParseError(SOURCE, "expected an object of cards")
    cards = sorted(
        (
            (int(k[4:]), v)
            for k, v in doc.items()
            if re.fullmatch(r"card\d+", k) and isinstance(v, Mapping)
        ),
    )
    if not cards:
        raise ParseError(SOURCE, "no card<N> objects: not rocm-smi --json output")
    out: list[Fact] = []
    system = doc.get("system")
    if isinstance(system, Mapping) and "Driver version" in system:
        out.append(Fact(SOURCE, "driver_version", str(system["Driver version"]).strip()))
    out.append(Fact(SOURCE, "gpu_count", len(cards), "count"))
    for gpu, card in cards:
        names = set()
        for key, value in card.items():
            fact = _value(gpu, str(key), str(value), key)
            if fact is None or (fact.name, fact.dims) in names:
                continue
            names.add((fact.name, fact.dims))
            out.append(fact)
    return out


# The concise table of plain ``rocm-smi``: header word (lower case, first word) -> (fact,
# unit, kind); the sub-header under it (``(Junction)``, ``(Avg)``) picks the sensor.
_CONCISE: dict[str, tuple[str, str | None, str]] = {
    "sclk": ("sclk", "MHz", "float"),
    "mclk": ("mclk", "MHz", "float"),
    "fan": ("fan_speed", "%", "float"),
    "perf": ("perf_level", None, "str"),
    "pwrcap": ("power_cap", "W", "float"),
    "vram%": ("vram_used_percent", "%", "float"),
    "gpu%": ("gfx_activity", "%", "float"),
}
_NUMBER = re.compile(r"^(-?[0-9]+(?:\.[0-9]+)?)\s*(?:°?C|c|W|Mhz|MHz|%)?$")
_MISSING = ("N/A", "None", "Unsupported", "unknown", "")


def _columns(header: str, sub: str) -> list[tuple[int, str]]:
    """(start, name) of each column of the header line; a sub-header word under a column
    (``(Junction)``) is added to its name."""
    cols = [(m.start(), m.group(0).lower()) for m in re.finditer(r"\S+(?: \S+)*", header)]
    out = []
    for i, (start, name) in enumerate(cols):
        end = cols[i + 1][0] if i + 1 < len(cols) else len(sub)
        out.append((start, f"{name} {sub[start:end].strip().lower()}".strip()))
    return out


def _missing_or(name: str, unit: str | None, cell: str, dims: FrozenDims) -> Fact:
    if cell in _MISSING:
        return Fact(SOURCE, name, None, unit, dims, reason=f"rocm-smi printed {cell or 'nothing'}")
    return Fact(SOURCE, name, cell, unit, dims)


def _concise_fact(gpu: int, column: str, cell: str) -> list[Fact]:
    dims = FrozenDims({"gpu": gpu})
    word = column.split()[0]
    unit: str | None
    if word == "temp":
        name, unit, kind = ("temp_hotspot" if "junction" in column else "temp_edge"), "C", "float"
    elif word in ("power", "avgpwr"):
        name, unit, kind = "power_socket", "W", "float"
    elif word == "ids":
        return [Fact(SOURCE, "device_id", cell.split(",")[0].strip(), None, dims)]
    elif word == "partitions":  # "NPS1, SPX, 0": memory, compute, partition id
        names = ("memory_partition", "compute_partition")
        cells = [p.strip() for p in cell.split(",")]
        return [_missing_or(n, None, p, dims) for n, p in zip(names, cells, strict=False)]
    elif word in _CONCISE:
        name, unit, kind = _CONCISE[word]
    else:
        return []
    if cell in _MISSING or kind == "str":
        return [_missing_or(name, unit, cell, dims)]
    m = _NUMBER.match(cell)
    if m is None:
        raise ParseError(SOURCE, f"GPU {gpu} {column}: not a number: {cell!r}")
    return [Fact(SOURCE, name, float(m.group(1)), unit, dims)]


def parse_concise(text: str) -> list[Record]:
    """The concise table of plain ``rocm-smi``, with rocm-smi's own warnings as Notes."""
    lines = text.splitlines()
    facts: list[Record] = []
    cols: list[tuple[int, str]] = []
    for n, line in enumerate(lines, 1):
        if re.match(r"^(Device|GPU)\s{2,}", line) and "Temp" in line:
            sub = lines[n] if n < len(lines) and lines[n].startswith(" ") else ""
            cols = _columns(line, sub)
        elif cols and re.match(r"^\d+\s", line):
            gpu = int(line.split()[0])
            for i, (start, name) in enumerate(cols[1:], 1):
                end = cols[i + 1][0] if i + 1 < len(cols) else None
                try:
                    facts += _concise_fact(gpu, name, line[start:end].strip())
                except ParseError as exc:
                    raise ParseError(SOURCE, exc.reason, line=n) from None
    gpus = {f.dims["gpu"] for f in facts if isinstance(f, Fact)}
    if not gpus:
        raise ParseError(SOURCE, "a 'Concise Info' banner but no GPU row under its header")
    return [Fact(SOURCE, "gpu_count", len(gpus), "count"), *facts, *warnings(text)]


# rocm-smi's complaints beside its numbers: a sensor or a function it could not read
# ("Not supported", "unsupported"), a value it could not make sense of, an exception its
# library caught ("Exception caught: map::at"), an ERROR: or WARNING: line
_WARNING = re.compile(
    r"Expected integer value|Unexpected data|^ERROR:|^WARNING:|Not supported|unsupported"
    r"|map::at|Exception caught"
)


def warnings(text: str) -> list[Record]:
    """Every line of rocm-smi's own complaints, as a Note in its words (both forms)."""
    return [
        Note(SOURCE, line.strip(), "warning", n)
        for n, line in enumerate(text.splitlines(), 1)
        if _WARNING.search(line) and not re.match(r"^(?:Device|GPU|\d+)\s{2,}", line)
    ]


def _parse_any_text(text: str) -> list[Record]:
    """``rocm-smi -a`` (GPU[N] key lines) or plain ``rocm-smi`` (the concise table), with
    rocm-smi's complaints beside the numbers as Notes."""
    if "Concise Info" in text:
        return parse_concise(text)
    return [*parse_text(text), *warnings(text)]


PARSER = [
    Parser(
        "rocm-smi",
        _parse_any_text,
        "AMD GPU facts from rocm-smi -a or plain rocm-smi (the concise table)",
        lambda t: (
            "ROCm System Management Interface" in t[:4000]
            and ("GPU[" in t or "Concise Info" in t[:4000])
        ),
        emits="facts",
    ),
    Parser(
        "rocm-smi-json",
        parse_json,
        "AMD GPU facts from rocm-smi --showallinfo --json",
        lambda t: '"card0"' in t[:200],
        emits="facts",
    ),
]
