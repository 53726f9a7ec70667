"""amd-smi: AMD Instinct / Radeon GPU facts from ``amd-smi static|metric --json`` and ``xgmi``.

Three parsers, all ``emits="facts"``, all with source ``"amd-smi"``; per-GPU facts carry
``dims={"gpu": <index>}`` (amd-smi's own ``gpu`` field).

The JSON shape changed between releases: older amd-smi (ROCm 6.0-6.3) prints a list of
per-GPU objects (``[{"gpu": 0, ...}]``), newer ones (ROCm 6.4 and later) wrap the same
objects in ``{"gpu_data": [...]}``; both are read. Values are either plain (``16``,
``"ENABLED"``) or ``{"value": V, "unit": U}``; ``"N/A"`` (plain or as the value) is an
absent fact whose reason says so, never 0. Tested on a Radeon RX 6600 (list form, driver
7.0.0-3-pve) and an Instinct MI210 (``gpu_data`` form, ROCm 6.4 era).

``amd-smi-static`` (``amd-smi static --json``): ``gpu_count``; per GPU ``product_name``
(asic.market_name), ``target_graphics_version`` (gfx942 ...), ``device_id``,
``vbios_version`` (vbios.version; the MI210 capture prints only a VBIOS ``name``, which
is ``vbios_name``), ``driver_name``, ``driver_version`` (the amdgpu driver),
``pcie_width_max``, ``pcie_speed_max`` (GT/s), ``power_cap`` (limit.socket_power; older
releases ``limit.power_cap``), ``power_cap_max``, ``power_cap_min`` (W),
``temp_slowdown_edge`` / ``_hotspot`` / ``_vram``, ``temp_shutdown_edge`` / ``_hotspot``
/ ``_vram`` (C), ``vram_type``, ``vram_vendor``, ``vram_total`` (MiB: amd-smi labels it
MB but divides bytes by 2^20; a 64 GiB MI210 prints 65520), ``ecc_block_state``
(ENABLED | DISABLED; dims ``block``), ``ecc_blocks_disabled`` (the disabled blocks, comma
separated, ``none``), ``compute_partition``, ``memory_partition``.

``amd-smi-metric`` (``amd-smi metric --json``): per GPU ``gfx_activity``,
``umc_activity`` (%), ``power_socket`` (W), ``power_management``, ``throttle_status``
(THROTTLED | UNTHROTTLED as amd-smi prints it), ``temp_edge``, ``temp_hotspot``,
``temp_mem`` (C), ``pcie_width``, ``pcie_speed`` (GT/s), ``pcie_replay_count`` (count),
``ecc_correctable_total``, ``ecc_uncorrectable_total``, ``ecc_deferred_total`` (count),
per block ``ecc_uncorrectable`` / ``ecc_correctable`` (dims ``block``) where amd-smi lists
blocks, ``xgmi_err`` (text), ``perf_level``, ``vram_used`` (MiB; the total is static's).

``amd-smi-xgmi`` (plain ``amd-smi xgmi``, the LINK METRIC TABLE; amd-smi has no JSON for
it in the releases seen): ``xgmi_gpu_count``; per GPU ``xgmi_bit_rate`` and
``xgmi_max_bandwidth`` (Gbit/s, as printed: the per-lane rate and the GPU's aggregate),
``xgmi_link_type`` (XGMI | PCIE ...); and from the ``XGMI LINK STATUS`` table, where the
release prints it, ``xgmi_link_status`` per peer (dims ``gpu``, ``peer``: U / D / X ->
Up / Down / Disabled). Tested on the 8-GPU MI300-class table of AMD's TransferBench
documentation (38 Gb/s, 608 Gb/s per GPU).

Text that is not JSON, or JSON that is not per-GPU objects, is a :class:`ParseError`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from aibench.errors import ParseError
from aibench.model import Fact, FactValue, FrozenDims
from aibench.parsers import Parser

SOURCE = "amd-smi"
_NA = ("N/A", "NA", "")


def gpu_objects(tool: str, text: str) -> list[dict[str, Any]]:
    """The per-GPU objects of an ``amd-smi ... --json`` document (list or ``gpu_data``)."""
    start = min((i for i in (text.find("["), text.find("{")) if i >= 0), default=-1)
    if start < 0:
        raise ParseError(tool, "no JSON document in the output", line=None)
    try:
        doc, _end = json.JSONDecoder().raw_decode(text, start)
    except json.JSONDecodeError as exc:
        line = text.count("\n", 0, exc.pos) + 1
        raise ParseError(tool, f"invalid or truncated JSON: {exc.msg}", line=line) from None
    if isinstance(doc, dict) and isinstance(doc.get("gpu_data"), list):
        doc = doc["gpu_data"]
    if not isinstance(doc, list) or not all(isinstance(g, dict) and "gpu" in g for g in doc):
        raise ParseError(tool, "expected a list of per-GPU objects with a 'gpu' key", line=1)
    return doc


class _Gpu:
    """Builds the facts of one GPU object; ``get`` walks dotted paths."""

    def __init__(self, source: str, obj: Mapping[str, Any]) -> None:
        self.source = source
        self.obj = obj
        self.index = int(obj["gpu"])
        self.facts: list[Fact] = []

    def get(self, path: str) -> Any:
        cur: Any = self.obj
        for part in path.split("."):
            if not isinstance(cur, Mapping) or part not in cur:
                return _MISSING
            cur = cur[part]
        return cur

    def add(
        self,
        name: str,
        path: str | Iterable[str],
        kind: str = "str",
        unit: str | None = None,
        **dims: str,
    ) -> None:
        """One fact from the first of ``path`` that exists; nothing when none exists."""
        paths = [path] if isinstance(path, str) else list(path)
        for p in paths:
            raw = self.get(p)
            if raw is not _MISSING:
                self.facts.append(self.typed(name, raw, kind, unit, p, dims))
                return
        if name in _KEY_NAMES:
            d: dict[str, str | int] = {"gpu": self.index, **dims}
            why = f"{' or '.join(paths)}: not printed by this amd-smi"
            self.facts.append(Fact(self.source, name, None, unit, FrozenDims(d), reason=why))

    def typed(
        self, name: str, raw: Any, kind: str, unit: str | None, path: str, dims: Mapping[str, str]
    ) -> Fact:
        d: dict[str, str | int] = {"gpu": self.index, **dims}
        printed_unit = None
        if isinstance(raw, Mapping) and "value" in raw:
            printed_unit = raw.get("unit")
            raw = raw["value"]
        if raw is None or (isinstance(raw, str) and raw.strip() in _NA):
            why = "N/A" if raw is not None else "null"
            return Fact(self.source, name, None, unit, FrozenDims(d), reason=f"{path}: {why}")
        value: FactValue
        if kind == "str":
            value = str(raw).strip()
        else:
            if isinstance(raw, bool) or not isinstance(raw, int | float | str):
                raise ParseError(self.source, f"gpu {self.index}: {path}: not a number: {raw!r}")
            try:
                num = float(raw)
            except ValueError:
                raise ParseError(
                    self.source, f"gpu {self.index}: {path}: not a number: {raw!r}"
                ) from None
            value = int(num) if kind == "int" and num.is_integer() else num
        if printed_unit and unit and _UNIT_OK.get(printed_unit, printed_unit) != unit:
            raise ParseError(
                self.source, f"gpu {self.index}: {path}: unit {printed_unit!r}, expected {unit}"
            )
        return Fact(self.source, name, value, unit, FrozenDims(d))


_MISSING = object()
# Facts a spec or the golden-config check relies on: absent (with a reason) when the
# release does not print them, rather than left out.
_KEY_NAMES = {
    "product_name",
    "vbios_version",
    "driver_version",
    "vram_total",
    "power_cap",
    "throttle_status",
    "ecc_uncorrectable_total",
}
# amd-smi's printed unit -> the unit the fact is recorded in (the same number)
_UNIT_OK = {"MB": "MiB", "GT/s": "GT/s", "W": "W", "C": "C", "%": "%", "mV": "mV"}


def parse_static(text: str) -> list[Fact]:
    gpus = gpu_objects(SOURCE, text)
    out: list[Fact] = [Fact(SOURCE, "gpu_count", len(gpus), "count")]
    for obj in gpus:
        g = _Gpu(SOURCE, obj)
        g.add("product_name", "asic.market_name")
        g.add("target_graphics_version", "asic.target_graphics_version")
        g.add("device_id", "asic.device_id")
        g.add("vbios_version", "vbios.version")
        g.add("vbios_name", "vbios.name")
        g.add("driver_name", "driver.name")
        g.add("driver_version", "driver.version")
        g.add("pcie_width_max", "bus.max_pcie_width", "int")
        g.add("pcie_speed_max", "bus.max_pcie_speed", "float", "GT/s")
        g.add("power_cap", ("limit.socket_power", "limit.power_cap"), "float", "W")
        g.add("power_cap_max", "limit.max_power", "float", "W")
        g.add("power_cap_min", "limit.min_power", "float", "W")
        for where in ("edge", "hotspot", "vram"):
            g.add(f"temp_slowdown_{where}", f"limit.slowdown_{where}_temperature", "float", "C")
            g.add(f"temp_shutdown_{where}", f"limit.shutdown_{where}_temperature", "float", "C")
        g.add("vram_type", "vram.type")
        g.add("vram_vendor", "vram.vendor")
        g.add("vram_total", "vram.size", "int", "MiB")
        g.add("compute_partition", "partition.compute_partition")
        g.add("memory_partition", "partition.memory_partition")
        _ecc_blocks(g)
        out += g.facts
    return out


def _ecc_blocks(g: _Gpu) -> None:
    """A GPU's ``ecc_block_state`` per RAS block and the list of the disabled ones."""
    blocks = g.get("ras.ecc_block_state")
    if isinstance(blocks, Mapping):
        disabled = []
        for block, state in blocks.items():
            g.facts.append(
                g.typed(
                    "ecc_block_state", state, "str", None, "ras.ecc_block_state", {"block": block}
                )
            )
            if str(state).upper() == "DISABLED":
                disabled.append(block)
        dims = FrozenDims({"gpu": g.index})
        g.facts.append(
            Fact(SOURCE, "ecc_blocks_disabled", ",".join(disabled) or "none", None, dims)
        )
    elif blocks is not _MISSING:
        g.facts.append(
            g.typed("ecc_blocks_disabled", blocks, "str", None, "ras.ecc_block_state", {})
        )


