"""ibstat: InfiniBand / RoCE adapter facts from ``ibstat`` (infiniband-diags).

Reads the plain ``ibstat`` listing (all CAs, all ports); indentation may be TABs or
spaces. Tested on infiniband-diags 39.0 (A100 node, ConnectX-6) and 47.0 (H100 node,
ConnectX-7, InfiniBand and Ethernet ports mixed).

Facts, source ``"ibstat"``: ``hca_count`` (count). Per adapter (dims ``hca``):
``ca_type`` (e.g. MT4129), ``firmware_version``, ``hardware_version``, ``port_count``
(count). Per port (dims ``hca``, ``port``): ``state`` (Active, Down, Initializing ...),
``physical_state`` (LinkUp, Polling, Disabled ...), ``rate`` (Gbit/s as ibstat prints it),
``link_layer`` (InfiniBand | Ethernet).

``ibpanic:`` (ibstat stops when an adapter disappears while it lists them, exit 255) is a
:class:`ToolFailure` with ibstat's message and the adapters read before it in ``partial``.
"""

from __future__ import annotations

import re

from aibench.errors import ParseError, ToolFailure
from aibench.model import Fact, FrozenDims
from aibench.parsers import Parser

SOURCE = "ibstat"
_CA = re.compile(r"^CA '([^']+)'\s*$")
_PORT = re.compile(r"^Port ([0-9]+):\s*$")
# On a stripped line (no blank at either end) this is "^([A-Za-z][A-Za-z ]*?):\s*(.*?)\s*$"
_KV = re.compile(r"([A-Za-z][A-Za-z ]*):\s*(.*)")
_DIGITS = re.compile(r"[0-9]+")

_CA_KEYS = {
    "CA type": ("ca_type", "str", None),
    "Number of ports": ("port_count", "int", "count"),
    "Firmware version": ("firmware_version", "str", None),
    "Hardware version": ("hardware_version", "str", None),
}
_PORT_KEYS = {
    "State": ("state", "str", None),
    "Physical state": ("physical_state", "str", None),
    "Rate": ("rate", "int", "Gbit/s"),
    "Link layer": ("link_layer", "str", None),
}


def parse(text: str) -> list[Fact]:
    out: list[Fact] = []
    hca: str | None = None
    port: int | None = None
    dims: FrozenDims | None = None  # of the current CA or port, shared by its facts
    count = 0
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line:
            continue
        first = line[0]  # one test picks the few lines that are not "key: value"
        if first == "i":
            if line.startswith("ibwarn:"):
                continue
            if line.startswith("ibpanic:"):
                raise ToolFailure(SOURCE, line, line=lineno, partial=[_count(count), *out])
        elif first == "C":
            m = _CA.match(line)
            if m:
                hca, port, dims = m.group(1), None, None
                count += 1
                continue
        elif first == "P":
            m = _PORT.match(line)
            if m:
                if hca is None:
                    raise ParseError(SOURCE, "a port before any CA line", line=lineno)
                port, dims = int(m.group(1)), None
                continue
        m = _KV.match(line)
        if m is None or hca is None:
            raise ParseError(SOURCE, f"unexpected line {line!r}", line=lineno)
        key, value = m.groups()
        table = _PORT_KEYS if port is not None else _CA_KEYS
        if key not in table:
            continue
        name, kind, unit = table[key]
        if dims is None:
            d: dict[str, str | int] = {"hca": hca} if port is None else {"hca": hca, "port": port}
            dims = FrozenDims(d)
        if kind == "int":
            if not _DIGITS.fullmatch(value):
                raise ParseError(SOURCE, f"{key}: not a number: {value!r}", line=lineno)
            out.append(Fact(SOURCE, name, int(value), unit, dims))
        else:
            out.append(Fact(SOURCE, name, value, unit, dims))
    if count == 0:
        raise ParseError(SOURCE, "no CA found in the output")
    return [_count(count), *out]


def _count(n: int) -> Fact:
    return Fact(SOURCE, "hca_count", n, "count")


def _detect(text: str) -> bool:
    return bool(re.search(r"^CA '[^']+'\s*$", text, re.M)) and "Firmware version:" in text


PARSER = Parser(
    "ibstat", parse, "InfiniBand adapter and port facts from ibstat", _detect, emits="facts"
)
