"""amd-smi with no subcommand: the default table (ROCm 6.4 and later), like nvidia-smi's.

Reads::

    | AMD-SMI 26.0.2+39589fda      amdgpu version: 6.14.14  ROCm version: 7.0.2    |
    | VBIOS version: 00159017                                                      |
    | BDF                        GPU-Name | Mem-Uti   Temp   UEC       Power-Usage |
    | GPU  HIP-ID  OAM-ID  Partition-Mode | GFX-Uti    Fan               Mem-Usage |
    | 0000:2d:00.0  AMD Radeon RX 9070 XT | 6 %      62 °C   0           189/266 W |
    |   0       0     N/A             N/A | 100 %   29.8 %          11541/16304 MB |

and the process list under it (``| Processes: |``, ``GPU PID Process Name GTT_MEM
VRAM_MEM MEM_USAGE CU %`` rows, or ``No running processes found``). Source ``"amd-smi"``,
``emits="facts"``, the fact names of :mod:`aibench.parsers.amd_smi` where the meaning is
the same. Node facts: ``amd_smi_version``, ``driver_version`` (the amdgpu version),
``rocm_version``, ``vbios_version`` (when printed), ``platform``, ``gpu_count``,
``process_count``. Per GPU (dims ``gpu``): ``bus_id``, ``product_name`` (as printed: the
column cuts long names, ``...Instinct MI300X OAM``), ``hip_id``, ``oam_id``,
``compute_partition`` / ``memory_partition`` (``SPX/NPS1``), ``umc_activity`` and
``gfx_activity`` (%), ``temp`` (C, the table's temperature), ``ecc_uncorrectable_total``
(UEC, count), ``power_socket`` and ``power_cap`` (W), ``fan_speed`` (%), ``vram_used`` and
``vram_total`` (MiB: amd-smi's MB). Per process (dims ``gpu``, ``pid``):
``process_name``, ``process_vram`` (MiB). ``N/A`` gives the fact absent with that reason,
and so does the ``Linuxver`` some releases print for an amdgpu version they cannot read.
Tested on amd-smi 26.0.2 (RX 9070 XT, with a process) and 26.2.0 (MI300X VF).
"""

from __future__ import annotations

import re

from aibench.errors import ParseError
from aibench.model import Fact, FactValue, FrozenDims
from aibench.parsers import Parser

SOURCE = "amd-smi"
_BANNER = re.compile(r"AMD-SMI (\S+)\s+amdgpu version: (\S+)\s+ROCm version: (\S+)", re.IGNORECASE)
_SIZE = {"B": 1 / 2**20, "KB": 1 / 1024, "MB": 1.0, "GB": 1024.0, "TB": 1024.0**2}


def _fact(name: str, raw: str, unit: str | None, dims: FrozenDims, kind: str = "str") -> Fact:
    raw = raw.strip()
    if raw in ("N/A", "", "Linuxver"):
        return Fact(SOURCE, name, None, unit, dims, reason=f"amd-smi printed {raw or 'nothing'}")
    value: FactValue = raw
    if kind != "str":
        num = re.match(r"^-?[0-9]+(?:\.[0-9]+)?", raw)
        if num is None:
            raise ParseError(SOURCE, f"{name}: not a number: {raw!r}")
        value = int(num.group(0)) if kind == "int" else float(num.group(0))
    return Fact(SOURCE, name, value, unit, dims)


def _pair(names: tuple[str, str], cell: str, unit: str, dims: FrozenDims) -> list[Fact]:
    """``189/266 W``, ``N/A/750 W``, ``538/16304 MB``, ``N/A``: used and total."""
    body = cell.rsplit(" ", 1)[0] if cell.endswith((" W", " MB")) else cell
    parts = body.split("/") if body != "N/A" else ["N/A", "N/A"]
    if body.startswith("N/A/"):
        parts = ["N/A", body[4:]]
    if len(parts) != 2:
        raise ParseError(SOURCE, f"{names[0]}: expected used/total, got {cell!r}")
    return [_fact(n, p, unit, dims, "float") for n, p in zip(names, parts, strict=True)]