def parse_metric(text: str) -> list[Fact]:
    out: list[Fact] = []
    for obj in gpu_objects(SOURCE, text):
        g = _Gpu(SOURCE, obj)
        g.add("gfx_activity", "usage.gfx_activity", "float", "%")
        g.add("umc_activity", "usage.umc_activity", "float", "%")
        g.add("power_socket", ("power.socket_power", "power.average_socket_power"), "float", "W")
        g.add("power_management", "power.power_management")
        g.add("throttle_status", "power.throttle_status")
        g.add("temp_edge", "temperature.edge", "float", "C")
        g.add("temp_hotspot", "temperature.hotspot", "float", "C")
        g.add("temp_mem", "temperature.mem", "float", "C")
        g.add("pcie_width", "pcie.width", "int")
        g.add("pcie_speed", "pcie.speed", "float", "GT/s")
        g.add("pcie_replay_count", "pcie.replay_count", "int", "count")
        g.add("ecc_correctable_total", "ecc.total_correctable_count", "int", "count")
        g.add("ecc_uncorrectable_total", "ecc.total_uncorrectable_count", "int", "count")
        g.add("ecc_deferred_total", "ecc.total_deferred_count", "int", "count")
        blocks = g.get("ecc_blocks")
        if isinstance(blocks, Mapping):
            for block, counts in blocks.items():
                if not isinstance(counts, Mapping):
                    continue
                for key, name in (
                    ("correctable_count", "ecc_correctable"),
                    ("uncorrectable_count", "ecc_uncorrectable"),
                ):
                    if key in counts:
                        g.facts.append(
                            g.typed(
                                name,
                                counts[key],
                                "int",
                                "count",
                                f"ecc_blocks.{block}.{key}",
                                {"block": block},
                            )
                        )
        g.add("xgmi_err", "xgmi_err")
        g.add("perf_level", "perf_level")
        g.add("vram_used", "mem_usage.used_vram", "int", "MiB")
        out += g.facts
    return out


