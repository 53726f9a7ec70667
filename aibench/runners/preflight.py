"""preflight runner: the node hardware and software checklist, on every node.

Per node it plans a handful of fact commands (argv lists; the only shell is the fixed
tool-version script of :mod:`aibench.parsers.sysinfo`, which contains no inventory value):

=============  ==========================================================  ================
label          argv                                                        parser
=============  ==========================================================  ================
files          ``grep -H '' /proc/cpuinfo /proc/meminfo ...`` (NODE_FILES)  node-files
disks          ``lsblk -J -b -d -o NAME,TYPE,MODEL,SIZE,REV,TRAN,ROTA``     lsblk-json
system-disk    ``lsblk -J -b -o NAME,TYPE,SIZE,TRAN,ROTA,MOUNTPOINT``       lsblk-tree
mount-N        ``findmnt -J -b -o ... -T DIR`` per inventory ``data_dirs``  findmnt-json
tools          ``sh -c TOOLS_SCRIPT`` (versions, container tools, NCCL)    tool-versions
gpu-q          ``nvidia-smi -q``                                            nvidia-smi-q
gpu-clocks     ``nvidia-smi --query-gpu=index,clocks_event_reasons.* ...``  nvidia-smi-query-gpu
gpu-topo       ``nvidia-smi topo -m``                                       nvidia-smi-topo
hca            ``ibstat``                                                   ibstat
hca-verbs      ``ibv_devinfo``                                              ibv-devinfo
dcgm           ``dcgmi diag -r LEVEL`` (``dcgm_level`` > 0)                 dcgmi-diag
kernel-log     ``dmesg``                                                    dmesg-xid
amd-*, npu-*   AMD Instinct (amd-smi, rocm-smi) and Huawei Ascend (npu-smi, hccn_tool,
hccn, ...      CANN files) commands: :mod:`aibench.preflight.vendor`
=============  ==========================================================  ================

``collect`` turns each output into Facts. A command that is not on the node (the local
executor's "X: command not found", exit 127 over SSH) gives the invocation's key facts with
value None and the reason "X: not installed": a fact, never a crash and never a pass.
``dmesg`` refused to an unprivileged user gives ``kernel-log.xid_count`` absent with dmesg's
words. A non-zero exit of any other command is a ToolFailure (the step fails, with what was
read before it in the partial facts), except ``grep`` (exit 2 when some files are missing:
those facts are absent) and ``dcgmi diag`` (non-zero when a test fails: that is a fact).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from typing import Annotated, ClassVar, Literal

from pydantic import Field, field_validator

from aibench import parsers
from aibench.config import Strict
from aibench.errors import ToolFailure, UserError
from aibench.inventory import Node
from aibench.model import Fact, FrozenDims
from aibench.parsers import Record
from aibench.parsers.sysinfo import NODE_FILES, TOOLS_SCRIPT
from aibench.preflight import vendor
from aibench.runners.base import Invocation, Output, ProcessSpec, Slot
from aibench.textio import tail
from aibench.traits import Consistent, Traits

CLOCK_FIELDS = "index,pci.bus_id,clocks_event_reasons.active,clocks_event_reasons.supported"
LSBLK_COLUMNS = "NAME,TYPE,MODEL,SIZE,REV,TRAN,ROTA"
LSBLK_TREE_COLUMNS = "NAME,TYPE,SIZE,TRAN,ROTA,MOUNTPOINT"
FINDMNT_COLUMNS = "TARGET,SOURCE,FSTYPE,SIZE,AVAIL"
_DIR = re.compile(r"^/[A-Za-z0-9_./+@=,-]*$")

# label prefix -> the facts that stand for the invocation when its command is absent
_KEY_FACTS: dict[str, tuple[tuple[str, str], ...]] = {
    "files": (("kernel", "release"),),
    "disks": (("disk", "count"),),
    "system-disk": (("system_disk", "size"),),
    "mount": (("mount", "target"),),
    "tools": (("tool-version", "fio"),),
    "gpu-q": (
        ("nvidia-smi", "driver_version"),
        ("nvidia-smi", "cuda_version"),
        ("nvidia-smi", "gpu_count"),
    ),
    "gpu-clocks": (("nvidia-smi", "clocks_event_reasons"),),
    "gpu-topo": (("nvidia-smi", "topo_link"),),
    "hca": (("ibstat", "hca_count"),),
    "hca-verbs": (("ibv_devinfo", "hca_count"),),
    "dcgm": (("dcgmi", "overall"),),
    "kernel-log": (("kernel-log", "xid_count"),),
}
_KEY_FACTS.update(vendor.KEY_FACTS)  # AMD Instinct and Huawei Ascend tools
# Commands whose non-zero exit still leaves a complete, meaningful output.
_NONZERO_OK = {"files", "dcgm"}


class PreflightOptions(Strict):
    """Options of a preflight step (suite ``options:``)."""

    gpu: bool = Field(True, description="collect GPU facts with nvidia-smi")
    infiniband: bool = Field(True, description="collect HCA facts with ibstat")
    dcgm_level: Annotated[int, Field(ge=0, le=4)] = Field(
        1, description="dcgmi diag -r LEVEL (1 quick, 2 medium, 3 long, 4 extra long); 0: skip"
    )
    kernel_log: bool = Field(True, description="count NVIDIA Xid events in dmesg")
    disks: bool = Field(
        True,
        description="list disks (lsblk), the system disk (the one holding /) and the mounts "
        "of data_dirs (findmnt)",
    )
    tools: bool = Field(True, description="benchmark tool versions, container runtimes, NCCL")
    timeout: Annotated[float, Field(gt=0)] = Field(60.0, description="seconds per fact command")
    # AMD Instinct and Huawei Ascend (aibench.preflight.vendor)
    amd: bool = Field(True, description="collect AMD GPU facts with amd-smi (rocm-smi)")
    rocm_smi: Literal["fallback", "always", "never"] = Field(
        "fallback", description="run rocm-smi -a: only where amd-smi is missing, always, never"
    )
    ascend: bool = Field(True, description="collect Ascend NPU facts: npu-smi, hccn_tool, CANN")
    npu_ids: list[Annotated[int, Field(ge=0, le=63)]] | None = Field(
        None, description="NPU ids to query per NPU; default 0 .. gpus.count-1, else 0-7"
    )
    ascend_root: str = Field(
        "/usr/local/Ascend", description="where the Ascend driver, firmware and CANN are installed"
    )
    tool_path: list[str] = Field(
        default_factory=list,
        description="directories searched first for the AMD and Ascend tools (absolute)",
    )

    @field_validator("ascend_root")
    @classmethod
    def _ascend_root(cls, v: str) -> str:
        if not _DIR.match(v):
            raise ValueError(f"ascend_root {v!r} must be an absolute path")
        return v

    @field_validator("tool_path")
    @classmethod
    def _tool_path(cls, v: list[str]) -> list[str]:
        for d in v:
            if not _DIR.match(d) or ":" in d:
                raise ValueError(f"tool_path entry {d!r} must be an absolute path without ':'")
        return v


_DCGM_TIMEOUT = {1: 300.0, 2: 900.0, 3: 3600.0, 4: 7200.0}


def _data_dirs(node: Node) -> list[str]:
    raw = node.facts.get("data_dirs") or []
    dirs = [raw] if isinstance(raw, str) else list(raw)
    for d in dirs:
        if not isinstance(d, str) or not _DIR.match(d):
            raise UserError(f"node {node.name}: data_dirs entry {d!r} is not an absolute path")
    return dirs


def kind_of(inv: Invocation) -> str:
    """The invocation's kind: its label without the node prefix (``gpu-q``, ``mount-0`` ...)."""
    return inv.label.rsplit(".", 1)[-1]


