"""hccn_tool: per-NPU RoCE port facts of Huawei Ascend servers (``hccn_tool -i N -<query> -g``).

Reads the outputs of several ``hccn_tool`` queries, each preceded by its own command line
(``/usr/local/Ascend/driver/tools/hccn_tool -i 0 -link -g``), the layout in which Huawei's
fault-collection guide stores them and in which the preflight collects them for every
NPU. Source ``"hccn_tool"``, ``emits="facts"``, dims ``device`` (the NPU's device id).

=================  ==============================================================
query              facts
=================  ==============================================================
``-link -g``       ``link_status`` (``UP`` | ``DOWN`` as printed)
``-net_health``    ``net_health`` (``Success``, ``Init``, ``Socket fail`` ...)
``-ip -g``         ``ip_address``, ``netmask``
``-speed -g``      ``speed`` (Gbit/s; hccn_tool prints ``Speed: 100000 Mb/s``)
``-optical -g``    ``optical_present`` (``present`` | ``not present``); every other
                   ``Key : value`` line as ``optical_<key>`` (``Tx Power : 4.4035 mW``
                   -> ``optical_tx_power`` 4.4035 mW; flags stay text)
``-fec -g``        ``fec_mode``
``-link_stat -g``  ``link_up_count``, ``link_down_count`` (count; CANN 8 prints the
                   down count and opens each line with ``[devid N]``)
=================  ==============================================================

Problem states: a link not ``UP`` (critical) and a net health other than ``Success``
(``Init``: warning; ``Fault``, ``Socket fail`` ...: critical) also give ``health_alarm``
with the same dims; the node fact ``health_alarms`` counts them.

Output saved without the command lines (``link status: UP``, ``ipaddr:10.86.1.80`` as
printed) is read too: each line's key says which query it answers, and the facts have no
``device`` dim (the device is in the command line only). Other queries (``-stat``,
``-tls`` ...) are skipped. A ``-link``, ``-ip``, ``-speed`` or
``-optical`` section without its expected line (hccn_tool's error text instead, or
nothing) gives that key fact absent, with hccn_tool's words as the reason. ``...`` lines
(elisions in a published capture) are skipped. Tested on the examples of Huawei's
MindCluster fault diagnosis guide (Atlas A2 training servers). The speed line format is
the one hccn_tool prints according to Huawei's npu-exporter (``Speed: 100000 Mb/s``); no
captured ``-speed`` output was available, so it is not in the golden fixtures.
"""

from __future__ import annotations

import re

from aibench.errors import ParseError
from aibench.model import Fact, FactValue, FrozenDims
from aibench.parsers import Parser

SOURCE = "hccn_tool"
_CMD = re.compile(r"hccn_tool\s+-i\s+(\d+)\s+-(\w+)\s+-g")
# every line of a query's answer may open with "[device N]" (CANN 6/7) or "[devid N]" (8.x)
_KV = re.compile(r"^(?:\[dev(?:ice|id) \d+\])?\s*([A-Za-z][A-Za-z0-9 _()-]*?)\s*:\s*(.*)$")
_MEASURE = re.compile(r"^(-?\d+(?:\.\d+)?)\s*([A-Za-z%]+)?$")
_SPEED = re.compile(r"^(\d+(?:\.\d+)?)\s*Mb/s$", re.IGNORECASE)
# The query a line answers, by its key, for output saved without the command lines
_QUERY_OF = {
    "link status": "link",
    "net health status": "net_health",
    "ipaddr": "ip",
    "netmask": "ip",
    "optical info": "optical",
    "fec mode": "fec",
    "link up count": "link_stat",
    "link down count": "link_stat",
    "speed": "speed",
}
_BARE = re.compile(
    r"\A\s*(?:link status: (?:UP|DOWN)|net health status: \w|ipaddr:\d|optical info:\s*$)",
    re.M,
)
_KEY_FACT = {
    "link": ("link_status", None),
    "ip": ("ip_address", None),
    "speed": ("speed", "Gbit/s"),
    "optical": ("optical_present", None),
}


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