# ----------------------------------------------------------------------------- xgmi (text)
_GPU_ROW = re.compile(r"^GPU(\d+)\s+(\S+)\s+(.*)$")
_RATE = re.compile(r"(\d+(?:\.\d+)?)\s*Gb/s")
_STATUS = {"U": "Up", "D": "Down", "X": "Disabled"}


def parse_xgmi(text: str) -> list[Fact]:
    out: list[Fact] = []
    section = ""
    peers: list[str] = []
    gpus: set[int] = set()
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.rstrip()
        stripped = line.strip()
        if stripped.endswith(":") and stripped.isupper():
            section = stripped[:-1]
            continue
        if not stripped or section == "":
            continue
        if stripped.startswith("bdf"):
            peers = [
                p
                for p in stripped.split()[1:]
                if p not in ("bit_rate", "max_bandwidth", "link_type", "port_num")
            ]
            continue
        m = _GPU_ROW.match(line.replace("\t", "   "))
        if section == "LINK METRIC TABLE" and m:
            gpus.add(int(m.group(1)))
            out += _link_metrics(int(m.group(1)), m.group(3), lineno)
        elif section == "XGMI LINK STATUS" and m:
            out += _link_status(int(m.group(1)), peers, m.group(3).split(), lineno)
    if not gpus:
        raise ParseError(SOURCE, "no LINK METRIC TABLE rows (GPU<n> <bdf> <bit_rate> ...)")
    return [Fact(SOURCE, "xgmi_gpu_count", len(gpus), "count"), *out]