# The node facts the history compares across runs (a changed driver makes a regression a
# WARN that names it) and those that must be the same on every node (golden config).
PREFLIGHT_TRAITS = Traits(
    key_facts=(
        "kernel.release",
        "os.pretty_name",
        "cpu.model",
        "dmi.bios_version",
        "nvidia-smi.driver_version",
        "nvidia-smi.cuda_version",
        "nvidia-smi.vbios_version",
        "nccl.version",
        "ibstat.firmware_version",
        "dcgmi.version",
        "disk.firmware",
        "tool-version.",
        # AMD Instinct and Huawei Ascend (HCCL is versioned by CANN)
        "amd-smi.rocm_version",
        "amd-smi.driver_version",
        "amd-smi.vbios_version",
        "amd-smi.firmware_version",
        "rocm-smi.driver_version",
        "npu-smi.driver_version",
        "npu-smi.firmware_version",
        "ascend.cann_version",
        "ascend.driver_version",
        "ascend.firmware_version",
    ),
    consistency=(
        Consistent("driver_version", "nvidia-smi", "driver_version"),
        Consistent("cuda_version", "nvidia-smi", "cuda_version"),
        Consistent("gpu_count", "nvidia-smi", "gpu_count"),
        Consistent("gpu_model", "nvidia-smi", "product_name"),
        Consistent("vbios_version", "nvidia-smi", "vbios_version", "warn"),
        Consistent("hca_count", "ibstat", "hca_count"),
        Consistent("hca_firmware", "ibstat", "firmware_version", "warn"),
        Consistent("nccl_version", "nccl", "version"),
        Consistent("kernel", "kernel", "release", "warn"),
        Consistent("os", "os", "pretty_name", "warn"),
        Consistent("bios_version", "dmi", "bios_version", "warn"),
        Consistent("cpu_model", "cpu", "model", "warn"),
        Consistent("dcgm_version", "dcgmi", "version", "warn"),
        # AMD Instinct and Huawei Ascend (aibench.preflight.vendor)
        Consistent("rocm_version", "amd-smi", "rocm_version"),
        Consistent("amdgpu_driver_version", "amd-smi", "driver_version"),
        Consistent("amd_gpu_count", "amd-smi", "gpu_count"),
        Consistent("amd_gpu_model", "amd-smi", "product_name"),
        Consistent("amd_vbios_version", "amd-smi", "vbios_version", "warn"),
        Consistent("amdgpu_firmware", "amd-smi", "firmware_version", "warn"),
        Consistent("rocm_smi_driver_version", "rocm-smi", "driver_version"),
        Consistent("npu_driver_version", "npu-smi", "driver_version"),
        Consistent("npu_count", "npu-smi", "npu_count"),
        Consistent("npu_model", "npu-smi", "product_name"),
        Consistent("npu_firmware", "npu-smi", "firmware_version", "warn"),
        Consistent("cann_version", "ascend", "cann_version"),
    ),
)