def _gpu(first: str, second: str, n: int) -> list[Fact]:
    halves = [[c.strip() for c in ln.strip().strip("|").split("|")] for ln in (first, second)]
    if any(len(h) != 2 for h in halves):
        raise ParseError(SOURCE, "a GPU row that is not the two lines of the table", n)
    (left1, right1), (left2, right2) = halves
    ids, a, b = left2.split(), re.split(r"\s{2,}", right1), re.split(r"\s{2,}", right2)
    if len(ids) != 4 or len(a) != 4 or len(b) != 3 or not ids[0].isdigit():
        raise ParseError(SOURCE, "a GPU row that is not the two lines of the table", n)
    dims = FrozenDims({"gpu": int(ids[0])})
    bus, _, name = left1.partition(" ")
    part = ids[3].split("/") if ids[3] != "N/A" else ["N/A", "N/A"]
    out = [
        _fact("bus_id", bus, None, dims),
        _fact("product_name", name, None, dims),
        _fact("hip_id", ids[1], None, dims, "int"),
        _fact("oam_id", ids[2], None, dims, "int"),
        _fact("compute_partition", part[0], None, dims),
        _fact("memory_partition", part[-1], None, dims),
        _fact("umc_activity", a[0], "%", dims, "float"),
        _fact("temp", a[1], "C", dims, "float"),
        _fact("ecc_uncorrectable_total", a[2], "count", dims, "int"),
        *_pair(("power_socket", "power_cap"), a[3], "W", dims),
        _fact("gfx_activity", b[0], "%", dims, "float"),
        _fact("fan_speed", b[1], "%", dims, "float"),
        *_pair(("vram_used", "vram_total"), b[2], "MiB", dims),
    ]
    return out


def _process(line: str, n: int) -> list[Fact]:
    cells = line.strip().strip("|").split()
    if len(cells) < 5 or not (cells[0].isdigit() and cells[1].isdigit()):
        raise ParseError(SOURCE, "a process row without GPU, PID and name", n)
    dims = FrozenDims({"gpu": int(cells[0]), "pid": int(cells[1])})
    out = [Fact(SOURCE, "process_name", cells[2], None, dims)]
    vram = re.search(r"\s([0-9.]+) (B|KB|MB|GB|TB)\s+([0-9.]+) (B|KB|MB|GB|TB)", line)
    if vram:  # GTT_MEM then VRAM_MEM
        mib = float(vram.group(3)) * _SIZE[vram.group(4)]
        out.append(Fact(SOURCE, "process_vram", round(mib, 1), "MiB", dims))
    return out


def parse(text: str) -> list[Fact]:
    lines = text.splitlines()
    head: list[Fact] = []
    gpus: list[Fact] = []
    procs: list[Fact] = []
    section = ""
    for n, line in enumerate(lines, 1):
        body = line.strip().strip("|").strip()
        banner = _BANNER.search(line)
        if banner:
            for name, raw in zip(("amd_smi_version", "driver_version", "rocm_version"),
                                 banner.groups(), strict=True):  # fmt: skip
                head.append(_fact(name, raw, None, FrozenDims({})))
        elif body.startswith(("VBIOS version:", "Platform:")):
            key, _, value = body.partition(":")
            name = "vbios_version" if key.startswith("VBIOS") else "platform"
            head.append(_fact(name, value, None, FrozenDims({})))
        elif body.startswith("Processes:"):
            section = "processes"
        elif body.startswith("BDF") or body.startswith("GPU  ") or set(body) <= set("=-+|"):
            continue
        elif section == "processes":
            if body and not body.startswith("No running processes"):
                procs += _process(line, n)
        elif re.match(r"^[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:", body) and n < len(lines):
            gpus += _gpu(line, lines[n], n)
    if not gpus:
        raise ParseError(SOURCE, "no GPU row: not the default amd-smi table")
    count = len({f.dims["gpu"] for f in gpus})
    nproc = len({f.dims["pid"] for f in procs})
    return [*head, Fact(SOURCE, "gpu_count", count, "count"),
            Fact(SOURCE, "process_count", nproc, "count"), *gpus, *procs]  # fmt: skip


def _detect(text: str) -> bool:
    head = text[:3000]
    return _BANNER.search(head) is not None and "Partition-Mode" in head


PARSER = Parser(
    "amd-smi-table", parse, "AMD GPU facts from the default amd-smi table", _detect,
    emits="facts",
)  # fmt: skip
