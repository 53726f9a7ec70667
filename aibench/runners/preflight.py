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

With ``batch: true`` (the acceptance and nightly suites) a node's commands run in one
process, so one SSH session a node instead of one per command (21 per node with every
vendor tool, 21,504 sessions for 1024 nodes): a fixed ``sh`` driver (:data:`BATCH_SCRIPT`)
takes every command as arguments, runs each in turn under ``timeout`` and frames its
stdout, stderr and exit status; ``collect`` reads each frame as if the command had run on
its own, keeps its output beside the batch's and records its argv and exit code among the
step's processes. A command that failed fails the node's step, naming it, with the facts
of every command kept.

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
from aibench.errors import ParseError, ToolFailure, UserError
from aibench.inventory import Node
from aibench.model import Fact, FrozenDims, Measurement, Note, ProcessRecord
from aibench.parsers import Record
from aibench.parsers.sysinfo import NODE_FILES, TOOLS_SCRIPT
from aibench.preflight import vendor
from aibench.runners.base import Invocation, Output, ProcessSpec, Slot
from aibench.textio import tail
from aibench.traits import Consistent, Declares, Traits

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
    batch: bool = Field(
        False,
        description="every fact command of a node in one process (one SSH session a node "
        "instead of one per command): a fixed driver runs each in turn and frames its "
        "output; each command is still recorded with its own exit code, stdout and stderr",
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


Command = tuple[str, tuple[str, ...], str, float]  # (kind, argv, parser, timeout)


def disk_commands(node: Node, t: float) -> list[Command]:
    """The node's disks (lsblk), the tree under its system disk, and the mount of each of
    its data directories (findmnt)."""
    cmds: list[Command] = [
        ("disks", ("lsblk", "-J", "-b", "-d", "-o", LSBLK_COLUMNS), "lsblk-json", t),
        ("system-disk", ("lsblk", "-J", "-b", "-o", LSBLK_TREE_COLUMNS), "lsblk-tree", t),
    ]
    for i, d in enumerate(_data_dirs(node)):
        argv = ("findmnt", "-J", "-b", "-o", FINDMNT_COLUMNS, "-T", d)
        cmds.append((f"mount-{i}", argv, "findmnt-json", t))
    return cmds


def nvidia_commands(o: PreflightOptions) -> list[Command]:
    """The NVIDIA GPUs: nvidia-smi's report, clocks and topology, and DCGM's diagnostic at
    the level asked for."""
    t = o.timeout
    cmds: list[Command] = [
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
        argv = ("dcgmi", "diag", "-r", str(o.dcgm_level))
        cmds.append(("dcgm", argv, "dcgmi-diag", _DCGM_TIMEOUT[o.dcgm_level]))
    return cmds


def kind_of(inv: Invocation) -> str:
    """The invocation's kind: its label without the node prefix (``gpu-q``, ``mount-0`` ...)."""
    return inv.label.rsplit(".", 1)[-1]


# The node facts the history compares across runs (a changed driver makes a regression a
# WARN that names it) and those that must be the same on every node (golden config).
PREFLIGHT_TRAITS = Traits(
    # whichever of these tools a node has answers the inventory's gpus.count, hcas and
    # data_dirs (aibench.preflight.expected): NVIDIA, AMD (amd-smi, rocm-smi), Ascend
    declares=(
        Declares("gpu_count", "nvidia-smi", "gpu_count"),
        Declares("gpu_count", "amd-smi", "gpu_count"),
        Declares("gpu_count", "rocm-smi", "gpu_count"),
        Declares("gpu_count", "npu-smi", "npu_count"),
        Declares("hca_count", "ibstat", "hca_count"),
        Declares("hca_count", "ibv_devinfo", "hca_count"),
        Declares("hca_state", "ibstat", "state", active="Active"),
        Declares("hca_state", "ibv_devinfo", "state", active="PORT_ACTIVE"),
        Declares("hca_rate", "ibstat", "rate"),
        Declares("data_dir", "mount", "target"),
    ),
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

    def commands(self, node: Node, o: PreflightOptions) -> list[Command]:
        """(kind, argv, parser, timeout) for one node."""
        t = o.timeout
        cmds: list[Command] = [
            ("files", ("grep", "-H", "", *NODE_FILES), "node-files", t),
        ]
        if o.disks:
            cmds += disk_commands(node, t)
        if o.tools:
            cmds.append(("tools", ("sh", "-c", TOOLS_SCRIPT), "tool-versions", t + 120.0))
        if o.gpu:
            cmds += nvidia_commands(o)
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
        if options.batch:
            return [self._batch(step, options, node, slot) for node in group]
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

    def _batch(self, step: str, o: PreflightOptions, node: Node, slot: Slot) -> Invocation:
        """One invocation running every fact command of ``node`` through the driver."""
        cmds = self.commands(node, o)
        return Invocation(
            step=step,
            tool=self.tool,
            nodes=(node.name,),
            label=f"{node.name}.{BATCH_KIND}",
            repeat=slot.repeat,
            round=slot.round,
            parser=BATCH_KIND,
            client=ProcessSpec(
                node.name,
                batch_argv(cmds, batch_mark(step, node.name, str(slot.repeat))),
                timeout=sum(t + BATCH_KILL_S for *_x, t in cmds),
            ),
        )

    def collect(self, inv: Invocation, out: Output) -> list[Record]:
        if kind_of(inv) == BATCH_KIND:
            return self._collect_batch(inv, out)
        return self._collect_one(inv, out)

    def _collect_batch(self, inv: Invocation, out: Output) -> list[Record]:
        """Each command of a batch collected as if it had run on its own (its output
        kept beside the batch's as ``<node>.<kind>.r<repeat>.stdout``/``.stderr``, its
        argv and exit code among the step's processes); a command that failed fails the
        step, naming it, with every command's records kept."""
        node = inv.nodes[0]
        frames = unframe(out.stdout, out.stderr, inv.client.argv[4])
        records: list[Record] = []
        failed: list[str] = []
        for c in framed(inv.client.argv):
            one = dataclasses.replace(
                inv,
                label=f"{node}.{c.kind}",
                parser=c.parser,
                client=ProcessSpec(node, c.argv, timeout=c.timeout),
            )
            sub = _frame_output(frames.get(c.kind), c, out)
            for suffix, text in (("stdout", sub.stdout), ("stderr", sub.stderr)):
                path = out.raw_dir / f"{node}.{c.kind}.r{inv.repeat}.{suffix}"
                path.write_text(text, encoding="utf-8")
            out.processes.append(ProcessRecord(node, c.argv, exit_code=sub.exit_code))
            try:
                records += self._collect_one(one, sub)
            except ToolFailure as exc:
                records += [r for r in exc.partial if isinstance(r, Measurement | Fact | Note)]
                failed.append(f"{c.kind}: {exc.reason}")
            except ParseError as exc:
                failed.append(f"{c.kind}: {exc}")
        if failed:
            raise ToolFailure("preflight", "; ".join(failed), partial=list[object](records))
        return records

    def _collect_one(self, inv: Invocation, out: Output) -> list[Record]:
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


# --------------------------------------------------------------------------- batches

BATCH_KIND = "facts"  # the label of a node's batch: <node>.facts
BATCH_KILL_S = 5.0  # timeout -k: a command that ignores TERM is killed this much later
# The driver of a batch. Its first argument is the frame's marker; then, per command: the
# kind, the parser (not read here), the timeout in seconds, the number of argv elements,
# and the argv. It runs each command in turn (stdin from /dev/null, under coreutils
# timeout) and frames what it printed: on stdout "MARK out KIND", the command's stdout,
# "MARK end KIND STATUS"; on stderr "MARK err KIND", its stderr, "MARK end KIND", each
# marker on a line of its own. It needs nothing but sh and timeout. No inventory value
# is ever part of this text: they are its arguments.
BATCH_SCRIPT = (
    'm=$1; shift; printf "%s\\n" "$m"; printf "%s\\n" "$m" >&2; '
    'while [ "$#" -gt 0 ]; do k=$1; s=$3; n=$4; shift 4; '
    'printf "%s out %s\\n" "$m" "$k"; printf "%s err %s\\n" "$m" "$k" >&2; '
    '( i=0; for a do if [ "$i" -eq 0 ]; then set --; fi; '
    'if [ "$i" -lt "$n" ]; then set -- "$@" "$a"; fi; i=$((i + 1)); done; '
    'exec timeout -k 5 "$s" "$@" ) </dev/null; r=$?; '
    'printf "\\n%s end %s %s\\n" "$m" "$k" "$r"; printf "\\n%s end %s\\n" "$m" "$k" >&2; '
    'shift "$n"; done'
)


@dataclasses.dataclass(frozen=True)
class Framed:
    """One command of a batch, as its driver was given it."""

    kind: str
    parser: str
    timeout: float
    argv: tuple[str, ...]


def batch_argv(
    cmds: Sequence[tuple[str, tuple[str, ...], str, float]], mark: str
) -> tuple[str, ...]:
    """The driver's argv for ``cmds`` (kind, argv, parser, timeout) framed by ``mark``:
    every value an argument of its own."""
    args = ["sh", "-c", BATCH_SCRIPT, "aibench-preflight", mark]
    for kind, argv, parser, timeout in cmds:
        args += [kind, parser, f"{timeout:g}", str(len(argv)), *argv]
    return tuple(args)


def batch_mark(*parts: str) -> str:
    """A marker no command prints but by chance: a hash of the batch's place in the plan."""
    import hashlib

    return "@@aibench-batch-" + hashlib.sha256("\0".join(parts).encode()).hexdigest()[:20]


def framed(argv: Sequence[str]) -> list[Framed]:
    """The commands of a driver's argv (:func:`batch_argv` read back)."""
    rest = list(argv[5:])
    out = []
    while rest:
        kind, parser, timeout, n = rest[:4]
        out.append(Framed(kind, parser, float(timeout), tuple(rest[4 : 4 + int(n)])))
        rest = rest[4 + int(n) :]
    return out


def unframe(stdout: str, stderr: str, mark: str) -> dict[str, tuple[str, str, int | None]]:
    """kind -> (stdout, stderr, exit status) of each command whose frame the driver
    finished (a command cut off by the end of the batch is left out)."""
    errs: dict[str, str] = {}
    for chunk in stderr.split(f"{mark} err ")[1:]:
        kind, _, rest = chunk.partition("\n")
        text, sep, _ = rest.partition(f"\n{mark} end {kind}\n")
        if sep:
            errs[kind] = text
    out: dict[str, tuple[str, str, int | None]] = {}
    for chunk in stdout.split(f"{mark} out ")[1:]:
        kind, _, rest = chunk.partition("\n")
        text, sep, end = rest.partition(f"\n{mark} end {kind} ")
        status = end.split("\n", 1)[0].strip()
        if sep and status.isdigit():
            out[kind] = (text, errs.get(kind, ""), int(status))
    return out


def _frame_output(frame: tuple[str, str, int | None] | None, c: Framed, batch: Output) -> Output:
    """What one command of a batch left, as an Output of its own: a status 124 or 137
    (coreutils timeout) is a command that did not finish in its time; a command with no
    frame never ran or was cut off with the batch."""
    if frame is None:
        why = batch.reason or batch.failure()
        return Output("", "", None, batch.raw_dir, f"did not run to its end in the batch ({why})")
    stdout, stderr, status = frame
    if status in (124, 137):
        return Output(stdout, stderr, None, batch.raw_dir, f"did not finish in {c.timeout:g} s")
    return Output(stdout, stderr, status, batch.raw_dir)


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
