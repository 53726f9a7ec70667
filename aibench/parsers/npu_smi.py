"""npu-smi: Huawei Ascend NPU facts from ``npu-smi info`` and ``npu-smi info -t <type> -i N``.

Two parsers, both ``emits="facts"``, source ``"npu-smi"``.

``npu-smi-info`` reads the box table of plain ``npu-smi info``. The header line gives
``npu_smi_version`` and ``driver_version`` (``| npu-smi 23.0.7   Version: 23.0.7 |``:
the tool's version and the installed NPU driver's). Each chip is two rows:
``| NPU  Name | Health | Power(W) Temp(C) Hugepages-Usage(page) |`` and ``| Chip [Device
| Phy-ID] | Bus-Id | AICore(%) Memory-Usage(MB) [HBM-Usage(MB)] |``. Facts: ``npu_count``
(distinct NPU ids), ``chip_count``; per chip (dims ``npu``, ``chip``): ``product_name``
(910B2, 910B2C, Ascend910, 310B4 ...), ``health`` (OK | Warning | Alarm | Critical as
printed; a chip not ``OK`` also gives ``health_alarm``: ``warning`` for Warning,
``critical`` for Alarm and Critical, and the node fact ``health_alarms`` counts them),
``power`` (W; ``-`` on the second chip of a two-chip card is absent), ``temp``
(C), ``phy_id`` / ``device_id`` (the second id of the chip row, as the header names it),
``hugepages_used`` / ``hugepages_total`` (page), ``aicore_usage`` (%),
``memory_used`` / ``memory_total`` (MiB, the chip's DDR), ``hbm_used`` / ``hbm_total``
(MiB) where the header has the HBM column, ``bus_id`` (``NA`` is absent). npu-smi labels
the memory MB but prints MiB: a 64 GiB HBM stack is ``65536``. The process table after the
chips is not read. Tested on npu-smi 23.0.0 (310B4, no HBM column, ``Chip Device``),
23.0.2.1 (910B2C), 23.0.7 (8 x 910B2) and 25.2.0 (``Chip Phy-ID``, two chips per NPU).

``npu-smi-detail`` reads ``npu-smi info -t <type> -i N [-c C]`` outputs, each preceded by
its own command line (``npu-smi info -i 0 -t board``), as Huawei's fault-collection guide
stores them and as the preflight collects them for every NPU. ``board``:
``software_version`` (the driver), ``firmware_version``, ``compatibility``,
``board_id``, ``chip_name`` (with ``-c``); ``health``: ``health_status``, ``error_code``;
``ecc`` and ``usages``: every ``Key : value`` line as a snake_case name (``HBM Double Bit
Error Count`` -> ``hbm_double_bit_error_count`` (count), ``HBM Capacity(MB)`` ->
``hbm_capacity`` (MiB), ``Aicore Usage Rate(%)`` -> ``aicore_usage_rate`` (%)). Dims
``npu`` (and ``chip`` with ``-c``). ``...`` lines (elisions of a published capture) and
other types are skipped; a section with no ``Key : value`` line gives its key fact
absent with npu-smi's words. Tested on the examples of Huawei's MindCluster fault
diagnosis guide (npu-smi 23.0.5, firmware 7.1.0.7.220).
"""

from __future__ import annotations

import re

from aibench.errors import ParseError
from aibench.model import Fact, FactValue, FrozenDims
from aibench.parsers import Parser

SOURCE = "npu-smi"
_VERSION = re.compile(r"npu-smi\s+(\S+)\s+Version:\s*(\S+)")
_USED_TOTAL = re.compile(r"^(\d+)\s*/\s*(\d+)$")
_NA = ("NA", "N/A", "-", "")


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _num(text: str, what: str, lineno: int) -> float | int | None:
    t = text.strip()
    if t in _NA:
        return None
    try:
        v = float(t)
    except ValueError:
        raise ParseError(SOURCE, f"{what}: not a number: {t!r}", line=lineno) from None
    return int(v) if v.is_integer() and "." not in t else v


def _pairs(text: str) -> list[str]:
    """``'0           0    / 0          20701/ 65536'`` -> ['0', '0/0', '20701/65536']."""
    return re.sub(r"\s*/\s*", "/", text.strip()).split()