class PreflightRunner:
    traits: ClassVar[Traits] = PREFLIGHT_TRAITS
    name: ClassVar[str] = "preflight"
    tool: ClassVar[str] = "preflight"
    default_placement: ClassVar[str] = "each"
    Options: ClassVar[type[Strict]] = PreflightOptions

    def expected_seconds(self, o: PreflightOptions) -> tuple[float, str]:
        return 5.0, "fact commands: a few seconds (each at most its timeout)"

    def commands(
        self, node: Node, o: PreflightOptions
    ) -> list[tuple[str, tuple[str, ...], str, float]]:
        """(kind, argv, parser, timeout) for one node."""
        t = o.timeout
        cmds: list[tuple[str, tuple[str, ...], str, float]] = [
            ("files", ("grep", "-H", "", *NODE_FILES), "node-files", t),
        ]
        if o.disks:
            cmds.append(
                ("disks", ("lsblk", "-J", "-b", "-d", "-o", LSBLK_COLUMNS), "lsblk-json", t)
            )
            tree = ("lsblk", "-J", "-b", "-o", LSBLK_TREE_COLUMNS)
            cmds.append(("system-disk", tree, "lsblk-tree", t))
            for i, d in enumerate(_data_dirs(node)):
                argv = ("findmnt", "-J", "-b", "-o", FINDMNT_COLUMNS, "-T", d)
                cmds.append((f"mount-{i}", argv, "findmnt-json", t))
        if o.tools:
            cmds.append(("tools", ("sh", "-c", TOOLS_SCRIPT), "tool-versions", t + 120.0))
        if o.gpu:
            cmds += [
                ("gpu-q", ("nvidia-smi", "-q"), "nvidia-smi-q", t),
                (
                    "gpu-clocks",
                    ("nvidia-smi", f"--query-gpu={CLOCK_FIELDS}", "--format=csv"),
                    "nvidia-smi-query-gpu",
                    t,
                ),
                ("gpu-topo", ("nvidia-smi", "topo", "-m"), "nvidia-smi-topo", t),
            ]
            if o.dcgm_level:
                cmds.append(
                    (
                        "dcgm",
                        ("dcgmi", "diag", "-r", str(o.dcgm_level)),
                        "dcgmi-diag",
                        _DCGM_TIMEOUT[o.dcgm_level],
                    )
                )
        if o.infiniband:
            cmds.append(("hca", ("ibstat",), "ibstat", t))
            cmds.append(("hca-verbs", ("ibv_devinfo",), "ibv-devinfo", t))
        if o.kernel_log:
            cmds.append(("kernel-log", ("dmesg",), "dmesg-xid", t))
        cmds += vendor.commands(
            node,
            amd=o.amd,
            ascend=o.ascend,
            rocm_smi=o.rocm_smi,
            tool_path=o.tool_path,
            npus=o.npu_ids,
            ascend_root=o.ascend_root,
            timeout=t,
        )
        return cmds

    def invocations(
        self, step: str, options: PreflightOptions, group: Sequence[Node], slot: Slot
    ) -> list[Invocation]:
        out = []
        for node in group:
            for kind, argv, parser, timeout in self.commands(node, options):
                out.append(
                    Invocation(
                        step=step,
                        tool=self.tool,
                        nodes=(node.name,),
                        label=f"{node.name}.{kind}",
                        repeat=slot.repeat,
                        round=slot.round,
                        parser=parser,
                        client=ProcessSpec(node.name, argv, timeout=timeout),
                    )
                )
        return out

    def collect(self, inv: Invocation, out: Output) -> list[Record]:
        kind = kind_of(inv)
        prefix = kind.split("-")[0] if kind.startswith("mount-") else kind
        argv = inv.client.argv
        program = vendor.program(argv)
        missing = out.exit_code == 127 or (out.exit_code is None and "not found" in out.reason)
        if missing:
            return absent(prefix, f"{program}: not installed", argv)
        if out.exit_code is None:
            return absent(prefix, out.reason or f"{program}: did not finish", argv)
        if out.exit_code == 0 and out.stdout.startswith("@@ skipped: "):  # rocm-smi fallback
            why = out.stdout.split("\n", 1)[0].removeprefix("@@ skipped: ")
            return absent(prefix, f"{program}: not run, {why}", argv)
        if kind == "kernel-log" and out.exit_code != 0:
            why = tail(out.stderr, 2) or f"exit code {out.exit_code}"
            return absent(prefix, f"dmesg: {why.removeprefix('dmesg: ')}", argv)
        if kind.startswith("mount-") and out.exit_code != 0:
            why = tail(out.stderr, 2) or f"exit code {out.exit_code}"
            return absent(prefix, f"findmnt -T {argv[-1]}: {why}", argv)
        merged = kind in ("files", "hca-verbs")
        text = out.stdout + ("\n" + out.stderr if merged else "")
        try:
            records = list(parsers.parse(inv.parser, text))
        except ToolFailure as exc:
            if out.exit_code != 0 and out.stderr.strip() and exc.reason not in out.stderr:
                raise ToolFailure(
                    exc.tool,
                    f"{exc.reason}; exit code {out.exit_code}: {tail(out.stderr, 2)}",
                    exc.line,
                    exc.partial,
                ) from None
            raise
        if out.exit_code != 0 and prefix not in _NONZERO_OK and not _no_devices(kind, records):
            why = tail(out.stderr, 2) or tail(out.stdout, 2) or "no output"
            raise ToolFailure(program, f"exit code {out.exit_code}: {why}", partial=list(records))
        if kind.startswith("mount-"):
            records = [_with_path(r, argv[-1]) for r in records]
        if kind in ("hca", "hca-verbs"):
            records = with_link_layer(records)
        return records

    def version_argv(self) -> tuple[str, ...] | None:
        return None  # versions are facts of the step itself (the "tools" invocation)

    def parse_version(self, text: str) -> str:
        return ""


