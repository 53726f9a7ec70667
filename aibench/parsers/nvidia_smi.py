"""nvidia-smi: GPU facts from ``nvidia-smi -q``, ``--query-gpu=... --format=csv`` and ``topo -m``.

Three parsers, all ``emits="facts"``, all with source ``"nvidia-smi"``; per-GPU facts carry
``dims={"gpu": <index>}`` (the order nvidia-smi lists the GPUs in, which is its index).
Tested on nvidia-smi 550.127.05 (GH200 480GB), 590.48.01 (H100 80GB HBM3 with MIG enabled,
H200) and 595.71.05 (RTX 2080 SUPER, instantaneous draw only); the key names of
older drivers (``Clocks Throttle Reasons``, ``Power Readings``, absolute shutdown/slowdown
temperatures, ``Remapped Rows`` subsections) are read too.

``nvidia-smi-q`` (``nvidia-smi -q``), node facts: ``driver_version``, ``cuda_version``,
``gpu_count``. Per GPU: ``product_name``, ``product_architecture``, ``vbios_version``,
``serial`` and ``uuid`` (the board's serial number and the GPU's UUID: what says a GPU was
swapped), ``bus_id``, ``persistence_mode`` / ``mig_mode`` / ``ecc_mode`` (text as printed:
``Enabled`` / ``Disabled``), ``mig_devices`` (count), ``compute_mode``,
``performance_state``, ``memory_total`` / ``memory_reserved`` / ``memory_used`` /
``memory_free`` (MiB, FB memory), ``utilization_gpu`` / ``utilization_memory`` (%),
``ecc_errors`` (count; dims ``scope``
volatile|aggregate and ``counter`` e.g. ``dram_uncorrectable``), ``ecc_corrected_total`` and
``ecc_uncorrected_total`` (count; dims ``scope``), ``retired_pages_sbe`` /
``retired_pages_dbe`` (count), ``retired_pages_pending`` (bool), ``remapped_rows_correctable``
/ ``remapped_rows_uncorrectable`` (count), ``remapped_rows_pending`` /
``remapped_rows_failure`` (bool), ``temp_gpu`` / ``temp_memory`` (C); thresholds as absolute
values (``temp_shutdown``, ``temp_slowdown``, ``temp_max_operating``,
``temp_memory_max_operating``) on older drivers, and as T.Limit margins on newer ones
(``temp_tlimit`` = headroom left, ``temp_shutdown_tlimit``, ``temp_slowdown_tlimit``,
``temp_max_operating_tlimit``, ``temp_memory_max_operating_tlimit``), ``power_draw``,
``power_limit``, ``power_limit_default``, ``power_limit_enforced``, ``power_limit_min``,
``power_limit_max``, ``power_limit_requested``, ``power_draw_instant`` (W; drivers 570+ print
an average and an instantaneous draw, some GPUs only the instantaneous one), the same names
prefixed ``memory_`` (GPU Memory Power Readings) and ``module_`` (Module Power Readings, the
whole Grace Hopper module), ``voltage_graphics`` (mV), ``clock_graphics`` / ``clock_sm`` /
``clock_memory`` and ``clock_max_graphics`` / ``clock_max_sm`` / ``clock_max_memory`` (MHz),
``clocks_event.<reason>`` (bool: active) for gpu_idle, applications_clocks_setting,
sw_power_cap, hw_slowdown, hw_thermal_slowdown, hw_power_brake_slowdown, sync_boost,
sw_thermal_slowdown, display_clock_setting, ``pcie_gen_current`` / ``pcie_gen_max`` /
``pcie_width_current`` / ``pcie_width_max`` (int), ``pcie_replays`` (count),
``fabric_state`` / ``fabric_status`` (NVLink fabric, text). A value printed as ``N/A`` is an
absent fact (value None) whose reason says so.

``nvidia-smi-query-gpu`` (``--query-gpu=<fields> --format=csv``): the same names for the
same fields (``name`` -> ``product_name``, ``temperature.gpu`` -> ``temp_gpu``, ...), and from
the bitmask ``clocks_event_reasons.active`` (``clocks_throttle_reasons.active`` on old
drivers): ``clocks_event_reasons_active`` (the hex text), ``clocks_event_reasons`` (the
decoded active reasons, comma separated, ``none`` when no bit is set) and
``clocks_event_reasons_supported``. Bits: gpu_idle 0x1, applications_clocks_setting 0x2,
sw_power_cap 0x4, hw_slowdown 0x8, sync_boost 0x10, sw_thermal_slowdown 0x20,
hw_thermal_slowdown 0x40, hw_power_brake_slowdown 0x80, display_clock_setting 0x100.
Columns it does not know are ignored.

``nvidia-smi-topo`` (``nvidia-smi topo -m``; ANSI underline codes in the header are
removed): ``topo_link`` (text such as ``NV18``, ``SYS``, ``PIX``; dims ``gpu`` and ``peer``,
the peer a GPU index or a NIC name from the legend), ``nvlink_bonds`` (count of bonded
NVLinks for ``NV#``), ``cpu_affinity``, ``numa_affinity``, ``gpu_numa_id`` per GPU.

``nvidia-smi-table`` (plain ``nvidia-smi``, the box table; for pasted output, the preflight
reads ``-q``): ``driver_version``, ``cuda_version``, ``gpu_count`` and per GPU
``product_name`` (cut by nvidia-smi when long), ``persistence_mode`` (Enabled/Disabled),
``bus_id``, ``ecc_uncorrected_total`` (scope volatile), ``temp_gpu``, ``performance_state``,
``power_draw``, ``power_limit``, ``memory_used``, ``memory_total`` (MiB),
``utilization_gpu`` (%), ``compute_mode``, ``mig_mode``.

A driver that cannot be reached ("NVIDIA-SMI has failed ...", "No devices were found") is a
:class:`ToolFailure` with nvidia-smi's own words.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable

from aibench.errors import ParseError, ToolFailure
from aibench.model import Fact, FactValue, FrozenDims
from aibench.parsers import Parser
from aibench.parsers.nvidia_smi_loop import repeats_a_gpu

SOURCE = "nvidia-smi"
_KV = re.compile(r"^(?P<indent> *)(?P<key>\S.*?)\s+:(?: (?P<value>.*))?$")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_FAILED = (
    "NVIDIA-SMI has failed",
    "No devices were found",
    "Unable to determine the device handle",
)

CLOCK_EVENT_BITS: dict[str, int] = {
    "gpu_idle": 0x1,
    "applications_clocks_setting": 0x2,
    "sw_power_cap": 0x4,
    "hw_slowdown": 0x8,
    "sync_boost": 0x10,
    "sw_thermal_slowdown": 0x20,
    "hw_thermal_slowdown": 0x40,
    "hw_power_brake_slowdown": 0x80,
    "display_clock_setting": 0x100,
}

# `nvidia-smi -q` labels in the Clocks Event (Throttle) Reasons section -> reason name.
_Q_EVENT_NAMES = {
    "idle": "gpu_idle",
    "applications clocks setting": "applications_clocks_setting",
    "sw power cap": "sw_power_cap",
    "hw slowdown": "hw_slowdown",
    "hw thermal slowdown": "hw_thermal_slowdown",
    "hw power brake slowdown": "hw_power_brake_slowdown",
    "sync boost": "sync_boost",
    "sw thermal slowdown": "sw_thermal_slowdown",
    "display clock setting": "display_clock_setting",
}


def decode_clock_events(mask: int) -> list[str]:
    """Names of the reasons whose bit is set in a clocks_event_reasons bitmask."""
    return [name for name, bit in CLOCK_EVENT_BITS.items() if mask & bit]


def _check_failure(text: str) -> None:
    for i, line in enumerate(text.splitlines(), 1):
        if any(line.strip().startswith(f) for f in _FAILED):
            raise ToolFailure("nvidia-smi", line.strip(), line=i)


def _na(value: str) -> bool:
    v = value.strip().strip("[]")
    return v in (
        "N/A",
        "Not Supported",
        "Unknown Error",
        "Requested functionality has been deprecated",
        "",
    )


def _fact(
    name: str,
    value: FactValue,
    unit: str | None = None,
    gpu: int | None = None,
    reason: str = "",
    **dims: str | int,
) -> Fact:
    return _make(name, value, unit, gpu, reason, dims)


def _make(
    name: str,
    value: FactValue,
    unit: str | None,
    gpu: int | None,
    reason: str,
    dims: dict[str, str | int],
) -> Fact:
    d = dict(dims)
    if gpu is not None:
        d["gpu"] = gpu
    return Fact(SOURCE, name, value, unit, FrozenDims(d), reason=reason)


_NUM = re.compile(r"^(-?[0-9]+(?:\.[0-9]+)?)\s*([A-Za-z%/]*)$", re.ASCII)


def _number(raw: str, line: int | None, what: str) -> tuple[float | int, str]:
    m = _NUM.match(raw.strip())
    if not m:
        raise ParseError("nvidia-smi", f"{what}: not a number: {raw.strip()!r}", line=line)
    text, unit = m.group(1), m.group(2)
    return (float(text) if "." in text else int(text)), unit


def _typed(
    name: str,
    raw: str,
    kind: str,
    unit: str | None,
    gpu: int | None,
    line: int | None,
    what: str,
    **dims: str | int,
) -> Fact:
    """One fact from a printed value: kind is str | int | float | bool | xint (16x)."""
    if _na(raw):
        return _make(name, None, unit, gpu, f"{what}: {raw.strip() or 'empty'}", dims)
    v = raw.strip()
    value: FactValue
    if kind == "str":
        value = v
    elif kind == "bool":
        low = v.lower()
        if low in ("yes", "active", "enabled", "true"):
            value = True
        elif low in ("no", "not active", "disabled", "false"):
            value = False
        else:
            raise ParseError("nvidia-smi", f"{what}: not yes/no: {v!r}", line=line)
    elif kind == "xint":
        value = int(_number(v.rstrip("x"), line, what)[0])
    else:
        num, printed_unit = _number(v, line, what)
        if unit and printed_unit and printed_unit not in (unit, "us"):
            raise ParseError(
                "nvidia-smi", f"{what}: unit {printed_unit!r}, expected {unit}", line=line
            )
        value = int(num) if kind == "int" else float(num)
    return _make(name, value, unit, gpu, "", dims)


# ----------------------------------------------------------------------------- -q


def _q_blocks(
    text: str,
) -> tuple[dict[str, tuple[str, int]], list[dict[tuple[str, ...], tuple[str, int]]]]:
    """Top-level keys, and per GPU a map of key path -> (value, line)."""
    top: dict[str, tuple[str, int]] = {}
    gpus: list[dict[tuple[str, ...], tuple[str, int]]] = []
    stack: list[tuple[int, str]] = []
    counters: dict[tuple[str, ...], int] = {}
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("="):
            continue
        indent = len(line) - len(line.lstrip(" "))
        if indent == 0 and line.startswith("GPU ") and ":" in line and " : " not in line:
            gpus.append({("Bus Id",): (line[4:].strip(), lineno)})
            stack = []
            continue
        while stack and stack[-1][0] >= indent:
            stack.pop()
        m = _KV.match(line)
        if m is None:  # a section header
            name = line.strip()
            path = (*(s for _, s in stack), name)
            if name in ("MIG Device", "Process ID", "GPU instance ID") and gpus:
                counters[path] = counters.get(path, 0) + 1
                name = f"{name}#{counters[path]}"
            stack.append((indent, name))
            continue
        key, value = m.group("key"), m.group("value") or ""
        if indent == 0 or not gpus:
            top.setdefault(key, (value.strip(), lineno))
            continue
        path = (*(s for _, s in stack), key)
        gpus[-1].setdefault(path, (value, lineno))
    return top, gpus


_Q_SCALARS: tuple[tuple[tuple[str, ...], str, str, str | None], ...] = (
    (("Product Name",), "product_name", "str", None),
    (("Product Architecture",), "product_architecture", "str", None),
    (("VBIOS Version",), "vbios_version", "str", None),
    (("Serial Number",), "serial", "str", None),
    (("GPU UUID",), "uuid", "str", None),
    (("Persistence Mode",), "persistence_mode", "str", None),
    (("MIG Mode", "Current"), "mig_mode", "str", None),
    (("ECC Mode", "Current"), "ecc_mode", "str", None),
    (("Compute Mode",), "compute_mode", "str", None),
    (("Performance State",), "performance_state", "str", None),
    (("FB Memory Usage", "Total"), "memory_total", "int", "MiB"),
    (("FB Memory Usage", "Reserved"), "memory_reserved", "int", "MiB"),
    (("FB Memory Usage", "Used"), "memory_used", "int", "MiB"),
    (("FB Memory Usage", "Free"), "memory_free", "int", "MiB"),
    (("Utilization", "Gpu"), "utilization_gpu", "int", "%"),
    (("Utilization", "GPU"), "utilization_gpu", "int", "%"),
    (("Utilization", "Memory"), "utilization_memory", "int", "%"),
    (("Retired Pages", "Single Bit ECC"), "retired_pages_sbe", "int", "count"),
    (("Retired Pages", "Double Bit ECC"), "retired_pages_dbe", "int", "count"),
    (("Retired Pages", "Pending Page Blacklist"), "retired_pages_pending", "bool", None),
    (("Retired Pages", "Pending Page Retirement"), "retired_pages_pending", "bool", None),
    (("Remapped Rows", "Correctable Error"), "remapped_rows_correctable", "int", "count"),
    (("Remapped Rows", "Uncorrectable Error"), "remapped_rows_uncorrectable", "int", "count"),
    (("Remapped Rows", "Pending"), "remapped_rows_pending", "bool", None),
    (("Remapped Rows", "Remapping Failure Occurred"), "remapped_rows_failure", "bool", None),
    (("Temperature", "GPU Current Temp"), "temp_gpu", "int", "C"),
    (("Temperature", "Memory Current Temp"), "temp_memory", "int", "C"),
    (("Temperature", "GPU Shutdown Temp"), "temp_shutdown", "int", "C"),
    (("Temperature", "GPU Slowdown Temp"), "temp_slowdown", "int", "C"),
    (("Temperature", "GPU Max Operating Temp"), "temp_max_operating", "int", "C"),
    (("Temperature", "Memory Max Operating Temp"), "temp_memory_max_operating", "int", "C"),
    (("Temperature", "GPU T.Limit Temp"), "temp_tlimit", "int", "C"),
    (("Temperature", "GPU Shutdown T.Limit Temp"), "temp_shutdown_tlimit", "int", "C"),
    (("Temperature", "GPU Slowdown T.Limit Temp"), "temp_slowdown_tlimit", "int", "C"),
    (("Temperature", "GPU Max Operating T.Limit Temp"), "temp_max_operating_tlimit", "int", "C"),
    (
        ("Temperature", "Memory Max Operating T.Limit Temp"),
        "temp_memory_max_operating_tlimit",
        "int",
        "C",
    ),
    (("Clocks", "Graphics"), "clock_graphics", "int", "MHz"),
    (("Clocks", "SM"), "clock_sm", "int", "MHz"),
    (("Clocks", "Memory"), "clock_memory", "int", "MHz"),
    (("Max Clocks", "Graphics"), "clock_max_graphics", "int", "MHz"),
    (("Max Clocks", "SM"), "clock_max_sm", "int", "MHz"),
    (("Max Clocks", "Memory"), "clock_max_memory", "int", "MHz"),
    (("Voltage", "Graphics"), "voltage_graphics", "float", "mV"),
    (("PCI", "GPU Link Info", "PCIe Generation", "Current"), "pcie_gen_current", "int", None),
    (("PCI", "GPU Link Info", "PCIe Generation", "Max"), "pcie_gen_max", "int", None),
    (("PCI", "GPU Link Info", "Link Width", "Current"), "pcie_width_current", "xint", None),
    (("PCI", "GPU Link Info", "Link Width", "Max"), "pcie_width_max", "xint", None),
    (("PCI", "Replays Since Reset"), "pcie_replays", "int", "count"),
    (("Fabric", "State"), "fabric_state", "str", None),
    (("Fabric", "Status"), "fabric_status", "str", None),
)

# Power: the sections of one domain (new and old drivers' names), the prefix of its facts'
# names, and (labels) -> fact name. The GPU's own readings keep the plain names; the memory's
# and the whole module's (Grace Hopper and newer datacenter boards) are prefixed, so that a
# check of power_draw or power_limit never mixes a 1000 W module with a 700 W GPU.
_POWER_DOMAINS = (
    (("GPU Power Readings", "Power Readings"), ""),
    (("GPU Memory Power Readings",), "memory_"),
    (("Module Power Readings",), "module_"),
)
_POWER_LABELS = (
    (("Average Power Draw", "Power Draw"), "power_draw"),
    (("Instantaneous Power Draw",), "power_draw_instant"),
    (("Current Power Limit", "Power Limit"), "power_limit"),
    (("Requested Power Limit",), "power_limit_requested"),
    (("Default Power Limit",), "power_limit_default"),
    (("Enforced Power Limit",), "power_limit_enforced"),
    (("Min Power Limit",), "power_limit_min"),
    (("Max Power Limit",), "power_limit_max"),
)


def _snake(label: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", label.lower()).strip("_")


def _q_gpu(index: int, g: dict[tuple[str, ...], tuple[str, int]]) -> list[Fact]:
    out: list[Fact] = []
    bus, _ = g[("Bus Id",)]
    out.append(_fact("bus_id", bus, gpu=index))
    seen: set[str] = set()
    for path, name, kind, unit in _Q_SCALARS:
        if path in g and name not in seen:
            seen.add(name)
            raw, line = g[path]
            out.append(_typed(name, raw, kind, unit, index, line, " > ".join(path)))
    # A whole section printed as N/A (Remapped Rows on MIG or older GPUs): its facts are absent.
    if ("Remapped Rows",) in g and "remapped_rows_pending" not in seen:
        raw, _ = g[("Remapped Rows",)]
        for name in (
            "remapped_rows_correctable",
            "remapped_rows_uncorrectable",
            "remapped_rows_pending",
            "remapped_rows_failure",
        ):
            out.append(
                _fact(
                    name,
                    None,
                    "count" if name.endswith("able") else None,
                    index,
                    reason=f"Remapped Rows: {raw.strip() or 'empty'}",
                )
            )
    mig = sum(1 for p in g if len(p) >= 2 and p[0].startswith("MIG Device#") and p[1] == "Index")
    out.append(_fact("mig_devices", mig, "count", index))
    for sections, prefix in _POWER_DOMAINS:
        out.extend(_q_power(index, g, sections, prefix))
    out.extend(_q_ecc(index, g))
    for section in ("Clocks Event Reasons", "Clocks Throttle Reasons"):
        keys = [p for p in g if p[0] == section and len(p) >= 2]
        for p in keys:
            reason = _Q_EVENT_NAMES.get(p[-1].lower())
            if reason is None:
                continue
            raw, line = g[p]
            out.append(
                _typed(f"clocks_event.{reason}", raw, "bool", None, index, line, " > ".join(p))
            )
        if keys:
            break
    return out


def _q_power(
    index: int, g: dict[tuple[str, ...], tuple[str, int]], sections: tuple[str, ...], prefix: str
) -> list[Fact]:
    """The readings of one power domain, from the first of its section names printed."""
    section = next((s for s in sections if any(p[0] == s for p in g)), "")
    out: list[Fact] = []
    for labels, name in _POWER_LABELS if section else ():
        label = next((lb for lb in labels if (section, lb) in g), None)
        if label is not None:
            raw, line = g[(section, label)]
            what = f"{section} > {label}"
            out.append(_typed(prefix + name, raw, "float", "W", index, line, what))
    return out


def _q_ecc(index: int, g: dict[tuple[str, ...], tuple[str, int]]) -> list[Fact]:
    out: list[Fact] = []
    for scope in ("Volatile", "Aggregate"):
        out.extend(_q_ecc_scope(index, g, scope))
    return out


def _q_ecc_scope(index: int, g: dict[tuple[str, ...], tuple[str, int]], scope: str) -> list[Fact]:
    """The counters under ``ECC Errors > scope`` (thresholds left out) and, when there
    are any, their corrected and uncorrected totals (None when a count is N/A)."""
    out: list[Fact] = []
    corrected: int | None = 0
    uncorrected: int | None = 0
    for p, (raw, line) in g.items():
        if len(p) != 3 or p[0] != "ECC Errors" or p[1] != scope:
            continue
        label = p[2]
        low = label.lower()
        if "threshold" in low:
            continue
        kind = _snake(label)
        f = _typed(
            "ecc_errors",
            raw,
            "int",
            "count",
            index,
            line,
            " > ".join(p),
            scope=scope.lower(),
            counter=kind,
        )
        out.append(f)
        is_unc = "uncorrectable" in low or "double" in low
        if f.value is None:
            if is_unc:
                uncorrected = None
            else:
                corrected = None
            continue
        assert isinstance(f.value, int)
        if is_unc and uncorrected is not None:
            uncorrected += f.value
        elif not is_unc and corrected is not None:
            corrected += f.value
    if out:
        out += _q_ecc_totals(index, scope, corrected, uncorrected)
    return out


def _q_ecc_totals(
    index: int, scope: str, corrected: int | None, uncorrected: int | None
) -> list[Fact]:
    """``ecc_corrected_total`` and ``ecc_uncorrected_total`` of one scope."""
    why = f"ECC Errors > {scope}: a count is N/A"
    return [
        _fact(
            "ecc_corrected_total",
            corrected,
            "count",
            index,
            reason="" if corrected is not None else why,
            scope=scope.lower(),
        ),
        _fact(
            "ecc_uncorrected_total",
            uncorrected,
            "count",
            index,
            reason="" if uncorrected is not None else why,
            scope=scope.lower(),
        ),
    ]


def parse_q(text: str) -> list[Fact]:
    _check_failure(text)
    top, gpus = _q_blocks(text)
    if "Driver Version" not in top:
        raise ParseError("nvidia-smi", "no 'Driver Version' line: not nvidia-smi -q output")
    raw, line = top["Driver Version"]
    out = [_typed("driver_version", raw, "str", None, None, line, "Driver Version")]
    if "CUDA Version" in top:
        raw, line = top["CUDA Version"]
        out.append(_typed("cuda_version", raw, "str", None, None, line, "CUDA Version"))
    if "Attached GPUs" in top:
        raw, line = top["Attached GPUs"]
        count = _typed("gpu_count", raw, "int", "count", None, line, "Attached GPUs")
        if count.value != len(gpus):
            raise ParseError(
                "nvidia-smi",
                f"Attached GPUs says {raw.strip()}, {len(gpus)} GPU sections found",
                line=line,
            )
        out.append(count)
    else:
        out.append(_fact("gpu_count", len(gpus), "count"))
    for i, g in enumerate(gpus):
        out.extend(_q_gpu(i, g))
    return out


# ----------------------------------------------------------------------- query-gpu

# field -> (fact name, kind, unit, extra dims)
_CSV_FIELDS: dict[str, tuple[str, str, str | None, dict[str, str]]] = {
    "driver_version": ("driver_version", "str", None, {}),
    "count": ("gpu_count", "int", "count", {}),
    "name": ("product_name", "str", None, {}),
    "pci.bus_id": ("bus_id", "str", None, {}),
    "vbios_version": ("vbios_version", "str", None, {}),
    "persistence_mode": ("persistence_mode", "str", None, {}),
    "mig.mode.current": ("mig_mode", "str", None, {}),
    "ecc.mode.current": ("ecc_mode", "str", None, {}),
    "compute_mode": ("compute_mode", "str", None, {}),
    "compute_cap": ("compute_cap", "str", None, {}),
    "pstate": ("performance_state", "str", None, {}),
    "memory.total": ("memory_total", "int", "MiB", {}),
    "pcie.link.gen.current": ("pcie_gen_current", "int", None, {}),
    "pcie.link.gen.max": ("pcie_gen_max", "int", None, {}),
    "pcie.link.width.current": ("pcie_width_current", "int", None, {}),
    "pcie.link.width.max": ("pcie_width_max", "int", None, {}),
    "temperature.gpu": ("temp_gpu", "int", "C", {}),
    "temperature.memory": ("temp_memory", "int", "C", {}),
    "temperature.gpu.tlimit": ("temp_tlimit", "int", "C", {}),
    "power.draw.average": ("power_draw", "float", "W", {}),
    "power.limit": ("power_limit", "float", "W", {}),
    "enforced.power.limit": ("power_limit_enforced", "float", "W", {}),
    "power.default_limit": ("power_limit_default", "float", "W", {}),
    "power.min_limit": ("power_limit_min", "float", "W", {}),
    "power.max_limit": ("power_limit_max", "float", "W", {}),
    "clocks.current.graphics": ("clock_graphics", "int", "MHz", {}),
    "clocks.current.sm": ("clock_sm", "int", "MHz", {}),
    "clocks.current.memory": ("clock_memory", "int", "MHz", {}),
    "clocks.max.graphics": ("clock_max_graphics", "int", "MHz", {}),
    "clocks.max.sm": ("clock_max_sm", "int", "MHz", {}),
    "clocks.max.memory": ("clock_max_memory", "int", "MHz", {}),
    "ecc.errors.corrected.volatile.total": (
        "ecc_corrected_total",
        "int",
        "count",
        {"scope": "volatile"},
    ),
    "ecc.errors.uncorrected.volatile.total": (
        "ecc_uncorrected_total",
        "int",
        "count",
        {"scope": "volatile"},
    ),
    "ecc.errors.corrected.aggregate.total": (
        "ecc_corrected_total",
        "int",
        "count",
        {"scope": "aggregate"},
    ),
    "ecc.errors.uncorrected.aggregate.total": (
        "ecc_uncorrected_total",
        "int",
        "count",
        {"scope": "aggregate"},
    ),
    "retired_pages.single_bit_ecc.count": ("retired_pages_sbe", "int", "count", {}),
    "retired_pages.double_bit.count": ("retired_pages_dbe", "int", "count", {}),
    "retired_pages.pending": ("retired_pages_pending", "bool", None, {}),
    "remapped_rows.correctable": ("remapped_rows_correctable", "int", "count", {}),
    "remapped_rows.uncorrectable": ("remapped_rows_uncorrectable", "int", "count", {}),
    "remapped_rows.pending": ("remapped_rows_pending", "bool", None, {}),
    "remapped_rows.failure": ("remapped_rows_failure", "bool", None, {}),
    "fabric.state": ("fabric_state", "str", None, {}),
    "fabric.status": ("fabric_status", "str", None, {}),
}
_NODE_FIELDS = {"driver_version", "count"}


def _csv_rows(text: str) -> tuple[list[str], list[tuple[int, list[str]]]]:
    lines = [(i, ln) for i, ln in enumerate(text.splitlines(), 1) if ln.strip()]
    if not lines:
        raise ParseError("nvidia-smi", "empty output")
    head_line, head = lines[0]
    header = [
        re.sub(r"\s*\[.*\]$", "", h.strip())
        for h in next(csv.reader([head], skipinitialspace=True))
    ]
    rows = []
    for lineno, ln in lines[1:]:
        cells = next(csv.reader(io.StringIO(ln), skipinitialspace=True))
        if len(cells) != len(header):
            raise ParseError(
                "nvidia-smi", f"{len(cells)} values for {len(header)} columns", line=lineno
            )
        rows.append((lineno, cells))
    if head_line and "index" not in header and len(rows) > 1:
        raise ParseError("nvidia-smi", "several GPUs but no 'index' column", line=head_line)
    return header, rows


def parse_query_gpu(text: str) -> list[Fact]:
    _check_failure(text)
    header, rows = _csv_rows(text)
    known = [h for h in header if h in _CSV_FIELDS or h.endswith("_reasons.active")]
    if not known:
        raise ParseError("nvidia-smi", "no known --query-gpu field in the header", line=1)
    out: list[Fact] = []
    for pos, (lineno, cells) in enumerate(rows):
        row = dict(zip(header, cells, strict=True))
        if "index" in row and not re.fullmatch(r"[0-9]+", row["index"].strip()):
            raise ParseError("nvidia-smi", f"index: not a GPU index: {row['index']!r}", line=lineno)
        gpu = int(row["index"]) if "index" in row else pos
        for field, raw in row.items():
            if field in _CSV_FIELDS:
                name, kind, unit, dims = _CSV_FIELDS[field]
                if field in _NODE_FIELDS:
                    if pos == 0:
                        out.append(_typed(name, raw, kind, unit, None, lineno, field))
                    continue
                out.append(_typed(name, raw, kind, unit, gpu, lineno, field, **dims))
            elif field.startswith(("clocks_event_reasons.", "clocks_throttle_reasons.")):
                out.extend(_csv_clock_event(field.split(".", 1)[1], raw, gpu, lineno, field))
    return out


def _csv_clock_event(sub: str, raw: str, gpu: int, line: int, field: str) -> Iterable[Fact]:
    if sub in ("active", "supported"):
        if _na(raw):
            yield _fact(
                f"clocks_event_reasons_{sub}", None, gpu=gpu, reason=f"{field}: {raw.strip()}"
            )
            if sub == "active":
                yield _fact("clocks_event_reasons", None, gpu=gpu, reason=f"{field}: {raw.strip()}")
            return
        text = raw.strip()
        try:
            mask = int(text, 16)
        except ValueError:
            raise ParseError(
                "nvidia-smi", f"{field}: not a hex bitmask: {text!r}", line=line
            ) from None
        yield _fact(f"clocks_event_reasons_{sub}", text, gpu=gpu)
        if sub == "active":
            yield _fact(
                "clocks_event_reasons", ",".join(decode_clock_events(mask)) or "none", gpu=gpu
            )
        return
    if sub in CLOCK_EVENT_BITS:
        yield _typed(f"clocks_event.{sub}", raw, "bool", None, gpu, line, field)


# ---------------------------------------------------------------------------- topo


_TOPO_TRAILING = ("CPU Affinity", "NUMA Affinity", "GPU NUMA ID")


def _topo_index(name: str) -> int | str:
    m = re.fullmatch(r"GPU(\d+)", name)
    return int(m.group(1)) if m else name


def parse_topo(text: str) -> list[Fact]:
    _check_failure(text)
    lines = [_ANSI.sub("", ln) for ln in text.splitlines()]
    header_at = next(
        (i for i, ln in enumerate(lines) if ln.startswith("\t") and "GPU0" in ln), None
    )
    if header_at is None:
        raise ParseError(
            "nvidia-smi", "no matrix header (a line starting with a TAB and naming GPU0)"
        )
    header = [h.strip() for h in lines[header_at].split("\t")[1:]]
    # Device columns: GPUn, NICn (newer drivers, named in the legend) or HCA names such as
    # mlx5_0 (older drivers); then the affinity columns.
    first_trailing = next((i for i, h in enumerate(header) if h in _TOPO_TRAILING), len(header))
    devices = header[:first_trailing]
    trailing = header[first_trailing:]
    legend = dict(re.findall(r"^\s*(NIC\d+):\s*(\S+)\s*$", text, re.M))
    out: list[Fact] = []
    for offset, line in enumerate(lines[header_at + 1 :], header_at + 2):
        if not line.strip():
            break
        cells = line.split("\t")
        row = cells[0].strip()
        if not re.fullmatch(r"GPU\d+", row):
            continue
        out += _topo_links(row, cells[1 : 1 + len(devices)], devices, legend, offset)
        out += _topo_affinities(row, cells[1 + len(devices) :], trailing, offset)
    if not out:
        raise ParseError("nvidia-smi", "no GPU rows in the topology matrix", line=header_at + 1)
    return out


def _topo_links(
    row: str, cells: list[str], devices: list[str], legend: dict[str, str], offset: int
) -> list[Fact]:
    """A GPU's links to each other device of the matrix (``topo_link``, and
    ``nvlink_bonds`` for an ``NV#`` link); a NIC is named as the legend names it."""
    gpu = _topo_index(row)
    links = [c.strip() for c in cells]
    if len(links) != len(devices):
        raise ParseError(
            "nvidia-smi", f"{row}: {len(links)} links for {len(devices)} devices", line=offset
        )
    out: list[Fact] = []
    for peer, link in zip(devices, links, strict=True):
        if peer == row or link == "X":
            continue
        peer_name = legend.get(peer, peer)
        peer_dim = _topo_index(peer_name)
        out.append(
            _fact("topo_link", link, gpu=gpu if isinstance(gpu, int) else None, peer=peer_dim)
        )
        m = re.fullmatch(r"NV(\d+)", link)
        if m:
            out.append(
                _fact(
                    "nvlink_bonds",
                    int(m.group(1)),
                    "count",
                    gpu=gpu if isinstance(gpu, int) else None,
                    peer=peer_dim,
                )
            )
    return out