def parse_info(text: str) -> list[Fact]:
    out: list[Fact] = []
    header: list[Fact] = []
    has_hbm = False
    id_name = ""
    pending: tuple[int, str, list[str], int] | None = None  # npu, name, cells, line
    npus: set[int] = set()
    chips = 0
    in_procs = False
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line.startswith("|"):
            continue
        m = _VERSION.search(line)
        if m:
            header = [
                Fact(SOURCE, "npu_smi_version", m.group(1)),
                Fact(SOURCE, "driver_version", m.group(2)),
            ]
            continue
        cells = _cells(line)
        first = cells[0].split()
        if first[:2] == ["NPU", "Name"]:
            continue
        if first[:1] == ["Chip"]:
            has_hbm, id_name = "HBM-Usage" in line, _id_name(first)
            continue
        if first[:2] == ["NPU", "Chip"] or line.startswith("| No running processes"):
            in_procs = True
            continue
        if in_procs or len(cells) != 3 or not first or not first[0].isdigit():
            continue
        if pending is None:
            pending = (int(first[0]), " ".join(first[1:]), cells, lineno)
            continue
        npu, name, top, _top_line = pending
        pending = None
        npus.add(npu)
        chips += 1
        dims = FrozenDims({"npu": npu, "chip": int(first[0])})
        out += _npu_row(npu, name, top, dims, lineno - 1)
        out += _chip_row(cells, has_hbm, id_name, dims, lineno)
    if pending is not None:
        raise ParseError(SOURCE, "a chip's first row without its second row", line=pending[3])
    if not header:
        raise ParseError(SOURCE, "no '| npu-smi X  Version: Y |' header: not npu-smi info")
    return header + _counts(npus, chips, out) + out


def _counts(npus: set[int], chips: int, facts: list[Fact]) -> list[Fact]:
    """The node's counts: NPUs, chips, and chips in a problem state."""
    alarms = sum(1 for f in facts if f.name == "health_alarm")
    return [
        Fact(SOURCE, "npu_count", len(npus), "count"),
        Fact(SOURCE, "chip_count", chips, "count"),
        Fact(SOURCE, "health_alarms", alarms, "count"),
    ]


def _id_name(first: list[str]) -> str:
    """The fact of the chip row's second id, as the table header names it (``Chip Phy-ID``)."""
    if len(first) < 2:
        return ""
    return {"Device": "device_id", "Phy-ID": "phy_id"}.get(first[1], "")


def _fact(
    dims: FrozenDims, name: str, value: FactValue, unit: str | None = None, raw: str = ""
) -> Fact:
    """A chip's fact; one not read is absent with what npu-smi printed instead."""
    if value is None:
        why = f"npu-smi prints {raw!r}" if raw else "not printed"
        return Fact(SOURCE, name, None, unit, dims, reason=why)
    return Fact(SOURCE, name, value, unit, dims)


def _npu_row(npu: int, name: str, top: list[str], dims: FrozenDims, lineno: int) -> list[Fact]:
    """A chip's first row ``| NPU Name | Health | Power(W) Temp(C) Hugepages-Usage(page) |``."""
    facts = [_fact(dims, "product_name", name or None), _fact(dims, "health", top[1] or None)]
    if top[1] and top[1] != "OK":  # npu-smi's own verdict on the chip: a problem state
        facts.append(_fact(dims, "health_alarm", "warning" if top[1] == "Warning" else "critical"))
    power_temp_huge = _pairs(top[2])
    if len(power_temp_huge) != 3:
        raise ParseError(SOURCE, f"NPU {npu}: power, temp, hugepages: {top[2]!r}", line=lineno)
    power, temp, huge = power_temp_huge
    facts.append(_fact(dims, "power", _num(power, "power", lineno), "W", power))
    facts.append(_fact(dims, "temp", _num(temp, "temp", lineno), "C", temp))
    used, total = _split(huge, "hugepages", lineno)
    facts += [
        _fact(dims, "hugepages_used", used, "page"),
        _fact(dims, "hugepages_total", total, "page"),
    ]
    return facts


def _chip_row(
    bottom: list[str], hbm: bool, id_name: str, dims: FrozenDims, lineno: int
) -> list[Fact]:
    """A chip's second row ``| Chip [Device] | Bus-Id | AICore(%) Memory-Usage(MB) [HBM] |``."""
    facts = []
    ids = bottom[0].split()
    if len(ids) > 1 and id_name:
        facts.append(_fact(dims, id_name, _num(ids[1], id_name, lineno), None, ids[1]))
    facts.append(_fact(dims, "bus_id", None if bottom[1] in _NA else bottom[1], None, bottom[1]))
    usage = _pairs(bottom[2])
    if len(usage) != (3 if hbm else 2):
        raise ParseError(
            SOURCE, f"chip {dims['chip']}: aicore and memory usage: {bottom[2]!r}", line=lineno
        )
    facts.append(_fact(dims, "aicore_usage", _num(usage[0], "aicore", lineno), "%", usage[0]))
    for what, pair in zip(("memory", "hbm"), usage[1:], strict=False):
        used, total = _split(pair, what, lineno)
        facts += [
            _fact(dims, f"{what}_used", used, "MiB"),
            _fact(dims, f"{what}_total", total, "MiB"),
        ]
    return facts