def _link_metrics(gpu: int, rest: str, lineno: int) -> list[Fact]:
    """A GPU's row of the LINK METRIC TABLE: bit rate, max bandwidth and link type."""
    rates = _RATE.findall(rest)
    dims = FrozenDims({"gpu": gpu})
    if len(rates) < 2:
        if "N/A" in rest:
            return [
                Fact(SOURCE, name, None, "Gbit/s", dims, reason="amd-smi xgmi: N/A")
                for name in ("xgmi_bit_rate", "xgmi_max_bandwidth")
            ]
        raise ParseError(SOURCE, f"GPU{gpu}: no bit_rate / max_bandwidth in {rest!r}", line=lineno)
    out = [
        Fact(SOURCE, "xgmi_bit_rate", _num(rates[0]), "Gbit/s", dims),
        Fact(SOURCE, "xgmi_max_bandwidth", _num(rates[1]), "Gbit/s", dims),
    ]
    tail = _RATE.sub("", rest).split()
    if tail:
        out.append(Fact(SOURCE, "xgmi_link_type", tail[0], None, dims))
    return out


def _link_status(gpu: int, peers: list[str], cells: list[str], lineno: int) -> list[Fact]:
    """A GPU's row of the XGMI LINK STATUS table: Up, Down or Disabled per peer."""
    out = []
    for peer, cell in zip(peers, cells, strict=False):
        if cell in ("SELF", "N/A"):
            continue
        if cell not in _STATUS:
            raise ParseError(SOURCE, f"GPU{gpu}: link status {cell!r}", line=lineno)
        link: dict[str, str | int] = {"gpu": gpu, "peer": peer}
        out.append(Fact(SOURCE, "xgmi_link_status", _STATUS[cell], None, FrozenDims(link)))
    return out


def _num(text: str) -> int | float:
    v = float(text)
    return int(v) if v.is_integer() else v


def _detect_json(keys: tuple[str, ...]) -> Any:
    def detect(text: str) -> bool:
        head = text[:4000]
        return '"gpu"' in head and any(f'"{k}"' in head for k in keys)

    return detect