def _topo_affinities(row: str, cells: list[str], trailing: list[str], offset: int) -> list[Fact]:
    """A GPU's values in the columns after the devices: CPU and NUMA affinity, NUMA id."""
    gpu = _topo_index(row)
    rest = [c.strip() for c in cells if c.strip()]
    if len(rest) != len(trailing):
        raise ParseError(
            "nvidia-smi", f"{row}: {len(rest)} values for columns {trailing}", line=offset
        )
    out: list[Fact] = []
    for col, raw in zip(trailing, rest, strict=True):
        name = {
            "CPU Affinity": "cpu_affinity",
            "NUMA Affinity": "numa_affinity",
            "GPU NUMA ID": "gpu_numa_id",
        }.get(col, _snake(col))
        out.append(
            _typed(name, raw, "str", None, gpu if isinstance(gpu, int) else None, offset, col)
        )
    return out


# --------------------------------------------------------------------- default table

_TABLE_HEAD = re.compile(r"Driver Version:\s*(?P<driver>\S+)\s+CUDA Version:\s*(?P<cuda>\S+)")
_ROW1 = re.compile(r"^\s*(?P<idx>\d+)\s+(?P<name>.+?)\s+(?P<pm>On|Off)\s*$")
_ROW2 = re.compile(
    r"^\s*(?P<fan>\S+)\s+(?P<temp>\S+)\s+(?P<perf>\S+)\s+(?P<pwr>\S+)\s*/\s*(?P<cap>\S+)\s*$"
)
_MEM = re.compile(r"^\s*(?P<used>\d+)MiB\s*/\s*(?P<total>\d+)MiB\s*$")