def _split(pair: str, what: str, lineno: int) -> tuple[int, int]:
    m = _USED_TOTAL.match(pair)
    if not m:
        raise ParseError(SOURCE, f"{what}: expected used / total, got {pair!r}", line=lineno)
    return int(m.group(1)), int(m.group(2))


# ----------------------------------------------------------------------------- -t TYPE
_CMD = re.compile(r"npu-smi info -i (\d+)(?: -c (\d+))? -t (\w+)")
_KV = re.compile(r"^([A-Za-z][A-Za-z0-9 .()%/-]*?)\s*:\s*(.*)$")
_UNIT = re.compile(r"^(.*?)\((MB|%|page)\)$")
_UNITS = {"MB": "MiB", "%": "%", "page": "page"}
_BOARD = {
    "software version": "software_version",
    "firmware version": "firmware_version",
    "compatibility": "compatibility",
    "board id": "board_id",
    "chip name": "chip_name",
    "chip type": "chip_type",
}
_HEALTH = {"health status": "health_status", "error code": "error_code"}
_KEY_FACT = {
    "board": "firmware_version",
    "health": "health_status",
    "ecc": "hbm_double_bit_error_count",
}
_SKIP = {"npu id", "chip id", "chip count"}


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


def parse_detail(text: str) -> list[Fact]:
    out: list[Fact] = []
    section: tuple[str, FrozenDims, list[str]] | None = None
    got = 0

    def close() -> None:
        if section is None:
            return
        kind, dims, lines = section
        if got == 0 and kind in _KEY_FACT:
            why = " | ".join(lines[:2]) or "no output"
            out.append(Fact(SOURCE, _KEY_FACT[kind], None, None, dims, reason=f"npu-smi: {why}"))

    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line == "...":
            continue
        m = _CMD.search(line)
        if m:
            close()
            d: dict[str, str | int] = {"npu": int(m.group(1))}
            if m.group(2) is not None:
                d["chip"] = int(m.group(2))
            section, got = (m.group(3), FrozenDims(d), []), 0
            continue
        if section is None:
            raise ParseError(
                SOURCE, "output before any 'npu-smi info -i N -t TYPE' line", line=lineno
            )
        kind, dims, lines = section
        kv = _KV.match(line)
        if kv is None:
            lines.append(line)
            continue
        key, value = kv.group(1).strip(), kv.group(2).strip()
        low = key.lower()
        if low in _SKIP:
            continue
        fact = _detail_fact(kind, key, low, value, dims, lineno)
        if fact is not None:
            out.append(fact)
            got += 1
    close()
    if not out:
        raise ParseError(SOURCE, "no 'npu-smi info -i N -t TYPE' output found")
    return out


def _detail_fact(
    kind: str, key: str, low: str, value: str, dims: FrozenDims, lineno: int
) -> Fact | None:
    if kind == "board":
        name = _BOARD.get(low)
        unit = None
        number = False
    elif kind == "health":
        name = _HEALTH.get(low)
        unit = None
        number = False
    elif kind in ("ecc", "usages", "memory"):
        mu = _UNIT.match(key)
        base, unit = (mu.group(1), _UNITS[mu.group(2)]) if mu else (key, "count")
        name = _slug(base)
        number = True
    else:
        return None
    if name is None:
        return None
    if value in _NA:
        return Fact(SOURCE, name, None, unit, dims, reason=f"{key}: {value or 'empty'}")
    if not number:
        return Fact(SOURCE, name, value, unit, dims)
    v = _num(value, key, lineno)
    return Fact(SOURCE, name, v, unit, dims)


PARSER = [
    Parser(
        "npu-smi-info",
        parse_info,
        "Ascend NPU facts from npu-smi info",
        lambda t: "| npu-smi " in t[:1000] and "Version:" in t[:1000],
        emits="facts",
    ),
    Parser(
        "npu-smi-detail",
        parse_detail,
        "Ascend NPU board, health, ECC and usage facts from npu-smi info -t TYPE -i N",
        lambda t: bool(_CMD.search(t[:300])),
        emits="facts",
    ),
]