def parse(text: str) -> list[Fact]:
    out: list[Fact] = []
    query = ""
    dims = FrozenDims({})
    lines: list[str] = []
    found: set[str] = set()
    bare = False  # saved without its command lines: no device, no "missing" facts
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line == "...":
            continue
        m = _CMD.search(line)
        if m:
            if not bare:
                out += _missing(query, found, lines, dims)
            dims = FrozenDims({"device": int(m.group(1))})
            query, lines, found = m.group(2), [], set()
            continue
        kv = _KV.match(line)
        known = _QUERY_OF.get(kv.group(1).strip().lower()) if kv else None
        if known and (not query or bare):  # no command lines: the key says the query
            query, bare = known, True
        if not query:
            raise ParseError(
                SOURCE,
                "neither a 'hccn_tool -i N -QUERY -g' line nor a line hccn_tool prints "
                "('link status: UP', 'ipaddr:...'): not hccn_tool output",
                line=lineno,
            )
        if kv is None:
            lines.append(line)
            continue
        fact = _fact(query, kv.group(1).strip(), kv.group(2).strip(), dims, lineno)
        if fact is None:
            lines.append(line)
            continue
        found.add(fact.name)
        out.append(fact)
    if not bare:
        out += _missing(query, found, lines, dims)
    if not query:
        raise ParseError(SOURCE, "no 'hccn_tool -i N -QUERY -g' section found")
    return out + _alarms(out)


def _missing(query: str, found: set[str], lines: list[str], dims: FrozenDims) -> list[Fact]:
    """A section's key fact, absent with hccn_tool's words, when the section lacks it."""
    if query not in _KEY_FACT:
        return []
    name, unit = _KEY_FACT[query]
    if name in found:
        return []
    why = " | ".join(lines[:2]) or "no output"
    return [Fact(SOURCE, name, None, unit, dims, reason=f"hccn_tool -{query}: {why}")]


def _alarms(facts: list[Fact]) -> list[Fact]:
    """hccn_tool's own verdicts as problem states: a link ``DOWN`` and a net health other
    than ``Success`` (``Init``: not set up yet, a warning; any fault: critical) give
    ``health_alarm`` beside the fact, and ``health_alarms`` counts them."""
    out = []
    for f in facts:
        level = None
        if f.name == "link_status" and f.value is not None and f.value != "UP":
            level = "critical"
        elif f.name == "net_health" and f.value is not None and f.value != "Success":
            level = "warning" if f.value == "Init" else "critical"
        if level:
            out.append(
                Fact(SOURCE, "health_alarm", level, None, f.dims, reason=f"{f.name} {f.value}")
            )
    return [*out, Fact(SOURCE, "health_alarms", len(out), "count")]


def _fact(query: str, key: str, value: str, dims: FrozenDims, lineno: int) -> Fact | None:
    low = key.lower()
    v: FactValue = value
    unit: str | None = None
    if query == "link" and low == "link status":
        name = "link_status"
    elif query == "net_health" and low == "net health status":
        name = "net_health"
    elif query == "ip" and low in ("ipaddr", "netmask"):
        name = "ip_address" if low == "ipaddr" else "netmask"
    elif query == "fec" and low == "fec mode":
        name = "fec_mode"
    elif query == "link_stat" and low in ("link up count", "link down count"):
        name, unit = _slug(low), "count"
        if not value.isdigit():
            raise ParseError(SOURCE, f"{low}: not a number: {value!r}", line=lineno)
        v = int(value)
    elif query == "speed" and low == "speed":
        m = _SPEED.match(value)
        if not m:
            raise ParseError(SOURCE, f"speed: expected 'N Mb/s', got {value!r}", line=lineno)
        name, unit, v = "speed", "Gbit/s", float(m.group(1)) / 1000
    elif query == "optical":
        if low == "optical info":
            return None
        name = "optical_present" if low == "present" else f"optical_{_slug(key)}"
        m = None if value.lower().startswith("0x") else _MEASURE.match(value)
        if m and low != "present":
            num = float(m.group(1))
            v = int(num) if num.is_integer() and "." not in m.group(1) else num
            unit = m.group(2)
    else:
        return None
    if isinstance(v, str) and v in ("", "NA", "N/A"):
        return Fact(SOURCE, name, None, unit, dims, reason=f"{key}: {v or 'empty'}")
    return Fact(SOURCE, name, v, unit, dims)


PARSER = Parser(
    "hccn-tool",
    parse,
    "Ascend NPU RoCE port facts from hccn_tool -i N -link|-ip|-speed|-optical -g",
    lambda t: bool(_CMD.search(t[:300]) or _BARE.search(t[:300])),
    emits="facts",
)