def parse_table(text: str) -> list[Fact]:
    """The default ``nvidia-smi`` table (the box drawing) -> the facts it shows.

    Reads the header (driver, CUDA) and each GPU's block of two or three lines (the third,
    MIG mode, since driver 470). The name column is cut by nvidia-smi when it is long.
    Persistence ``On``/``Off`` is reported as ``Enabled``/``Disabled`` like ``-q``.
    """
    _check_failure(text)
    lines = text.splitlines()
    head = next(
        ((i, m) for i, ln in enumerate(lines, 1) for m in [_TABLE_HEAD.search(ln)] if m), None
    )
    if head is None:
        raise ParseError("nvidia-smi", "no 'Driver Version: ... CUDA Version:' header line")
    line_no, m = head
    out = [_fact("driver_version", m.group("driver")), _fact("cuda_version", m.group("cuda"))]
    start = next((i for i, ln in enumerate(lines) if ln.startswith("|===")), None)
    if start is None:
        raise ParseError("nvidia-smi", "no '|===' line above the GPU rows", line=line_no)
    block: list[tuple[int, list[str]]] = []
    gpus = 0
    for i in range(start + 1, len(lines)):
        ln = lines[i]
        if ln.startswith("+") or not ln.strip():
            if block:
                out.extend(_table_gpu(block))
                gpus += 1
                block = []
            if not ln.strip() or not lines[i + 1 : i + 2] or not lines[i + 1].startswith("|"):
                break
            continue
        if ln.startswith("|"):
            block.append((i + 1, [c.strip() for c in ln.strip().strip("|").split("|")]))
    if block:
        raise ParseError(
            "nvidia-smi", "the table ends inside a GPU row (cut off?)", line=block[-1][0]
        )
    out.insert(2, _fact("gpu_count", gpus, "count"))
    return out