def absent(prefix: str, reason: str, argv: Sequence[str] = ()) -> list[Record]:
    """The key facts of one kind of invocation, absent for ``reason``."""
    dims: dict[str, str] = {"path": argv[-1]} if prefix == "mount" and argv else {}
    return [
        Fact(source, name, None, dims=FrozenDims(dims), reason=reason)
        for source, name in _KEY_FACTS[prefix]
    ]


def _no_devices(kind: str, records: Sequence[Record]) -> bool:
    """ibv_devinfo exits non-zero when it finds no device: that is the fact hca_count 0."""
    return kind == "hca-verbs" and [getattr(r, "value", None) for r in records] == [0]


def with_link_layer(records: Sequence[Record]) -> list[Record]:
    """Per-port HCA facts get the port's link layer as a dim (``link_layer: InfiniBand``).

    ibstat and ibv_devinfo print the link layer as one more line of the port, so the
    parsers give it as a fact of its own; a spec selects the InfiniBand ports of a node
    (``fact: {source: ibstat, name: state, dims: {link_layer: InfiniBand}}``) through
    this dim, and an unused Ethernet port of the same adapter is not judged by it.
    """
    layer: dict[tuple[object, object], str] = {}
    for r in records:
        if isinstance(r, Fact) and r.name == "link_layer" and isinstance(r.value, str):
            layer[(r.dims.get("hca"), r.dims.get("port"))] = r.value
    out: list[Record] = []
    for r in records:
        if isinstance(r, Fact) and "port" in r.dims and "link_layer" not in r.dims:
            ll = layer.get((r.dims.get("hca"), r.dims.get("port")))
            if ll is not None:
                r = dataclasses.replace(r, dims=FrozenDims({**r.dims.to_dict(), "link_layer": ll}))
        out.append(r)
    return out


def _with_path(r: Record, path: str) -> Record:
    if isinstance(r, Fact):
        return dataclasses.replace(r, dims=FrozenDims({**r.dims.to_dict(), "path": path}))
    return r


RUNNER = PreflightRunner()
