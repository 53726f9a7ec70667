"""Node facts from the operating system: /proc and /sys files, lsblk, findmnt, tool versions.

Five parsers, all ``emits="facts"``; tested on Debian 12 (util-linux 2.38, kernel 6.x).

``node-files`` reads ``grep -H '' FILE...`` over :data:`NODE_FILES` (each line is
``path:content``; ``grep: PATH: No such file or directory`` lines, from stderr, make that
file's facts absent with the reason). Facts:

* source ``cpu``: ``model``, ``sockets``, ``cores``, ``threads`` (count), ``numa_nodes``
  (count, from /sys/devices/system/node/online), ``numa_cpulist`` (dims ``numa_node``),
  ``governor`` (cpufreq scaling governor of cpu0; absent where cpufreq is not exposed);
* source ``memory``: ``total`` (GiB), ``hugepages_total`` (count), ``hugepage_size`` (KiB);
* source ``kernel``: ``release`` (= ``uname -r``); source ``os``: ``pretty_name``, ``id``,
  ``version_id`` and ``release`` (``ID VERSION_ID`` of /etc/os-release: ``ubuntu 22.04``);
  source ``host``: ``hostname``;
* source ``sysctl``: ``vm.swappiness``, ``vm.zone_reclaim_mode``, ``vm.max_map_count``,
  ``kernel.numa_balancing``, ``net.core.rmem_max``, ``net.core.wmem_max`` (int),
  ``net.ipv4.tcp_rmem``, ``net.ipv4.tcp_wmem`` (text: min default max, one space apart);
* source ``thp``: ``enabled``, ``defrag`` (the selected value: always | madvise | never ...);
* source ``limits``: ``nofile_soft``, ``nofile_hard``, ``memlock_soft``, ``memlock_hard``
  (int, or the text ``unlimited``; of the processes the executor starts);
* source ``dmi``: ``bios_vendor``, ``bios_version``, ``bios_date``, ``sys_vendor``,
  ``product_name`` (absent in VMs and containers that do not expose /sys/class/dmi).

``lsblk-json`` (``lsblk -J -b -d -o NAME,TYPE,MODEL,SIZE,REV,TRAN,ROTA``), source ``disk``:
``count`` (disks), per disk (dims ``device``): ``model``, ``size`` (B), ``firmware`` (REV),
``transport``, ``rotational`` (bool). null columns are absent facts.

``findmnt-json`` (``findmnt -J -b -o TARGET,SOURCE,FSTYPE,SIZE,AVAIL -T PATH``), source
``mount``: ``target`` (the mount point), ``device``, ``fstype``, ``size`` / ``avail`` (B);
the runner adds dims ``path`` (the data directory asked about).

``tool-versions`` reads the output of :data:`TOOLS_SCRIPT` (``@@ tool NAME``, ``@@ path P``,
the version command's output, ``@@ rc N``; ``@@ nccl PATH``). Facts: source ``tool-path``
(name = tool, value the path; absent "NAME: not installed"), source ``tool-version`` (name =
tool, value the version text such as ``3.33``; absent with the reason when the tool is
missing or its version command failed), source ``container`` name ``runtimes`` (the
container tools found, comma separated; absent when none), source ``nccl`` name
``version`` (from the libnccl.so.2 file name that ``ldconfig -p`` points to).

``dmesg-xid`` (``dmesg``), source ``kernel-log``: ``lines`` (count read), ``xid_count``
(count of ``NVRM: Xid`` events), ``xid_codes`` (distinct Xid codes, comma separated, or
``none``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from typing import Any

from aibench.errors import ParseError
from aibench.model import Fact, FactValue, FrozenDims
from aibench.parsers import Parser

CPU_ONLINE_NODES = 16  # NUMA nodes whose cpulist is read

NODE_FILES: tuple[str, ...] = (
    "/proc/cpuinfo",
    "/proc/meminfo",
    "/proc/sys/kernel/osrelease",
    "/proc/sys/kernel/hostname",
    "/etc/os-release",
    "/proc/sys/vm/swappiness",
    "/proc/sys/vm/zone_reclaim_mode",
    "/proc/sys/vm/max_map_count",
    "/proc/sys/kernel/numa_balancing",
    "/proc/sys/net/core/rmem_max",
    "/proc/sys/net/core/wmem_max",
    "/proc/sys/net/ipv4/tcp_rmem",
    "/proc/sys/net/ipv4/tcp_wmem",
    "/sys/kernel/mm/transparent_hugepage/enabled",
    "/sys/kernel/mm/transparent_hugepage/defrag",
    "/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor",
    "/sys/devices/system/node/online",
    "/proc/self/limits",
    "/sys/class/dmi/id/bios_vendor",
    "/sys/class/dmi/id/bios_version",
    "/sys/class/dmi/id/bios_date",
    "/sys/class/dmi/id/sys_vendor",
    "/sys/class/dmi/id/product_name",
    *(f"/sys/devices/system/node/node{i}/cpulist" for i in range(CPU_ONLINE_NODES)),
)

# Files whose single line is one fact: path -> (source, name, kind)
_SINGLE: dict[str, tuple[str, str, str]] = {
    "/proc/sys/kernel/osrelease": ("kernel", "release", "str"),
    "/proc/sys/kernel/hostname": ("host", "hostname", "str"),
    "/proc/sys/vm/swappiness": ("sysctl", "vm.swappiness", "int"),
    "/proc/sys/vm/zone_reclaim_mode": ("sysctl", "vm.zone_reclaim_mode", "int"),
    "/proc/sys/vm/max_map_count": ("sysctl", "vm.max_map_count", "int"),
    "/proc/sys/kernel/numa_balancing": ("sysctl", "kernel.numa_balancing", "int"),
    "/proc/sys/net/core/rmem_max": ("sysctl", "net.core.rmem_max", "int"),
    "/proc/sys/net/core/wmem_max": ("sysctl", "net.core.wmem_max", "int"),
    "/proc/sys/net/ipv4/tcp_rmem": ("sysctl", "net.ipv4.tcp_rmem", "words"),
    "/proc/sys/net/ipv4/tcp_wmem": ("sysctl", "net.ipv4.tcp_wmem", "words"),
    "/sys/kernel/mm/transparent_hugepage/enabled": ("thp", "enabled", "choice"),
    "/sys/kernel/mm/transparent_hugepage/defrag": ("thp", "defrag", "choice"),
    "/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor": ("cpu", "governor", "str"),
    "/sys/class/dmi/id/bios_vendor": ("dmi", "bios_vendor", "str"),
    "/sys/class/dmi/id/bios_version": ("dmi", "bios_version", "str"),
    "/sys/class/dmi/id/bios_date": ("dmi", "bios_date", "str"),
    "/sys/class/dmi/id/sys_vendor": ("dmi", "sys_vendor", "str"),
    "/sys/class/dmi/id/product_name": ("dmi", "product_name", "str"),
}
# Facts of the multi-line files, for absence: path -> [(source, name, unit)]
_MULTI: dict[str, list[tuple[str, str, str | None]]] = {
    "/proc/cpuinfo": [
        ("cpu", "model", None),
        ("cpu", "sockets", "count"),
        ("cpu", "cores", "count"),
        ("cpu", "threads", "count"),
    ],
    "/proc/meminfo": [
        ("memory", "total", "GiB"),
        ("memory", "hugepages_total", "count"),
        ("memory", "hugepage_size", "KiB"),
    ],
    "/etc/os-release": [
        ("os", "pretty_name", None),
        ("os", "id", None),
        ("os", "version_id", None),
        ("os", "release", None),
    ],
    "/sys/devices/system/node/online": [("cpu", "numa_nodes", "count")],
    "/proc/self/limits": [
        ("limits", "nofile_soft", None),
        ("limits", "nofile_hard", None),
        ("limits", "memlock_soft", None),
        ("limits", "memlock_hard", None),
    ],
}
_GREP_ERR = re.compile(r"^grep: (/\S+): (.+)$")
_KNOWN = frozenset(NODE_FILES)
assert not any(":" in p for p in _KNOWN)  # _group relies on it


def _group(text: str) -> tuple[dict[str, list[tuple[int, str]]], dict[str, str]]:
    files: dict[str, list[tuple[int, str]]] = {}
    errors: dict[str, str] = {}
    for lineno, line in enumerate(text.splitlines(), 1):
        m = _GREP_ERR.match(line) if line.startswith("grep: ") else None
        if m:
            errors[m.group(1)] = m.group(2).strip()
            continue
        # no known path holds a ":", so the text before the first ":" is the path
        path, sep, content = line.partition(":")
        if sep and path in _KNOWN:
            files.setdefault(path, []).append((lineno, content))
        elif line.strip():
            raise ParseError("node-files", f"line names no known file: {line[:80]!r}", line=lineno)
    return files, errors


_DIGITS = re.compile(r"^[0-9]+$")
_INT = re.compile(r"-?[0-9]+")
_MEMINFO = re.compile(r"^(\w+):\s+([0-9]+)(?: kB)?$")
_RANGE = re.compile(r"[0-9]+(-[0-9]+)?")
_NODE = re.compile(r"node(\d+)")
_SELECTED = re.compile(r"\[(\w+)\]")
_NCCL_SO = re.compile(r"libnccl\.so\.(\d+\.\d+\.\d+)")


def _int(text: str, what: str, line: int) -> int:
    try:
        if not _INT.fullmatch(text.strip()):
            raise ValueError(text)
        return int(text.strip())
    except ValueError:
        raise ParseError(
            "node-files", f"{what}: not an integer: {text.strip()!r}", line=line
        ) from None


def _cpu_blocks(lines: list[tuple[int, str]]) -> list[list[tuple[str, str]]]:
    """The blocks of /proc/cpuinfo (one per processor, a blank line apart) as (key, value)."""
    blocks: list[list[tuple[str, str]]] = [[]]
    for _, line in lines:
        if not line.strip():
            blocks.append([])
            continue
        key, _, value = line.partition(":")
        blocks[-1].append((key.strip(), value.strip()))
    return blocks


def _cpuinfo(lines: list[tuple[int, str]]) -> list[Fact]:
    blocks = _cpu_blocks(lines)
    pairs = [kv for block in blocks for kv in block]
    threads = sum(1 for key, _ in pairs if key == "processor")
    if not threads:
        raise ParseError(
            "node-files", "/proc/cpuinfo lists no processor", line=lines[0][0] if lines else None
        )
    models = [value for key, value in pairs if key == "model name"]
    cores: set[tuple[str, str]] = set()
    sockets: set[str] = set()
    for cur in map(dict, blocks):
        if "processor" in cur and "physical id" in cur:
            sockets.add(cur["physical id"])
            if "core id" in cur:
                cores.add((cur["physical id"], cur["core id"]))
    src = "/proc/cpuinfo"
    return [
        Fact("cpu", "model", models[0])
        if models
        else Fact("cpu", "model", None, reason=f"{src} has no 'model name'"),
        Fact("cpu", "sockets", len(sockets), "count")
        if sockets
        else Fact("cpu", "sockets", None, "count", reason=f"{src} has no 'physical id'"),
        Fact("cpu", "cores", len(cores), "count")
        if cores
        else Fact("cpu", "cores", None, "count", reason=f"{src} has no 'core id'"),
        Fact("cpu", "threads", threads, "count"),
    ]


def _meminfo(lines: list[tuple[int, str]]) -> list[Fact]:
    vals: dict[str, tuple[int, int]] = {}
    for lineno, line in lines:
        m = _MEMINFO.match(line.strip())
        if m:
            vals[m.group(1)] = (int(m.group(2)), lineno)
    if "MemTotal" not in vals:
        raise ParseError(
            "node-files", "/proc/meminfo has no MemTotal", line=lines[0][0] if lines else None
        )
    out = [Fact("memory", "total", round(vals["MemTotal"][0] / 2**20, 2), "GiB")]
    if "HugePages_Total" in vals:
        out.append(Fact("memory", "hugepages_total", vals["HugePages_Total"][0], "count"))
    if "Hugepagesize" in vals:
        out.append(Fact("memory", "hugepage_size", vals["Hugepagesize"][0], "KiB"))
    return out


def _os_release(lines: list[tuple[int, str]]) -> list[Fact]:
    """PRETTY_NAME, ID, VERSION_ID and ``release`` = "ID VERSION_ID" ("ubuntu 22.04")."""
    keys: dict[str, str] = {}
    for _, ln in lines:
        k, sep, v = ln.partition("=")
        if sep and k.strip() in ("PRETTY_NAME", "ID", "VERSION_ID"):
            keys[k.strip()] = v.strip().strip('"').strip("'")
    out = []
    for key, name in (("PRETTY_NAME", "pretty_name"), ("ID", "id"), ("VERSION_ID", "version_id")):
        got = keys.get(key) or None
        out.append(Fact("os", name, got, reason="" if got else f"/etc/os-release has no {key}"))
    both = keys.get("ID") and keys.get("VERSION_ID")
    out.append(
        Fact(
            "os",
            "release",
            f"{keys['ID']} {keys['VERSION_ID']}" if both else None,
            reason="" if both else "/etc/os-release lacks ID or VERSION_ID",
        )
    )
    return out


def _limits(lines: list[tuple[int, str]]) -> list[Fact]:
    out = []
    for _, line in lines:
        for label, name in (("Max open files", "nofile"), ("Max locked memory", "memlock")):
            if line.startswith(label):
                parts = line[len(label) :].split()
                if len(parts) < 2:
                    raise ParseError(
                        "node-files", f"/proc/self/limits: {label}: two limits expected"
                    )
                for which, raw in zip(("soft", "hard"), parts[:2], strict=True):
                    if raw != "unlimited" and not _DIGITS.match(raw):
                        raise ParseError("node-files", f"/proc/self/limits: {label}: {raw!r}")
                    value: FactValue = raw if raw == "unlimited" else int(raw)
                    unit = "count" if name == "nofile" else "B"
                    out.append(
                        Fact(
                            "limits", f"{name}_{which}", value, unit if raw != "unlimited" else None
                        )
                    )
    return out


def _count_ranges(text: str) -> int:
    n = 0
    for part in text.strip().split(","):
        if not part:
            continue
        if not _RANGE.fullmatch(part):
            raise ParseError("node-files", f"/sys/devices/system/node/online: {text.strip()!r}")
        lo, _, hi = part.partition("-")
        n += (int(hi) - int(lo) + 1) if hi else 1
    return n


def _single_value(path: str, kind: str, lineno: int, raw: str) -> FactValue:
    """The value of a one-line file, read as its kind: int, choice, words or str."""
    if kind == "int":
        return _int(raw, path, lineno)
    if kind == "choice":
        m = _SELECTED.search(raw)
        if m is None:
            raise ParseError("node-files", f"{path}: no [selected] value in {raw!r}", line=lineno)
        return m.group(1)
    if kind == "words":  # "4096\t131072\t6291456": min default max, one space
        return " ".join(raw.split())
    return raw.strip()


def _numa_nodes(lines: list[tuple[int, str]]) -> list[Fact]:
    """The count of NUMA nodes from /sys/devices/system/node/online ("0-1,4")."""
    return [Fact("cpu", "numa_nodes", _count_ranges(lines[0][1]), "count")]


# The multi-line files' readers: path -> lines -> facts
_MULTI_READERS: dict[str, Callable[[list[tuple[int, str]]], list[Fact]]] = {
    "/proc/cpuinfo": _cpuinfo,
    "/proc/meminfo": _meminfo,
    "/etc/os-release": _os_release,
    "/sys/devices/system/node/online": _numa_nodes,
    "/proc/self/limits": _limits,
}
assert set(_MULTI_READERS) == set(_MULTI)


def parse_node_files(text: str) -> list[Fact]:
    files, errors = _group(text)
    if not files:
        raise ParseError("node-files", "no file contents in the output")
    out: list[Fact] = []

    def absent(path: str, facts: Iterable[tuple[str, str, str | None]]) -> None:
        why = f"{path}: {errors[path]}" if path in errors else f"{path}: not in the output"
        out.extend(Fact(s, n, None, u, reason=why) for s, n, u in facts)

    for path in NODE_FILES:
        lines = files.get(path)
        if path.startswith("/sys/devices/system/node/node"):
            if lines:
                node = int(_NODE.findall(path)[-1])
                cpulist = lines[0][1].strip()
                out.append(
                    Fact("cpu", "numa_cpulist", cpulist, dims=FrozenDims({"numa_node": node}))
                )
        elif path in _SINGLE:
            source, name, kind = _SINGLE[path]
            if lines:
                out.append(Fact(source, name, _single_value(path, kind, *lines[0])))
            else:
                absent(path, [(source, name, None)])
        elif lines:
            out.extend(_MULTI_READERS[path](lines))
        else:
            absent(path, _MULTI[path])
    return out


# -------------------------------------------------------------------------- lsblk


def _json(tool: str, text: str, key: str) -> list[dict[str, Any]]:
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ParseError(tool, f"invalid JSON: {exc.msg}", line=exc.lineno) from None
    if not isinstance(doc, dict) or not isinstance(doc.get(key), list):
        raise ParseError(tool, f"no {key!r} list in the JSON")
    return [d for d in doc[key] if isinstance(d, dict)]


def _opt(
    source: str, name: str, raw: object, col: str, unit: str | None = None, **dims: str
) -> Fact:
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return Fact(source, name, None, unit, FrozenDims(dims), reason=f"{col} not reported")
    if isinstance(raw, str):
        return Fact(source, name, raw.strip(), unit, FrozenDims(dims))
    if isinstance(raw, bool | int | float):
        return Fact(source, name, raw, unit, FrozenDims(dims))
    raise ParseError(source, f"{col}: unexpected value {raw!r}")


def _int_col(tool: str, raw: object, col: str) -> int | None:
    if raw is None:
        return None
    if isinstance(raw, int) and not isinstance(raw, bool):
        return raw
    if isinstance(raw, str) and _DIGITS.match(raw.strip()):
        return int(raw)
    raise ParseError(tool, f"{col}: not a byte count: {raw!r} (use lsblk/findmnt -b)")


def parse_lsblk(text: str) -> list[Fact]:
    devices = _json("lsblk", text, "blockdevices")
    disks = [d for d in devices if d.get("type") == "disk"]
    out = [Fact("disk", "count", len(disks), "count")]
    for d in disks:
        dev = str(d.get("name", "?"))
        rota = d.get("rota")
        if isinstance(rota, str):  # util-linux before 2.33 prints "0" / "1"
            rota = rota.strip() == "1"
        out += [
            _opt("disk", "model", d.get("model"), "MODEL", device=dev),
            _opt("disk", "size", _int_col("lsblk", d.get("size"), "SIZE"), "SIZE", "B", device=dev),
            _opt("disk", "firmware", d.get("rev"), "REV", device=dev),
            _opt("disk", "transport", d.get("tran"), "TRAN", device=dev),
            _opt("disk", "rotational", rota, "ROTA", device=dev),
        ]
    return out


def parse_findmnt(text: str) -> list[Fact]:
    fss = _json("findmnt", text, "filesystems")
    if len(fss) != 1:
        raise ParseError(
            "findmnt", f"{len(fss)} filesystems listed, expected the one holding the path"
        )
    fs = fss[0]
    return [
        _opt("mount", "target", fs.get("target"), "TARGET"),
        _opt("mount", "device", fs.get("source"), "SOURCE"),
        _opt("mount", "fstype", fs.get("fstype"), "FSTYPE"),
        _opt("mount", "size", _int_col("findmnt", fs.get("size"), "SIZE"), "SIZE", "B"),
        _opt("mount", "avail", _int_col("findmnt", fs.get("avail"), "AVAIL"), "AVAIL", "B"),
    ]


# ------------------------------------------------------------------- tool versions

# Tool name -> the argument that prints its version (None: presence only).
TOOLS: dict[str, str | None] = {
    "fio": "--version",
    "iperf3": "--version",
    "iperf": "-v",
    "ib_write_bw": "--version",
    "mpirun": "--version",
    "srun": "--version",
    "docker": "--version",
    "enroot": "version",
    "nvidia-container-cli": "--version",
    "all_reduce_perf": None,
    "nvidia-smi": "--version",
    "dcgmi": "--version",
    "ibstat": "-V",
}
CONTAINER_TOOLS = ("docker", "enroot", "nvidia-container-cli")

# A fixed script: it contains no value from the inventory or the suite.
TOOLS_SCRIPT = (
    "for t in " + " ".join(TOOLS) + "; do\n"
    '  echo "@@ tool $t"\n'
    '  p=$(command -v "$t") || { echo "@@ rc 127"; continue; }\n'
    '  echo "@@ path $p"\n'
    '  case "$t" in\n'
    + "".join(
        f'    {t}) out=$(timeout 10 "$t" {arg} 2>&1 </dev/null); rc=$? ;;\n'
        for t, arg in TOOLS.items()
        if arg is not None
    )
    + '    *) out=""; rc=0 ;;\n'
    "  esac\n"
    '  printf "%s\\n" "$out" | head -n 5\n'
    '  echo "@@ rc $rc"\n'
    "done\n"
    "l=$(ldconfig -p 2>/dev/null | awk '/libnccl\\.so\\.2 /{print $NF; exit}')\n"
    'echo "@@ nccl $(if [ -n "$l" ]; then readlink -f "$l"; fi)"\n'
)

_VERSION_PATTERNS: dict[str, str] = {
    "fio": r"fio-(\S+)",
    "iperf3": r"iperf (\d+\.\d+(?:\.\d+)?)",
    "iperf": r"iperf version (\S+)",
    "ib_write_bw": r"Version:\s*(\S+)",
    "mpirun": r"\(Open MPI\) (\S+)|Version:\s*(\S+)",
    "srun": r"slurm(?:-wlm)? (\S+)",
    "docker": r"Docker version ([^,\s]+)",
    "enroot": r"^(\d+\.\d+\S*)",
    "nvidia-container-cli": r"cli-version: (\S+)|version: (\S+)",
    "nvidia-smi": r"NVIDIA-SMI version\s*:\s*(\S+)",
    "dcgmi": r"[Vv]ersion:?\s*(\d\S*)",
    "ibstat": r"ibstat BUILD VERSION: (\S+)",
}
# Tools whose version command exits non-zero although it printed the version.
_NONZERO_OK = {"ib_write_bw", "ibstat", "iperf"}


_VERSION_RX = {tool: re.compile(p, re.M) for tool, p in _VERSION_PATTERNS.items()}
_ANY_VERSION = re.compile(r"(\d+\.\d+(?:\.\d+)*)", re.M)


def _version_of(tool: str, output: str) -> str | None:
    m = _VERSION_RX.get(tool, _ANY_VERSION).search(output)
    if not m:
        return None
    return next(g for g in m.groups() if g)


class _ToolBlock:
    """The lines of one ``@@ tool NAME`` block, read in one pass."""

    __slots__ = ("body", "line", "path", "rc_line", "tool")

    def __init__(self, tool: str, line: int) -> None:
        self.tool, self.line = tool, line
        self.rc_line: str | None = None  # the first "@@ rc N" line
        self.path: str | None = None  # from the first "@@ path P" line
        self.body: list[str] = []  # the version command's output (lines without "@@ ")


def parse_tool_versions(text: str) -> list[Fact]:
    blocks, seen_nccl, nccl = _tool_blocks(text)
    if not blocks:
        raise ParseError("tool-versions", "no '@@ tool' block in the output")
    out: list[Fact] = []
    for b in blocks:
        out += _tool_facts(b)
    present = [b.tool for b in blocks if b.path is not None]
    runtimes = [t for t in CONTAINER_TOOLS if t in present]
    out.append(
        Fact(
            "container",
            "runtimes",
            ",".join(runtimes) or None,
            reason="" if runtimes else "none of " + ", ".join(CONTAINER_TOOLS) + " found",
        )
    )
    if seen_nccl:
        m = _NCCL_SO.search(nccl or "")
        if m:
            out.append(Fact("nccl", "version", m.group(1)))
        else:
            why = (
                f"libnccl.so.2 resolves to {nccl} (no version in the name)"
                if nccl
                else "libnccl.so.2 not in the ldconfig cache"
            )
            out.append(Fact("nccl", "version", None, reason=why))
    return out


def _tool_blocks(text: str) -> tuple[list[_ToolBlock], bool, str | None]:
    """The ``@@ tool`` blocks, whether an ``@@ nccl`` line was printed, and what it names."""
    blocks: list[_ToolBlock] = []
    nccl: str | None = None
    seen_nccl = False
    block: _ToolBlock | None = None
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.startswith("@@ "):
            if block is not None:
                block.body.append(line)
            elif line.strip():
                raise ParseError(
                    "tool-versions", f"output before the first tool: {line[:80]!r}", line=lineno
                )
        elif line.startswith("@@ tool "):
            block = _ToolBlock(line[8:].strip(), lineno)
            blocks.append(block)
        elif line.startswith("@@ nccl"):
            seen_nccl = True
            nccl = line[7:].strip() or None
        elif block is not None:
            # the first "@@ rc" and "@@ path" lines count; other "@@" lines are not output
            if block.rc_line is None and line.startswith("@@ rc "):
                block.rc_line = line
            elif block.path is None and line.startswith("@@ path "):
                block.path = line[8:].strip()
        elif line.strip():
            raise ParseError(
                "tool-versions", f"output before the first tool: {line[:80]!r}", line=lineno
            )
    return blocks, seen_nccl, nccl


def _tool_facts(b: _ToolBlock) -> list[Fact]:
    """A tool's ``tool-path`` and ``tool-version`` (None, with the reason, when it is not
    installed, prints no version, or its version command failed)."""
    tool, lineno, rc_line, path = b.tool, b.line, b.rc_line, b.path
    if rc_line is None:
        raise ParseError(
            "tool-versions", f"{tool}: the block has no '@@ rc' line (cut off?)", line=lineno
        )
    if not _INT.fullmatch(rc_line[6:].strip()):
        raise ParseError("tool-versions", f"{tool}: {rc_line!r} has no exit code", line=lineno)
    rc = int(rc_line[6:].strip())
    body = "\n".join(b.body)
    if path is None:
        why = f"{tool}: not installed"
        return [
            Fact("tool-path", tool, None, reason=why),
            Fact("tool-version", tool, None, reason=why),
        ]
    out = [Fact("tool-path", tool, path)]
    if TOOLS.get(tool) is None and tool in TOOLS:
        out.append(
            Fact(
                "tool-version",
                tool,
                None,
                reason=f"{tool}: prints no version (installed at {path})",
            )
        )
        return out
    version = _version_of(tool, body)
    if version is not None and (rc == 0 or tool in _NONZERO_OK):
        out.append(Fact("tool-version", tool, version))
    else:
        tail = " | ".join([ln.strip() for ln in body.splitlines() if ln.strip()][-2:])
        out.append(
            Fact(
                "tool-version",
                tool,
                None,
                reason=f"{tool} {TOOLS.get(tool, '--version')}: exit {rc}: {tail or 'no output'}",
            )
        )
    return out


# ------------------------------------------------------------------------- dmesg

_XID = re.compile(r"NVRM: Xid \(([^)]*)\): (\d+)")


def parse_dmesg_xid(text: str) -> list[Fact]:
    lines = text.splitlines()
    codes = [int(m.group(2)) for ln in lines for m in [_XID.search(ln)] if m]
    return [
        Fact("kernel-log", "lines", len(lines), "count"),
        Fact("kernel-log", "xid_count", len(codes), "count"),
        Fact("kernel-log", "xid_codes", ",".join(str(c) for c in sorted(set(codes))) or "none"),
    ]


PARSER = [
    Parser(
        "node-files",
        parse_node_files,
        "CPU, memory, kernel, sysctl, THP, limits, DMI from /proc and /sys",
        emits="facts",
    ),
    Parser("lsblk-json", parse_lsblk, "disks from lsblk -J -b", emits="facts"),
    Parser(
        "findmnt-json",
        parse_findmnt,
        "the mount holding a path, from findmnt -J -b -T",
        emits="facts",
    ),
    Parser(
        "tool-versions",
        parse_tool_versions,
        "benchmark tool versions, container runtimes, NCCL",
        emits="facts",
    ),
    Parser("dmesg-xid", parse_dmesg_xid, "NVIDIA Xid events in the kernel log", emits="facts"),
]