def _table_gpu(block: list[tuple[int, list[str]]]) -> list[Fact]:
    (l1, c1), (l2, c2) = block[0], block[1] if len(block) > 1 else (block[0][0], [])
    if len(c1) != 3 or len(c2) != 3:
        raise ParseError("nvidia-smi", "a GPU row without its three cells", line=l1)
    m1 = _ROW1.match(c1[0])
    m2 = _ROW2.match(c2[0])
    mem = _MEM.match(c2[1])
    if not (m1 and m2 and mem):
        raise ParseError("nvidia-smi", f"unreadable GPU row: {c1[0]!r} / {c2[0]!r}", line=l1)
    gpu = int(m1.group("idx"))
    bus = c1[1].split()
    util = c2[2].split()
    out = [
        _fact("product_name", m1.group("name"), gpu=gpu),
        _fact("persistence_mode", "Enabled" if m1.group("pm") == "On" else "Disabled", gpu=gpu),
        _typed("bus_id", bus[0] if bus else "", "str", None, gpu, l1, "Bus-Id"),
        _typed(
            "ecc_uncorrected_total",
            c1[2],
            "int",
            "count",
            gpu,
            l1,
            "Volatile Uncorr. ECC",
            scope="volatile",
        ),
        _typed("temp_gpu", m2.group("temp").rstrip("C"), "int", "C", gpu, l2, "Temp"),
        _typed("performance_state", m2.group("perf"), "str", None, gpu, l2, "Perf"),
        _typed("power_draw", m2.group("pwr").rstrip("W"), "float", "W", gpu, l2, "Pwr:Usage"),
        _typed("power_limit", m2.group("cap").rstrip("W"), "float", "W", gpu, l2, "Pwr:Cap"),
        _fact("memory_used", int(mem.group("used")), "MiB", gpu=gpu),
        _fact("memory_total", int(mem.group("total")), "MiB", gpu=gpu),
        _typed(
            "utilization_gpu", util[0].rstrip("%") if util else "", "int", "%", gpu, l2, "GPU-Util"
        ),
        _typed(
            "compute_mode", util[1] if len(util) > 1 else "", "str", None, gpu, l2, "Compute M."
        ),
    ]
    if len(block) > 2 and len(block[2][1]) == 3:
        lm, c3 = block[2]
        out.append(_typed("mig_mode", c3[2], "str", None, gpu, lm, "MIG M."))
    return out