PARSER = [
    Parser(
        "amd-smi-static",
        parse_static,
        "AMD GPU facts from amd-smi static --json",
        _detect_json(("asic", "vbios")),
        emits="facts",
    ),
    Parser(
        "amd-smi-metric",
        parse_metric,
        "AMD GPU health facts from amd-smi metric --json",
        _detect_json(("usage", "temperature")),
        emits="facts",
    ),
    Parser(
        "amd-smi-xgmi",
        parse_xgmi,
        "AMD xGMI link facts from amd-smi xgmi",
        lambda t: "LINK METRIC TABLE:" in t[:2000],
        emits="facts",
    ),
]


# ----------------------------------------------------------------------------- firmware (text)
_FW_GPU = re.compile(r"^GPU:\s*(\d+)\s*$")
_FW_KV = re.compile(r"^(FW_ID|FW_NAME|FW_VERSION):\s*(.*)$")


def parse_firmware(text: str) -> list[Fact]:
    """``amd-smi firmware``: ``firmware_version`` per GPU and block (dims ``gpu``, ``fw``)."""
    out: list[Fact] = []
    gpu: int | None = None
    fw_id: str | None = None
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line == "FW_LIST:" or re.fullmatch(r"FW \d+:", line):
            continue
        m = _FW_GPU.match(line)
        if m:
            gpu, fw_id = int(m.group(1)), None
            continue
        kv = _FW_KV.match(line)
        if kv is None or gpu is None:
            raise ParseError(SOURCE, f"unexpected line {line!r}", line=lineno)
        key, value = kv.groups()
        if key in ("FW_ID", "FW_NAME"):
            fw_id = value.strip()
            continue
        if fw_id is None:
            raise ParseError(SOURCE, "FW_VERSION before its FW_ID", line=lineno)
        fw_dims: dict[str, str | int] = {"gpu": gpu, "fw": fw_id}
        dims = FrozenDims(fw_dims)
        if value.strip() in _NA:
            out.append(Fact(SOURCE, "firmware_version", None, None, dims, reason="N/A"))
        else:
            out.append(Fact(SOURCE, "firmware_version", value.strip(), None, dims))
        fw_id = None
    if not out:
        raise ParseError(SOURCE, "no GPU firmware list (GPU: N / FW_ID / FW_VERSION)")
    return out


PARSER.append(
    Parser(
        "amd-smi-firmware",
        parse_firmware,
        "AMD GPU firmware versions from amd-smi firmware",
        lambda t: "FW_LIST:" in t[:500],
        emits="facts",
    )
)


# ----------------------------------------------------------------------------- version (text)
_VERSION_FIELDS = {
    "AMDSMI Tool": "tool_version",
    "AMDSMI Library version": "library_version",
    "ROCm version": "rocm_version",
    "amdgpu version": "amdgpu_version",
}


def parse_version(text: str) -> list[Fact]:
    """``amd-smi version``: ``tool_version``, ``library_version``, ``rocm_version`` (and
    ``amdgpu_version`` where printed), from ``AMDSMI Tool: X | AMDSMI Library version: Y |
    ROCm version: Z``. ``N/A`` (ROCm not installed) is an absent fact."""
    for lineno, raw in enumerate(text.splitlines(), 1):
        if "AMDSMI Tool:" not in raw:
            continue
        out: list[Fact] = []
        for part in raw.split("|"):
            key, sep, value = part.partition(":")
            name = _VERSION_FIELDS.get(key.strip())
            if not sep or name is None:
                continue
            v = value.strip()
            if v in _NA:
                out.append(Fact(SOURCE, name, None, reason=f"{key.strip()}: {v or 'empty'}"))
            else:
                out.append(Fact(SOURCE, name, v))
        if not any(f.name == "rocm_version" for f in out):
            raise ParseError(SOURCE, "no 'ROCm version:' in the version line", line=lineno)
        return out
    raise ParseError(SOURCE, "no 'AMDSMI Tool: ... | ROCm version: ...' line")


PARSER.append(
    Parser(
        "amd-smi-version",
        parse_version,
        "amd-smi, library and ROCm versions from amd-smi version",
        lambda t: "AMDSMI Tool:" in t[:300],
        emits="facts",
    )
)
