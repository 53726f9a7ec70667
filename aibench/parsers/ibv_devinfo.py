"""ibv_devinfo: RDMA device facts from ``ibv_devinfo`` (rdma-core / MLNX_OFED), plain or -v.

The verbs view of the adapters, present also on RoCE hosts without infiniband-diags.
Reads ``hca_id:`` blocks and their ``port:`` sections; the verbose (-v) device
attributes, flag lists and lines without a colon are skipped. Tested on MLNX_OFED's
ibv_devinfo with ConnectX-3 (mlx4) adapters, plain and ``-v``.

Facts, source ``"ibv_devinfo"``: ``hca_count`` (count; 0 for "No IB devices found").
Per adapter (dims ``hca``): ``transport``, ``firmware_version`` (fw_ver), ``hardware_version``
(hw_ver), ``vendor_part_id``, ``board_id``, ``port_count`` (count). Per port (dims ``hca``,
``port``): ``state`` (PORT_ACTIVE, PORT_DOWN ...), ``max_mtu`` and ``active_mtu`` (B),
``link_layer``; with -v also ``phys_state`` (LINK_UP, POLLING ...), ``active_width`` (4X
...) and ``active_speed`` (text as printed, e.g. ``2.5 Gbps``).
"""

from __future__ import annotations

import re

from aibench.errors import ParseError
from aibench.model import Fact, FactValue, FrozenDims
from aibench.parsers import Parser

SOURCE = "ibv_devinfo"
_KV = re.compile(r"^\s*([a-z_]+):\s+(.*?)\s*$")
_ENUM = re.compile(r"^(\S+(?: \S+)*?) \(\d+\)$")  # "PORT_ACTIVE (4)" -> "PORT_ACTIVE"
_LEADING_DIGITS = re.compile(r"^([0-9]+)")
_DIGITS = re.compile(r"[0-9]+")

_HCA_KEYS = {
    "transport": ("transport", "enum"),
    "fw_ver": ("firmware_version", "str"),
    "hw_ver": ("hardware_version", "str"),
    "vendor_part_id": ("vendor_part_id", "str"),
    "board_id": ("board_id", "str"),
    "phys_port_cnt": ("port_count", "int"),
}
_PORT_KEYS = {
    "state": ("state", "enum"),
    "max_mtu": ("max_mtu", "mtu"),
    "active_mtu": ("active_mtu", "mtu"),
    "link_layer": ("link_layer", "str"),
    "phys_state": ("phys_state", "enum"),
    "active_width": ("active_width", "enum"),
    "active_speed": ("active_speed", "enum"),
}


def _value(kind: str, raw: str, key: str, line: int) -> tuple[FactValue, str | None]:
    if kind == "enum":
        m = _ENUM.match(raw)
        return (m.group(1) if m else raw), None
    if kind in ("int", "mtu"):
        m = _LEADING_DIGITS.match(raw)
        if m is None:
            raise ParseError(SOURCE, f"{key}: not a number: {raw!r}", line=line)
        return int(m.group(1)), ("count" if kind == "int" else "B")
    return raw, None


def parse(text: str) -> list[Fact]:
    if "No IB devices found" in text:
        return [Fact(SOURCE, "hca_count", 0, "count")]
    out: list[Fact] = []
    hca: str | None = None
    port: int | None = None
    dims: FrozenDims | None = None  # of the current adapter or port, shared by its facts
    count = 0
    for lineno, line in enumerate(text.splitlines(), 1):
        if line.startswith("hca_id:"):
            hca, port, dims = line.split(":", 1)[1].strip(), None, None
            count += 1
            continue
        m = _KV.match(line)
        if m is None:
            continue
        key, raw = m.groups()
        if hca is None:
            raise ParseError(SOURCE, f"{key} before any hca_id line", line=lineno)
        if key == "port":
            if not _DIGITS.fullmatch(raw):
                raise ParseError(SOURCE, f"port: not a number: {raw!r}", line=lineno)
            port, dims = int(raw), None
            continue
        table = _PORT_KEYS if port is not None else _HCA_KEYS
        if key not in table:
            continue
        name, kind = table[key]
        value, unit = _value(kind, raw, key, lineno)
        if dims is None:
            d: dict[str, str | int] = {"hca": hca} if port is None else {"hca": hca, "port": port}
            dims = FrozenDims(d)
        out.append(Fact(SOURCE, name, value, unit, dims))
    if count == 0:
        raise ParseError(SOURCE, "no hca_id line in the output")
    return [Fact(SOURCE, "hca_count", count, "count"), *out]


def _detect(text: str) -> bool:
    return text.startswith("hca_id:") or "\nhca_id:\t" in text


PARSER = Parser(
    "ibv-devinfo", parse, "RDMA device and port facts from ibv_devinfo", _detect, emits="facts"
)