def _detect_q(text: str) -> bool:
    return "==============NVSMI LOG==============" in text


_CSV_HEADER_FIELD = re.compile(r"[a-z_][\w.]*(?: \[[^\]]*\])?")


def _detect_csv(text: str) -> bool:
    """A --query-gpu header: only field names (with their unit in brackets), one known."""
    first = text.lstrip().split("\n", 1)[0].rstrip("\r")
    fields = [f.strip() for f in first.split(",")]
    return (
        len(fields) > 1
        and all(_CSV_HEADER_FIELD.fullmatch(f) for f in fields)
        and any(
            f.startswith(("driver_version", "pci.bus_id", "clocks_event_reasons", "index"))
            for f in fields
        )
        and not repeats_a_gpu(text)  # a loop: nvidia-smi-loop
    )


def _detect_table(text: str) -> bool:
    return "NVIDIA-SMI " in text and "Driver Version:" in text and "|===" in text


def _detect_topo(text: str) -> bool:
    return "CPU Affinity" in text and "Legend:" in text


PARSER = [
    Parser("nvidia-smi-q", parse_q, "GPU facts from nvidia-smi -q", _detect_q, emits="facts"),
    Parser(
        "nvidia-smi-query-gpu",
        parse_query_gpu,
        "GPU facts from nvidia-smi --query-gpu CSV",
        _detect_csv,
        emits="facts",
    ),
    Parser(
        "nvidia-smi-table",
        parse_table,
        "GPU facts from the default nvidia-smi table",
        _detect_table,
        emits="facts",
    ),
    Parser(
        "nvidia-smi-topo",
        parse_topo,
        "GPU topology from nvidia-smi topo -m",
        _detect_topo,
        emits="facts",
    ),
]
